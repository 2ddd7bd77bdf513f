import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RunParseError } from '../../shared/reader';
import { jsonFixture } from '../../test/fixtures';
import { parseDiffPage } from './diffAnswer';

type Json = Record<string, unknown>;

// diff.expected.json is the server's own oplens.diff answer (views.diff_answer over engine.diff);
// what its page says is tested on the server's side (tests/unit/test_views_diff.py).
const answer = (): Json => jsonFixture<Json>('diff.expected.json');

describe('parseDiffPage', () => {
  it("reads the server's page: its rows, totals and picker as written", () => {
    const page = parseDiffPage(answer());
    assert.equal(page.message, '');
    assert.equal(page.view?.after_run_id, '20261201-104500-rmsnorm_naive-bbbbbb');
    assert.equal(page.view?.rows.length, 6);
    assert.equal(page.view?.rows[0]?.change, '▲ 5.0×');
    assert.deepEqual(
      page.view?.earlier.map((e) => e.run_id),
      ['20261201-103000-rmsnorm_naive-aaaaaa'],
    );
  });

  it('a first run: no view, the message', () => {
    const page = parseDiffPage({ ...answer(), page: { view: null, message: 'rmsnorm_naive has no earlier run to compare with.' } });
    assert.equal(page.view, null);
    assert.match(page.message, /no earlier run/);
  });

  it('a row missing a field is an error naming it', () => {
    const data = answer();
    const page = data.page as { view: { rows: Json[] } };
    delete page.view.rows[2]?.change;
    assert.throws(() => parseDiffPage(data), (e: unknown) => e instanceof RunParseError && /page\.view\.rows\[2\]\.change/.test(e.message));
  });
});
