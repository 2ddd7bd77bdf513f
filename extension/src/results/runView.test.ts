import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonFixture } from '../../test/fixtures';
import { parseRun } from '../runs/parseRun';
import { OPS_PER_LINE, trimmedForView } from './runView';

const run = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));

describe('what the results page gets', () => {
  it('lines keep only their top ops, largest first; totals and the op table are untouched', () => {
    const many = {
      ...run,
      lines: run.lines.map((l) => ({
        ...l,
        ops: Array.from({ length: 12 }, (_, i) => ({ name: `op${i}`, calls: 1, self_cpu_us: i, self_device_us: i, pct: 0, device_spread: { median: 0, min: 0, max: 0, ci_low: 0, ci_high: 0 }, category: '', ranks: null })),
      })),
    };
    const trimmed = trimmedForView(many);
    assert.ok(trimmed.lines.every((l) => l.ops.length === OPS_PER_LINE));
    assert.deepEqual(
      trimmed.lines[0]?.ops.map((o) => o.name),
      ['op11', 'op10', 'op9', 'op8', 'op7'],
    );
    assert.equal(trimmed.ops, many.ops);
    assert.equal(trimmed.totals, many.totals);
    assert.equal(many.lines[0]?.ops.length, 12, 'the stored run is not changed');
  });
});
