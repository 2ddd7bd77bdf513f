import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { frameLocation } from './frameLocation';

describe('frameLocation: a speedscope frame’s file and line from what speedscope prints', () => {
  it('reads a tooltip row and a stack line, with or without a column', () => {
    assert.deepEqual(frameLocation('/work/ws/rmsnorm.py:30'), { file: '/work/ws/rmsnorm.py', line: 30 });
    assert.deepEqual(frameLocation('> L30 return x_norm * w (/work/ws/rmsnorm.py:30)'), { file: '/work/ws/rmsnorm.py', line: 30 });
    assert.deepEqual(frameLocation('fn (/a/b.py:7:3)'), { file: '/a/b.py', line: 7 });
    assert.deepEqual(frameLocation('C:\\ws\\model.py:12'), { file: 'C:\\ws\\model.py', line: 12 });
  });

  it('names nothing where there is no line: an op, a time, line 0', () => {
    assert.equal(frameLocation('aten::mul'), undefined);
    assert.equal(frameLocation('12.5ms aten::mul'), undefined);
    assert.equal(frameLocation('/a/b.py:0'), undefined);
    assert.equal(frameLocation(''), undefined);
  });
});
