import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { markerIteration, markerLine } from '../../shared/markers';
import { jsonFixture } from '../../test/fixtures';
import { layoutTrace, traceEvents } from './trace';

describe('layoutTrace on a real torch.profiler trace', () => {
  const raw = jsonFixture<{ traceEvents: { ph: string; name: string }[] }>('rmsnorm_naive.cpu.trace.json');
  const model = layoutTrace(raw, 'rmsnorm_naive');

  it('keeps every complete event', () => {
    assert.equal(model.start.length, raw.traceEvents.filter((e) => e.ph === 'X').length);
    assert.equal(model.dropped, 0);
  });

  it('names lanes from the metadata', () => {
    assert.ok(model.lanes.length >= 1);
    assert.match(model.lanes[0]?.name ?? '', /python3 \(\d+\) · thread \d+/);
  });

  it('nests: iterations hold lines, lines hold aten ops', () => {
    const depthOf = (pred: (name: string) => boolean): Set<number> => {
      const out = new Set<number>();
      model.name.forEach((n, i) => {
        if (pred(model.names[n] ?? '')) {
          out.add(model.depth[i] ?? -1);
        }
      });
      return out;
    };
    const iter = depthOf((n) => markerIteration(n) !== undefined);
    const line = depthOf((n) => markerLine(n) !== undefined);
    assert.equal(Math.max(...iter) < Math.min(...line), true, 'iterations above lines');
    const mulDepths = depthOf((n) => n === 'aten::mul');
    assert.ok(Math.min(...mulDepths) > Math.min(...line), 'ops below lines');
  });

  it('times start at zero and the span covers every event', () => {
    assert.equal(Math.min(...model.start), 0);
    model.start.forEach((s, i) => assert.ok(s + (model.dur[i] ?? 0) <= model.span + 1e-9));
  });
});

describe('layoutTrace on synthetic events', () => {
  it('depth from nesting; siblings share a depth', () => {
    const m = layoutTrace(
      [
        { ph: 'X', name: 'outer', ts: 100, dur: 50, pid: 1, tid: 1 },
        { ph: 'X', name: 'a', ts: 110, dur: 10, pid: 1, tid: 1 },
        { ph: 'X', name: 'b', ts: 120, dur: 10, pid: 1, tid: 1 },
        { ph: 'X', name: 'b.inner', ts: 121, dur: 2, pid: 1, tid: 1 },
        { ph: 'X', name: 'other thread', ts: 100, dur: 5, pid: 1, tid: 2 },
      ],
      't',
    );
    const depth = (name: string): number | undefined => m.depth[m.name.findIndex((n) => m.names[n] === name)];
    assert.equal(depth('outer'), 0);
    assert.equal(depth('a'), 1);
    assert.equal(depth('b'), 1);
    assert.equal(depth('b.inner'), 2);
    assert.equal(depth('other thread'), 0);
    assert.equal(m.lanes.length, 2);
    assert.equal(m.lanes[0]?.depth, 3);
    assert.equal(m.span, 50);
  });

  it('begin/end pairs become complete events; instants and counters are left out', () => {
    const m = layoutTrace(
      {
        traceEvents: [
          { ph: 'B', name: 'step', ts: 0, pid: 'p', tid: 't' },
          { ph: 'i', name: 'mark', ts: 1, pid: 'p', tid: 't' },
          { ph: 'C', name: 'mem', ts: 2, pid: 'p', args: { v: 1 } },
          { ph: 'E', ts: 8, pid: 'p', tid: 't' },
        ],
      },
      't',
    );
    assert.equal(m.start.length, 1);
    assert.equal(m.names[m.name[0] ?? -1], 'step');
    assert.equal(m.dur[0], 8);
  });

  it('caps large traces, keeping the longest events', () => {
    const events = Array.from({ length: 100 }, (_, i) => ({ ph: 'X', name: `e${i}`, ts: i * 10, dur: i, pid: 1, tid: 1 }));
    const m = layoutTrace(events, 't', 10);
    assert.equal(m.start.length, 10);
    assert.equal(m.dropped, 90);
    assert.equal(Math.min(...m.dur), 90);
  });

  it('refuses what is not a trace', () => {
    assert.throws(() => traceEvents({ foo: 1 }), /not a Chrome trace/);
  });

  it('marker names', () => {
    assert.equal(markerLine('oplens.line:25'), 25);
    assert.equal(markerLine('aten::mul'), undefined);
    assert.equal(markerIteration('oplens.iter:3'), 3);
  });
});
