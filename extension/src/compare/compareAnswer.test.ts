import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RunParseError } from '../../shared/reader';
import { parseComparePage } from './compareAnswer';

type Json = Record<string, unknown>;

// An oplens.compare answer's page as views.compare writes it; what it says is tested on the server's
// side (tests/unit/test_views_compare.py).
const row = (variant: string, speedup: string): Json => ({
  run_id: `20261201-103000-${variant}-aaaaaa`,
  variant,
  self_device_us: 1164.5,
  self_device: '1.16 ms',
  self_cpu: '1.20 ms',
  op_calls: '6',
  wall: '1.30 ms',
  speedup,
  interval: speedup === '1.00×' ? '' : '5.60×–6.10×',
  verdict: speedup === '1.00×' ? 'baseline' : 'faster',
  compile: '',
});
const answer = (): Json => ({
  summary: [],
  page: {
    label: 'CPU',
    with_cpu: false,
    rows: [row('rmsnorm_naive', '1.00×'), row('rmsnorm_fused', '5.84×')],
    summary: 'rmsnorm_fused takes 199.3 µs of CPU time per iteration against 1.16 ms for rmsnorm_naive: 5.84× faster (5.60×–6.10× at 95 %), in 1 operator call instead of 6.',
    method: 'measured side by side in one worker, one call of each variant per round, the order rotated each round',
  },
});

describe('parseComparePage', () => {
  it("reads the server's page: the variants, their figures and the summary as written", () => {
    const page = parseComparePage(answer());
    assert.equal(page.label, 'CPU');
    assert.equal(page.with_cpu, false);
    assert.deepEqual(
      page.rows.map((r) => [r.variant, r.speedup, r.interval, r.verdict]),
      [
        ['rmsnorm_naive', '1.00×', '', 'baseline'],
        ['rmsnorm_fused', '5.84×', '5.60×–6.10×', 'faster'],
      ],
    );
    assert.match(page.method, /side by side in one worker/);
    assert.deepEqual(page.failed, []);
    assert.match(page.summary, /5\.84× faster/);
  });

  it('an answer without a page, or a row missing a field, is an error naming it', () => {
    assert.throws(() => parseComparePage({ summary: [] }), (e: unknown) => e instanceof RunParseError && /page/.test(e.message));
    const data = answer();
    const page = data.page as { rows: Json[] };
    delete page.rows[1]?.speedup;
    assert.throws(() => parseComparePage(data), (e: unknown) => e instanceof RunParseError && /page\.rows\[1\]\.speedup/.test(e.message));
  });
});
