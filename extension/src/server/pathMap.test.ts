import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePathMappings, PathMap, PathMapError, resolveArtifact } from './pathMap';

describe('PathMap', () => {
  const map = new PathMap([
    { local: '/Users/me/proj', host: '/home/ubuntu/proj' },
    { local: '/Users/me/proj/vendor', host: '/opt/vendor' },
  ]);

  it('maps both ways', () => {
    assert.equal(map.toHost('/Users/me/proj/model.py'), '/home/ubuntu/proj/model.py');
    assert.equal(map.toLocal('/home/ubuntu/proj/.oplens/runs/r1/trace.json'), '/Users/me/proj/.oplens/runs/r1/trace.json');
  });

  it('lets the longest (nested) prefix win', () => {
    assert.equal(map.toHost('/Users/me/proj/vendor/lib.py'), '/opt/vendor/lib.py');
    assert.equal(map.toLocal('/opt/vendor/lib.py'), '/Users/me/proj/vendor/lib.py');
  });

  it('matches only whole path segments', () => {
    assert.equal(map.toHost('/Users/me/project/x.py'), '/Users/me/project/x.py');
    assert.equal(map.toLocal('/home/ubuntu/proj2/x.py'), '/home/ubuntu/proj2/x.py');
  });

  it('maps the folder itself', () => {
    assert.equal(map.toHost('/Users/me/proj'), '/home/ubuntu/proj');
  });

  it('passes unmapped paths through, and is empty without mappings', () => {
    assert.equal(map.toHost('/tmp/x.py'), '/tmp/x.py');
    assert.ok(new PathMap().empty);
    assert.equal(new PathMap().toLocal('/a/b'), '/a/b');
  });

  it('handles a root mapping', () => {
    const root = new PathMap([{ local: '/', host: '/mnt/host' }]);
    assert.equal(root.toHost('/a/b.py'), '/mnt/host/a/b.py');
    assert.equal(root.toLocal('/mnt/host/a/b.py'), '/a/b.py');
  });
});

describe('parsePathMappings', () => {
  it('reads the setting and trims trailing slashes', () => {
    assert.deepEqual(parsePathMappings([{ local: '/a/', host: '/b//' }]), [{ local: '/a', host: '/b' }]);
    assert.deepEqual(parsePathMappings(undefined), []);
    assert.deepEqual(parsePathMappings([]), []);
  });

  it('names the bad entry', () => {
    assert.throws(() => parsePathMappings({ local: '/a' }), PathMapError);
    assert.throws(() => parsePathMappings([{ local: '/a', host: '/b' }, { local: '/c' }]), /pathMappings\[1\]/);
    assert.throws(() => parsePathMappings([{ local: ' ', host: '/b' }]), /empty/);
  });
});

describe('resolveArtifact', () => {
  it('joins relative artifacts to the run directory', () => {
    assert.equal(resolveArtifact('/ws/.oplens/runs/r1', 'trace.json'), '/ws/.oplens/runs/r1/trace.json');
    assert.equal(resolveArtifact('/ws/.oplens/runs/r1/', './neuron/x.ntff'), '/ws/.oplens/runs/r1/neuron/x.ntff');
  });

  it('keeps absolute ones and empty ones', () => {
    assert.equal(resolveArtifact('/ws/r', '/abs/trace.json'), '/abs/trace.json');
    assert.equal(resolveArtifact('/ws/r', ''), '');
  });
});
