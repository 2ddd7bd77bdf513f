import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RunParseError } from '../../shared/reader';
import { parseRunPage } from './runPageAnswer';

type Json = Record<string, unknown>;

// An oplens.runPage answer as views.run writes it; what it says is tested on the server's side
// (tests/unit/test_views_run.py).
const answer = (): Json => ({
  page: {
    run_id: '20261129-103017-rmsnorm_naive-d943be',
    label: 'CPU',
    with_cpu: false,
    use_device: true,
    merged: false,
    ranks_badge: '',
    where_line: 23,
    sub: 'x86_64 · torch 2.13.0+cpu · 5 iterations after 3 warm-up',
    args: 'make_inputs(2,128,256)',
    created: '2026-11-29 10:30:34 UTC',
    note: '',
    warnings: [],
    stats: [{ label: 'Self CPU', value: '19.57 ms', note: 'per iteration' }],
    stalled: '',
    unattributed: '',
    outside: '',
    insights: [],
    lines_title: 'Lines · Self CPU per iteration',
    time_head: 'Self CPU',
    with_memory: false,
    memory_head_title: '',
    with_bound: false,
    with_wall: true,
    wall_head_title: "each line's host wall time per call",
    lines: [
      {
        line: 25,
        time: '9.04 ms',
        share: '46.2 %',
        ops: '1 op',
        mark: '',
        memory: '',
        memory_title: 'host memory in one call: allocated 0 B, freed 0 B, peak 0 B',
        bound: '',
        bound_title: '',
        wall: '9.31 ms',
        outside_ops: '',
        wall_title: 'wall 9.31 ms per call',
        tooltip: 'line 25: Self CPU 9.04 ms (46.2 %)',
      },
    ],
    roofline: { note: 'No roofline chart: …', x_decades: [], y_decades: [], x_ticks: [], y_ticks: [], ceilings: [], dots: [], key: '', above: [] },
    ranks: null,
    ops_device_head: 'Self CPU',
    ops_share_head: '% CPU',
    ops_filter: 'Filter 1 operators',
    ops: [{ calls: '3', self_cpu: '14.60 ms', self_device: '14.60 ms', share: '74.6 %', category_title: '', line: 25, title: 'aten::mul: mostly on line 25 (click to go there)' }],
    run_dir: '20261129-103017-rmsnorm_naive-d943be · /runs/20261129-103017-rmsnorm_naive-d943be',
    artifacts: [{ label: 'Worker log', path: 'worker.log', note: '(your function’s stdout and stderr)' }],
    timings: '',
  },
});

describe('parseRunPage', () => {
  it('reads the page as the server wrote it', () => {
    const page = parseRunPage(answer());
    assert.equal(page.stats[0]?.value, '19.57 ms');
    assert.equal(page.lines[0]?.tooltip, 'line 25: Self CPU 9.04 ms (46.2 %)');
    assert.equal(page.ops[0]?.line, 25);
  });

  it('an op on no line has a null line', () => {
    const a = answer();
    ((a.page as Json).ops as Json[])[0]!.line = null;
    assert.equal(parseRunPage(a).ops[0]?.line, null);
  });

  it('refuses an answer without a page, or a page missing a field', () => {
    assert.throws(() => parseRunPage({}), RunParseError);
    const a = answer();
    delete (a.page as Json).lines;
    assert.throws(() => parseRunPage(a), /lines/);
  });
});
