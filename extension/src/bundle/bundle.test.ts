import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUNDLED_LIBS_ENV, bundleOf, installArgs, pipFailure, serverEnvironment } from './bundle';

describe('the bundled OpLens', () => {
  it('is there where the extension holds bundled/libs/oplens', () => {
    const seen: string[] = [];
    const b = bundleOf('/ext', '0.1.0', (p) => (seen.push(p), true));
    assert.deepEqual(b, { libs: '/ext/bundled/libs', wheels: '/ext/bundled/wheels', version: '0.1.0' });
    assert.deepEqual(seen, ['/ext/bundled/libs/oplens/__init__.py']);
    assert.equal(bundleOf('/src/checkout', '0.1.0', () => false), undefined);
  });

  it('goes first on the server PYTHONPATH and is named for the worker', () => {
    const env = serverEnvironment({ PATH: '/bin', PYTHONPATH: '/mine:/ext/bundled/libs' }, '/ext/bundled/libs', ':');
    assert.equal(env.PYTHONPATH, '/ext/bundled/libs:/mine');
    assert.equal(env[BUNDLED_LIBS_ENV], '/ext/bundled/libs');
    assert.equal(env.PATH, '/bin');
    assert.equal(serverEnvironment({}, '/b', ':').PYTHONPATH, '/b');
  });

  it('from the environment: PYTHONPATH as the user has it, no stale bundle named', () => {
    const env = serverEnvironment({ PYTHONPATH: '/mine', [BUNDLED_LIBS_ENV]: '/old' }, undefined, ':');
    assert.equal(env.PYTHONPATH, '/mine');
    assert.equal(BUNDLED_LIBS_ENV in env, false);
  });

  it('installs OpLens from its wheels, with no registry', () => {
    assert.deepEqual(installArgs({ wheels: '/ext/bundled/wheels', version: '0.1.0' }), [
      '-m', 'pip', 'install', '--no-index', '--find-links', '/ext/bundled/wheels', 'oplens==0.1.0',
    ]);
  });

  it("says why pip failed in pip's words", () => {
    assert.equal(pipFailure('/usr/bin/python3: No module named pip\n'), 'this interpreter has no pip (python -m ensurepip adds it)');
    const out = 'Looking in links: /w\nERROR: Could not find a version that satisfies the requirement torch>=2.4\nERROR: No matching distribution found for torch>=2.4\n';
    assert.equal(pipFailure(out), 'No matching distribution found for torch>=2.4');
    assert.equal(pipFailure(''), 'no output');
  });
});
