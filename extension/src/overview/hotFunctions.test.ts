import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { icicle } from '../../shared/overview';
import { jsonFixture } from '../../test/fixtures';
import { parseOverviewRun, RunParseError } from '../runs/parseRun';
import { hotHeadline, hotRows, otherSort, parseHotFunctions } from './hotFunctions';

// The server's own answers for a made-up overview (extension/test/fixtures/make_fixtures.py, overview_fixture).
const fixture = jsonFixture('overview.expected.json') as { run: unknown; by_self: unknown; by_total: unknown };

describe('oplens.hotFunctions off the wire', () => {
  it('reads the answer the server writes, hottest first, each with its ▶ lines arguments', () => {
    const hot = parseHotFunctions(fixture.by_self);
    assert.ok(hot);
    assert.equal(hot.sort, 'self');
    assert.deepEqual(
      hot.functions.map((f) => f.qualname),
      ['forward', 'helper', 'loss_of', 'step'],
    );
    const forward = hot.functions[0];
    assert.ok(forward);
    assert.equal(forward.uri, 'file:///ws/pkg/model.py');
    assert.deepEqual(forward.lines, { uri: 'file:///ws/pkg/model.py', qualname: 'forward', program: { program: '/ws/train.py', args: ['12'] } });
    assert.match(forward.lens, /^CPU 49\.0 % · .+\/step · total 74\.5 %$/);
  });

  it('has no ▶ lines where the server knows no program, and null for no overview', () => {
    const hot = parseHotFunctions(fixture.by_total);
    assert.ok(hot);
    assert.deepEqual(
      hot.functions.map((f) => [f.qualname, f.lines]),
      [
        ['step', null],
        ['forward', null],
      ],
    );
    assert.equal(parseHotFunctions(null), null);
  });

  it("carries the results page as the server writes it: rows hottest first, one icicle node per frame", () => {
    const hot = parseHotFunctions(fixture.by_self);
    assert.ok(hot);
    assert.deepEqual(
      hot.page.functions.map((f) => [f.qualname, f.where, f.self_share]),
      [
        ['forward', 'model.py:20', '49.0 %'],
        ['helper', 'model.py:30', '25.5 %'],
        ['loss_of', 'train.py:5', '17.6 %'],
        ['step', 'train.py:10', '7.8 %'],
      ],
    );
    assert.equal(hot.page.title, hot.title);
    assert.equal(hot.page.nodes.length, (parseOverviewRun(fixture.run).overview?.frames ?? []).length);
  });

  it('names a missing field', () => {
    assert.throws(() => parseHotFunctions({ functions: [] }), (e: unknown) => e instanceof RunParseError && /run_id/.test(e.message));
    const broken = structuredClone(fixture.by_self) as { functions: Record<string, unknown>[] };
    delete broken.functions[1]?.qualname;
    assert.throws(() => parseHotFunctions(broken), /functions\[1\]\.qualname/);
  });
});

describe('the Hot Functions view', () => {
  it('has a row per function: the figure it is sorted by, its file and line; a click goes to its def', () => {
    const hot = parseHotFunctions(fixture.by_self);
    assert.ok(hot);
    const rows = hotRows(hot);
    assert.equal(rows[0]?.label, 'forward');
    assert.match(rows[0]?.description ?? '', / · 49\.0 % self · model\.py:20$/);
    assert.equal(rows[0]?.line, 19);
    assert.equal(rows[0]?.canProfileLines, true);
    assert.match(hotHeadline(hot), /^overview of step: CPU .+ · sorted by self time$/);
    assert.equal(otherSort('self'), 'total');
    assert.equal(otherSort('total'), 'self');
  });
});

// the icicle's words are the server's, one node per frame (oplens.views.overview): a cell is named by its node
const nodes = parseHotFunctions(fixture.by_self)?.page.nodes ?? [];
const label = (c: { node: number }): string => nodes[c.node]?.label ?? '';

describe('the icicle chart of the call tree', () => {
  it('puts the step on top, its callees under it by total time, widths in proportion', () => {
    const run = parseOverviewRun(fixture.run);
    assert.ok(run.overview);
    const chart = icicle(run.overview);
    const cells = chart.cells.map((c) => [label(c), c.depth, Number(c.x.toFixed(3)), Number(c.width.toFixed(3))]);
    // step 0.51 µs: forward 0.38 (helper 0.13 under it), loss_of 0.09
    assert.deepEqual(cells, [
      ['step', 0, 0, 1],
      ['forward', 1, 0, 0.745],
      ['helper', 2, 0, 0.255],
      ['loss_of', 1, 0.745, 0.176],
    ]);
    assert.equal(chart.depth, 3);
    assert.equal(chart.totalUs, run.overview.frames[0]?.total_device_us);
  });

  it('leaves out what is too narrow to see, and draws nothing without time', () => {
    const run = parseOverviewRun(fixture.run);
    assert.ok(run.overview);
    assert.deepEqual(
      icicle(run.overview, 0.2).cells.map(label),
      ['step', 'forward', 'helper'],
    );
    assert.deepEqual(icicle({ ...run.overview, frames: [] }).cells, []);
  });
});
