import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DiffView } from '../../shared/messages';
import { jsonFixture } from '../../test/fixtures';
import { RunParseError } from '../runs/parseRun';
import { diffView, fmtP, when } from './diffView';
import { parseDiffResponse } from './parseDiff';

type Json = Record<string, unknown>;

// diff.expected.json is the server's own oplens.diff answer (views.diff_answer over engine.diff):
// rmsnorm_naive against a later run whose x_sq line was edited to take 5× and rsqrt a third.
const answer = (): Json => jsonFixture<Json>('diff.expected.json');

function view(data: Json = answer()): DiffView {
  const v = diffView(parseDiffResponse(data));
  assert.ok(!('message' in v), 'a view, not a message');
  return v;
}

describe('parseDiffResponse', () => {
  it('reads the server answer: both runs, the lines, the totals, the earlier runs', () => {
    const d = parseDiffResponse(answer());
    assert.equal(d.before?.run_id, '20261201-103000-rmsnorm_naive-aaaaaa');
    assert.equal(d.after.run_id, '20261201-104500-rmsnorm_naive-bbbbbb');
    assert.equal(d.lines.length, 6);
    assert.deepEqual(
      d.lines.map((l) => l.verdict),
      ['slower', 'same', 'same', 'same', 'same', 'faster'],
    );
    assert.equal(d.totals?.verdict, 'slower');
    assert.deepEqual(
      d.earlier.map((e) => e.run_id),
      ['20261201-103000-rmsnorm_naive-aaaaaa'],
    );
    assert.equal(d.uri, 'file:///examples/rmsnorm.py');
    assert.equal(d.method.alpha, 0.01);
  });

  it('a first run: no before, no totals, no lines', () => {
    const first = { ...answer(), before: null, totals: null, lines: [], earlier: [], method: {} };
    const d = parseDiffResponse(first);
    assert.equal(d.before, null);
    assert.equal(d.totals, null);
    const v = diffView(d);
    assert.ok('message' in v && /no earlier run/.test(v.message));
  });

  it('null line numbers, ratios and p-values stay null; a verdict it does not know is an error', () => {
    const data = answer();
    const lines = data.lines as Json[];
    lines.push({ before_line: null, after_line: 31, before_us: 0, after_us: 12.5, ratio: null, verdict: 'new', p_value: null, text: 'y = x + 1' });
    const d = parseDiffResponse(data);
    assert.deepEqual(d.lines.at(-1), { before_line: null, after_line: 31, before_us: 0, after_us: 12.5, ratio: null, verdict: 'new', p_value: null, text: 'y = x + 1' });
    lines.push({ ...lines[0], verdict: 'worse' });
    assert.throws(() => parseDiffResponse(data), (e: unknown) => e instanceof RunParseError && /lines\[7\]\.verdict/.test(e.message));
  });
});

describe('the "vs previous run" view', () => {
  it('one row per line, before → after, the change marked like the server hints', () => {
    const v = view();
    const [xSq, mean, , rsqrt, , ret] = v.rows;
    assert.equal(v.label, 'CPU');
    assert.equal(v.against, 'previous run');
    assert.deepEqual(
      { before: xSq?.beforeLine, after: xSq?.afterLine, change: xSq?.change, verdict: xSq?.verdict },
      { before: 25, after: 25, change: '▲ 5.0×', verdict: 'slower' },
    );
    assert.match(xSq?.text ?? '', /^x_sq = \(x \* x\)\.repeat/);
    assert.match(xSq?.before ?? '', /ms$/);
    assert.match(xSq?.title ?? '', /^line 25 → 25: .* → .*, ×5\.00, p = < 0\.0001 \(slower\)$/);
    assert.equal(ret?.change, '▼ 67 %');
    assert.equal(ret?.verdict, 'faster');
    assert.equal(rsqrt?.verdict, 'same', 'under 1 % of the time in both runs: too small to judge');
    assert.equal(mean?.change, '+0 %', 'a same line shows its (small) change');
    assert.equal(mean?.verdict, 'same');
  });

  it('the totals in the words of the lens, and the runs for the header', () => {
    const v = view();
    assert.equal(v.totals.verdict, 'slower');
    assert.equal(v.totals.phrase, `${v.totals.change} slower than previous run`);
    assert.match(v.totals.change, /^▲ 2\.8×$/);
    assert.match(v.runs.before, /^2026-12-01 10:30:00 · args make_inputs\(2,128,256\) · 12 iterations · 20261201-103000-rmsnorm_naive-aaaaaa$/);
    assert.match(v.method, /Mann-Whitney .* p < 0\.01 .*10 %.*here ×1\.00, from the largest move of an unchanged line \(×1\.00\)/);
    assert.deepEqual(v.notes, []);
  });

  it('the picker lists the earlier runs, newest first, the previous one named', () => {
    const data = answer();
    const older = { run_id: '20261130-090000-rmsnorm_naive-cccccc', created: '2026-11-30T09:00:00+0000', self_device_us: 21000, device_label: 'CPU', args: '' };
    data.earlier = [...(data.earlier as Json[]), older];
    const v = view(data);
    assert.deepEqual(v.earlier, [
      { runId: '20261201-103000-rmsnorm_naive-aaaaaa', label: '2026-12-01 10:30:00 · CPU 19.50 ms · make_inputs(2,128,256) (previous run)' },
      { runId: '20261130-090000-rmsnorm_naive-cccccc', label: '2026-11-30 09:00:00 · CPU 21.00 ms' },
    ]);
    assert.equal(v.beforeRunId, '20261201-103000-rmsnorm_naive-aaaaaa');
  });

  it('against another pick than the previous run, the sentence names its time', () => {
    const data = answer();
    data.earlier = [{ run_id: '20261201-110000-rmsnorm_naive-dddddd', created: '2026-12-01T11:00:00+0000', self_device_us: 1, device_label: 'CPU', args: '' }, ...(data.earlier as Json[])];
    const v = view(data);
    assert.equal(v.against, 'the run of 2026-12-01 10:30:00');
    assert.match(v.totals.phrase, /slower than the run of 2026-12-01 10:30:00$/);
  });

  it('says what besides the edit may explain a change', () => {
    const data = answer();
    const after = data.after as Json;
    data.after = { ...after, config: { ...(after.config as Json), args: 'make_inputs()' } };
    assert.match(view(data).notes[0] ?? '', /different arguments \(make_inputs\(2,128,256\), then make_inputs\(\)\)/);
    const before = data.before as Json;
    data.after = { ...after, target: before.target };
    assert.match(view(data).notes[0] ?? '', /same in both runs/);
  });

  it('small helpers', () => {
    assert.equal(when('2026-12-01T10:30:00+0000'), '2026-12-01 10:30:00');
    assert.equal(when('2026-12-01T10:30:00-0500'), '2026-12-01 10:30:00');
    assert.equal(fmtP(0.0123), '0.012');
    assert.equal(fmtP(0.00001), '< 0.0001');
  });
});
