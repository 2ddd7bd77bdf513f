import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Run } from '../../shared/run';
import { jsonFixture } from '../../test/fixtures';
import { parseOverviewRun, parseRun } from './parseRun';
import { RunStore, type StoreChange } from './runStore';

const base = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));

function run(id: string, qualname: string, created: string): Run {
  return { ...base, run_id: id, created, target: { ...base.target, qualname } };
}

describe('RunStore', () => {
  it('keeps the latest run of each function of each document', () => {
    const store = new RunStore();
    store.add('file:///m.py', run('r1', 'f', '2026-01-01T00:00:01'));
    store.add('file:///m.py', run('r2', 'f', '2026-01-01T00:00:02'));
    store.add('file:///m.py', run('r3', 'g', '2026-01-01T00:00:03'));
    store.add('file:///n.py', run('r4', 'f', '2026-01-01T00:00:04'));
    assert.deepEqual(
      store
        .forUri('file:///m.py')
        .map((e) => e.run.run_id)
        .sort(),
      ['r2', 'r3'],
    );
    assert.equal(store.latestFor('file:///n.py', 'f')?.run.run_id, 'r4');
    assert.ok(store.has('r1'), 'older runs stay reachable by id');
    assert.equal(store.newest()?.run.run_id, 'r4');
    assert.equal(store.newest((e) => e.uri === 'file:///m.py')?.run.run_id, 'r3');
  });

  it("a program overview is kept by id but does not take its step function's place", () => {
    const store = new RunStore();
    store.add('file:///m.py', run('r1', 'step', '2026-01-01T00:00:01'));
    const overview = parseOverviewRun((jsonFixture('overview.expected.json') as { run: unknown }).run);
    store.add('file:///m.py', { ...overview, target: { ...overview.target, qualname: 'step' }, created: '2026-01-01T00:00:02' });
    assert.equal(store.latestFor('file:///m.py', 'step')?.run.run_id, 'r1');
    assert.ok(store.has(overview.run_id));
  });

  it('an older run fetched later does not replace the newest one', () => {
    const store = new RunStore();
    store.add('file:///m.py', run('new', 'f', '2026-02-01T00:00:00'));
    store.add('file:///m.py', run('old', 'f', '2026-01-01T00:00:00'));
    assert.equal(store.latestFor('file:///m.py', 'f')?.run.run_id, 'new');
    assert.ok(store.has('old'));
  });

  it('clears one document or all, and tells listeners', () => {
    const store = new RunStore();
    const seen: StoreChange['kind'][] = [];
    const sub = store.onDidChange((c) => seen.push(c.kind));
    store.add('file:///m.py', run('r1', 'f', '1'));
    store.add('file:///n.py', run('r2', 'f', '2'));
    store.clear('file:///m.py');
    assert.deepEqual(store.forUri('file:///m.py'), []);
    assert.equal(store.forUri('file:///n.py').length, 1);
    store.clear();
    assert.deepEqual(store.uris, []);
    sub.dispose();
    store.add('file:///m.py', run('r3', 'f', '3'));
    assert.deepEqual(seen, ['added', 'added', 'cleared', 'cleared']);
  });

  it('is bounded, never evicting a run on show', () => {
    const store = new RunStore(5);
    for (let i = 0; i < 20; i++) {
      store.add('file:///m.py', run(`r${i}`, 'f', String(i).padStart(3, '0')));
    }
    store.add('file:///m.py', run('g', 'g', '999'));
    assert.ok(store.has('r19'));
    assert.ok(store.has('g'));
    assert.ok(!store.has('r0'));
  });
});
