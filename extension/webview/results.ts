/**
 * The OpLens results page (browser side): a run's header, actions, insights, per-line bar chart
 * (with each line's memory and bound where the run has them), roofline chart (hand-written SVG laid
 * out by shared/roofline.ts), op table (key_averages) and artifacts, or its "vs previous run" view (the diff against an earlier
 * run of the function, with a picker of those runs); or a comparison. A distributed run has a rank
 * selector (all ranks, or one rank's own run), a ranks × lines strip and its collective ops tagged. A program overview
 * has its own page: the user's functions (self and total time per step, click: the function; ▶ lines), the icicle
 * chart of their call tree (click a frame: go there) and the modules. Plain DOM, no framework; long tables and
 * charts are windowed (virtual.ts) so a function with hundreds of lines and thousands of ops stays
 * fast. It speaks only the messages of shared/messages.ts.
 */

import './results.css';
import { backendOfLabel, onDevice } from '../shared/backends';
import { deviceLabel, fmtCount, fmtShare, fmtSpeedup, fmtUs } from '../shared/format';
import type { CompareView, DiffView, FromResultsPanel, OverviewPage, ResultsPageState, RunView, ToResultsPanel } from '../shared/messages';
import { fileName, icicle, type HotFunction } from '../shared/overview';
import { fmtUsRange, rankLabel, rankStrip, stragglers } from '../shared/ranks';
import { boundCell, boundPhrase, fmtBytes, memoryCell, memoryTitle, roofline, type RooflineChart } from '../shared/roofline';
import type { LineStat, OpStat, Overview, Run } from '../shared/run';
import { activate, append, button, clear, h, s } from './dom';
import { VirtualRows } from './virtual';
import { channel } from './vscodeApi';

type OpKey = ResultsPageState['opSort']['key'];
type LineOrder = ResultsPageState['lineOrder'];

const vscode = channel<FromResultsPanel, ResultsPageState>();
const app = document.getElementById('app') as HTMLElement;
const state: ResultsPageState = vscode.state() ?? { opSort: { key: 'self_device_us', desc: true }, lineOrder: 'source', filter: '' };
let banner: HTMLElement | undefined;

const ROW_HEIGHT = 24;

function save(): void {
  vscode.save(state);
}

// ---- shared pieces ----------------------------------------------------------------------------

function section(title: string, ...children: (Node | null | false)[]): HTMLElement {
  return h('section', {}, h('h2', {}, title), ...children);
}

function stat(label: string, value: string, note?: string): HTMLElement {
  return h('div', { class: 'stat' }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value' }, value), note ? h('div', { class: 'stat-note' }, note) : null);
}

/** A bar of `fraction` (0..1 of the largest), coloured like the heat gutter: amber → red as it grows. */
function bar(fraction: number): HTMLElement {
  const f = Math.max(0, Math.min(1, fraction));
  const level = f > 0 ? Math.min(8, Math.ceil(f * 8 - 1e-9)) : 0;
  const fill = h('div', { class: `bar-fill lvl-${level}` });
  fill.style.width = `${f * 100}%`;
  return h('div', { class: 'bar', 'aria-hidden': 'true' }, fill);
}

// ---- a run ------------------------------------------------------------------------------------

/** The run the page is about: a distributed run's merged run also while one rank is on show (what is saved and diffed). */
function shownId(view: RunView): string {
  return view.ranks?.runId ?? view.run.run_id;
}

/** A merged run of several ranks on show (all ranks): its figures are means over the ranks. */
function allRanks(view: RunView): boolean {
  return view.ranks !== undefined && view.ranks.shown === null;
}

function showRun(view: RunView): void {
  const { run } = view;
  if (run.overview && view.overview) {
    showOverview(run, run.overview, view.overview);
    return;
  }
  const label = deviceLabel(run.backend.device_label);
  const useDevice = run.totals.self_device_us > 0;
  clear(app);
  append(app, header(view, label), tabs(view));
  if (state.tab === 'diff') {
    append(app, diffSection(view));
    return;
  }
  append(
    app,
    view.stale
      ? h('p', { class: 'notice' }, 'This function changed since it was profiled: the lines below are those of the profiled version. Profile it again to refresh.')
      : null,
    ...run.backend.warnings.map((w) => h('p', { class: 'notice warning' }, w)),
    insights(run),
    lines(view, label, useDevice),
    rooflineSection(view),
    allRanks(view) ? ranksStrip(view, label) : null,
    ops(run, label, view.opLines),
    artifacts(run),
  );
}

// ---- a distributed run: the rank selector and the ranks × lines strip ---------------------------

function rankSelector(view: RunView): HTMLElement | null {
  const r = view.ranks;
  if (!r) {
    return null;
  }
  const picker = h('select', { 'aria-label': 'Ranks to show', class: 'rank-picker' });
  const all = h('option', { value: '' }, `All ranks (${r.ranks.length}, merged)`);
  all.selected = r.shown === null;
  picker.append(all);
  for (const info of r.ranks) {
    const option = h('option', { value: String(info.rank), title: info.failed || `its own run: ${info.part}` }, rankLabel(info));
    option.selected = r.shown === info.rank;
    option.disabled = info.failed !== '' || info.part === '';
    picker.append(option);
  }
  picker.addEventListener('change', () => {
    const rank = picker.value === '' ? null : Number(picker.value);
    state.rank = rank;
    save();
    picker.disabled = true; // until the panel answers with that rank's run
    vscode.post({ type: 'showRank', runId: r.runId, rank });
  });
  const info = r.shown === null ? undefined : r.ranks.find((i) => i.rank === r.shown);
  const note =
    r.shown === null
      ? 'figures are means over the ranks; the editor’s hints show each line’s median across ranks'
      : `rank ${r.shown}’s own run${info?.part ? ` (${info.part})` : ''}`;
  return h(
    'div',
    { class: 'rank-tools' },
    h('label', {}, 'Ranks ', picker),
    h('span', { class: 'muted' }, ` ${note}`),
    r.problem ? h('p', { class: 'notice warning' }, r.problem) : null,
  );
}

/** A heat row per rank, a cell per line: the line's time on that rank (hover: the value; click: the line). */
function ranksStrip(view: RunView, label: string): HTMLElement | null {
  const { run } = view;
  const strip = rankStrip(run, { label: `Self ${label}` });
  if (!strip) {
    return null;
  }
  const grid = h('div', { class: 'strip', role: 'grid', 'aria-label': 'Each line’s time on each rank' });
  grid.style.gridTemplateColumns = `5.5em repeat(${strip.lines.length}, minmax(14px, 1fr))`;
  const every = strip.lines.length > 60 ? 10 : strip.lines.length > 30 ? 5 : 1;
  grid.append(h('div', { class: 'strip-corner', role: 'columnheader' }, 'line'));
  strip.lines.forEach((n, i) => {
    grid.append(h('div', { class: 'strip-line', role: 'columnheader', title: (view.source[n] ?? '').trim() }, i % every === 0 ? String(n) : ''));
  });
  for (const row of strip.rows) {
    const name = h('div', { class: 'strip-rank', role: 'rowheader', title: `${row.title} (click: its own run)` }, row.label);
    activate(name, () => {
      state.rank = row.rank;
      save();
      vscode.post({ type: 'showRank', runId: shownId(view), rank: row.rank });
    });
    grid.append(name);
    for (const cell of row.cells) {
      const el = h('div', {
        class: `strip-cell lvl-${cell.level}${cell.straggler ? ' straggler' : ''}`,
        role: 'gridcell',
        title: cell.title,
        'aria-label': cell.title,
      });
      activate(el, () => vscode.post({ type: 'revealLine', runId: run.run_id, line: cell.line }));
      grid.append(el);
    }
  }
  return section(
    `Ranks × lines · Self ${label} per iteration on each rank`,
    h('div', { class: 'scroller strip-scroller' }, grid),
    h(
      'p',
      { class: 'muted small' },
      `Each cell is a line’s time on one rank, coloured against the largest cell (${fmtUs(strip.max)}); `,
      h('span', { class: 'strip-key straggler' }),
      ' a straggler (the other ranks wait for it). Click a rank for its own run, a cell for its line.',
    ),
    ...strip.failed.map((f) => h('p', { class: 'notice warning' }, `Rank ${f.rank} has no part: ${f.why}`)),
  );
}

// ---- the run against an earlier one ------------------------------------------------------------

/** The diff of the shown run (from the panel), or why there is none; undefined while it is asked for. */
let lastDiff: { runId: string; view?: DiffView; message?: string } | undefined;

function diffFor(view: RunView): { view?: DiffView; message?: string } | undefined {
  return lastDiff?.runId === shownId(view) ? lastDiff : undefined;
}

function tabs(view: RunView): HTMLElement {
  const d = diffFor(view);
  const verdict = d?.view ? d.view.totals.verdict : undefined;
  const mark = d?.view ? d.view.totals.change || 'same' : '';
  const pick = (tab: 'run' | 'diff'): void => {
    state.tab = tab;
    save();
    showRunAgain();
  };
  const diffTab = button('vs previous run', () => pick('diff'), {
    'aria-pressed': String(state.tab === 'diff'),
    title: d?.view ? `${d.view.totals.phrase}: each line against ${d.view.against}` : (d?.message ?? 'Each line against the previous run of this function'),
    class: 'diff-tab',
  });
  if (mark) {
    diffTab.append(' ', h('span', { class: `verdict-mark verdict-${verdict}` }, mark));
  }
  return h(
    'div',
    { class: 'toggle tabs', role: 'group', 'aria-label': 'What to show' },
    button('This run', () => pick('run'), { 'aria-pressed': String(state.tab !== 'diff') }),
    diffTab,
  );
}

function diffSection(view: RunView): HTMLElement {
  const d = diffFor(view);
  if (!d) {
    return section('vs previous run', h('p', { class: 'muted' }, 'Comparing with an earlier run…')); // the panel sends it with the run
  }
  if (!d.view) {
    return section('vs previous run', h('p', { class: 'notice' }, d.message ?? 'No earlier run to compare with.'));
  }
  const v = d.view;
  const picker = h('select', { 'aria-label': 'The earlier run to compare with' });
  for (const e of v.earlier) {
    const option = h('option', { value: e.runId }, e.label);
    option.selected = e.runId === v.beforeRunId;
    picker.append(option);
  }
  picker.addEventListener('change', () => {
    lastDiff = undefined; // asked for; drawn when it comes
    vscode.post({ type: 'diff', after: v.afterRunId, before: picker.value });
    showRunAgain();
  });
  const t = v.totals;
  const summary = h(
    'p',
    { class: 'diff-summary' },
    `Total ${v.label}: ${t.before} → ${t.after} · `,
    h('span', { class: `verdict-text verdict-${t.verdict}` }, t.phrase),
    t.pValue ? h('span', { class: 'muted' }, ` (p = ${t.pValue})`) : null,
  );
  const body = h('tbody');
  for (const r of v.rows) {
    const row = h(
      'tr',
      { class: `verdict-${r.verdict}`, title: r.title },
      h('td', { class: 'num lineno' }, r.beforeLine === null ? '' : String(r.beforeLine)),
      h('td', { class: 'num lineno' }, r.afterLine === null ? '' : String(r.afterLine)),
      h('td', { class: 'num' }, r.before),
      h('td', { class: 'num' }, r.after),
      h('td', { class: 'num change' }, r.change),
      h('td', { class: 'verdict' }, h('span', { class: 'verdict-tag' }, r.verdict)),
      h('td', { class: 'code-cell' }, h('code', {}, r.text)),
    );
    if (r.afterLine !== null) {
      const line = r.afterLine;
      activate(row, () => vscode.post({ type: 'revealLine', runId: v.afterRunId, line }));
    }
    body.append(row);
  }
  const head = h(
    'thead',
    {},
    h(
      'tr',
      {},
      h('th', { scope: 'col', class: 'num', title: 'The line in the earlier run' }, 'Before'),
      h('th', { scope: 'col', class: 'num', title: 'The line in this run' }, 'Now'),
      h('th', { scope: 'col', class: 'num' }, `${v.label} before`),
      h('th', { scope: 'col', class: 'num' }, `${v.label} now`),
      h('th', { scope: 'col', class: 'num' }, 'Change'),
      h('th', { scope: 'col' }, 'Verdict'),
      h('th', { scope: 'col' }, 'Source'),
    ),
  );
  return section(
    `Lines · vs ${v.against} · Self ${v.label} per iteration`,
    view.ranks && view.ranks.shown !== null ? h('p', { class: 'muted' }, `All ranks (the merged run) against the earlier run, not rank ${view.ranks.shown} alone.`) : null,
    h('div', { class: 'table-tools' }, h('label', {}, 'Compared with ', picker)),
    summary,
    ...v.notes.map((n) => h('p', { class: 'notice' }, n)),
    h('div', { class: 'scroller diff-scroller' }, h('table', { class: 'diff' }, head, body)),
    h('p', { class: 'muted small' }, `Before: ${v.runs.before}`, h('br'), `Now: ${v.runs.after}`),
    h('p', { class: 'muted small' }, v.method),
  );
}

function header(view: RunView, label: string): HTMLElement {
  const { run } = view;
  const t = run.totals;
  const created = run.created ? run.created.replace('T', ' ').replace(/\+0000$/, ' UTC') : '';
  const where = `${view.fileLabel}:${run.target.def_line || run.target.first_line}`;
  const backendBits = [run.backend.device_name, run.backend.torch_version ? `torch ${run.backend.torch_version}` : ''].filter(Boolean).join(' · ');
  const merged = allRanks(view);
  const per = merged ? 'per iteration, mean over ranks' : 'per iteration';
  const stats = h(
    'div',
    { class: 'stats' },
    stat(`Self ${label}`, fmtUs(t.self_device_us), per),
    onDevice(run) ? stat('Self CPU', fmtUs(t.self_cpu_us), per) : null,
    merged && t.ranks
      ? stat('Ranks', String(t.ranks.per_rank.length), `${fmtUsRange(t.ranks.min, t.ranks.max)}${t.ranks.max > t.ranks.min && t.ranks.slowest >= 0 ? ` · slowest rank ${t.ranks.slowest}` : ''}`)
      : null,
    t.collective_us > 0 ? stat('In collectives', fmtUs(t.collective_us), merged ? 'per iteration, mean over ranks' : 'per iteration') : null,
    stat('Operator calls', fmtCount(t.op_calls), 'per iteration'),
    stat('Wall', fmtUs(t.wall_us.median), `median; ${fmtUs(t.wall_us.min)} – ${fmtUs(t.wall_us.max)}`),
    run.compile.compile_us > 0 ? stat('First call', fmtUs(run.compile.first_call_us), `${fmtUs(run.compile.compile_us)} compiling`) : null,
    t.floor_us !== null && t.headroom_us !== null ? stat('At the roofline', fmtUs(t.floor_us), `${fmtUs(t.headroom_us)} to win, per call`) : null,
    t.memory && t.peak_bytes > 0 ? stat('Peak memory', fmtBytes(t.peak_bytes), `${t.memory}, in one call`) : null,
  );
  const actions = h(
    'div',
    { class: 'actions' },
    view.actions.explorer ? button('Open in Neuron Explorer', () => vscode.post({ type: 'openExplorer', runId: run.run_id }), { class: 'primary' }) : null,
    view.actions.trace ? button('Open trace', () => vscode.post({ type: 'openTrace', runId: run.run_id })) : null,
    button('Compare with…', () => vscode.post({ type: 'compareWith', runId: run.run_id })),
    button('Profile again', () => vscode.post({ type: 'rerun', runId: run.run_id })),
  );
  const shownRank = view.ranks?.shown ?? null;
  const title = h(
    'h1',
    {},
    h('span', { class: 'qualname' }, run.target.qualname),
    ' ',
    h('span', { class: `badge device-${label.toLowerCase()}` }, label),
    view.ranks ? h('span', { class: 'badge ranks-badge' }, shownRank === null ? `${view.ranks.ranks.length} ranks` : `rank ${shownRank}`) : null,
  );
  const goto = h('a', { class: 'where', title: 'Go to the function' }, where);
  activate(goto, () => vscode.post({ type: 'revealLine', runId: run.run_id, line: run.target.def_line || run.target.first_line }));
  const sub = h(
    'div',
    { class: 'sub' },
    goto,
    backendBits ? ` · ${backendBits}` : '',
    run.capture
      ? ` · ${run.capture.calls_profiled} calls of ${run.capture.calls_seen} in ${run.capture.program}, ${run.capture.calls_skipped} skipped` +
        (run.capture.partial ? ` · partial: ${run.capture.reason}` : '')
      : ` · ${run.config.iters} iterations after ${run.config.warmup} warm-up`,
    run.config.args ? h('span', {}, ' · args ', h('code', {}, run.config.args)) : '',
    created ? ` · ${created}` : '',
  );
  const note = run.backend.note ? h('p', { class: 'muted' }, run.backend.note) : null;
  const unattributed = t.unattributed_device_us > 0 ? h('p', { class: 'muted' }, `${fmtUs(t.unattributed_device_us)} of device time had no launching op and is in no line.`) : null;
  // a notebook statement's own work around the function's calls (its arguments, -f's caller): not the function's
  const outside =
    t.outside_device_us > 0.01 * t.self_device_us
      ? h('p', { class: 'muted' }, `The statement's own work around ${run.target.qualname}'s calls, ${fmtUs(t.outside_device_us)} per iteration, is not the function's: in no line and no total.`)
      : null;
  // stalled calls left out of every figure above, in the server's words (analysis/outliers.py)
  const stalled = t.outliers && t.outliers.note ? h('p', { class: 'notice warning' }, t.outliers.note) : null;
  return h('header', {}, title, sub, rankSelector(view), note, stats, stalled, unattributed, outside, actions);
}

const INSIGHT_LABELS: Record<string, string> = {
  hot_line: 'hot line',
  fusable_chain: 'fusable chain',
  host_to_device_copy: 'host→device copy',
  device_sync: 'device sync',
  compiled_region: 'compiled region',
  noisy: 'noisy',
  straggler: 'straggler',
  collective_wait: 'collective wait',
  headroom: 'headroom',
};

function insights(run: Run): HTMLElement | null {
  if (run.insights.length === 0) {
    return null;
  }
  const list = h('ul', { class: 'insights' });
  for (const ins of run.insights) {
    const item = h(
      'li',
      { class: `insight kind-${ins.kind}` },
      h('span', { class: 'line-link' }, `L${ins.line}`),
      h('span', { class: 'tag' }, INSIGHT_LABELS[ins.kind] ?? ins.kind.replace(/_/g, ' ')),
      ins.rank !== null ? h('span', { class: 'tag rank-tag' }, `rank ${ins.rank}`) : null,
      h('span', { class: 'message' }, ins.message),
      ins.evidence ? h('div', { class: 'evidence' }, ins.evidence) : null,
    );
    activate(item, () => vscode.post({ type: 'revealLine', runId: run.run_id, line: ins.line }));
    list.append(item);
  }
  return section('Insights', list);
}

function lines(view: RunView, label: string, useDevice: boolean): HTMLElement {
  const { run } = view;
  const value = (l: LineStat): number => (useDevice ? l.self_device_us : l.self_cpu_us);
  const share = (l: LineStat): number => (useDevice ? l.pct_device : l.pct_cpu);
  const max = run.lines.reduce((m, l) => Math.max(m, value(l)), 0);
  const ordered = [...run.lines].sort((a, b) => (state.lineOrder === 'source' ? a.line - b.line : value(b) - value(a)));
  const slow = stragglers(run.insights);
  // The memory and bound columns, where the run recorded them (older runs, and runs without ceilings, have none).
  const withMemory = run.totals.memory !== '';
  const withBound = run.lines.some((l) => l.bound !== '');
  const extra = `${withMemory ? ' with-memory' : ''}${withBound ? ' with-bound' : ''}`;

  const scroller = h('div', { class: 'scroller lines-scroller' });
  const body = h('div', { class: `chart${extra}`, role: 'list' });
  scroller.append(body);
  new VirtualRows({
    scroller,
    body,
    rowHeight: ROW_HEIGHT,
    count: ordered.length,
    spacer: () => h('div'),
    render: (i) => {
      const l = ordered[i] as LineStat;
      const row = h(
        'div',
        { class: `chart-row${l.noisy ? ' noisy' : ''}`, role: 'listitem', title: lineTooltip(l, label, onDevice(run), slow.get(l.line)) },
        h('span', { class: 'lineno' }, String(l.line)),
        h(
          'code',
          { class: 'code' },
          slow.has(l.line) ? h('span', { class: 'rank-mark' }, `⚠ rank ${slow.get(l.line)} `) : null,
          (view.source[l.line] ?? '').trim(),
        ),
        bar(max > 0 ? value(l) / max : 0),
        h('span', { class: 'num' }, fmtUs(value(l))),
        h('span', { class: 'num share' }, fmtShare(share(l))),
        h('span', { class: 'num ops' }, `${fmtCount(l.op_calls)} op${l.op_calls === 1 ? '' : 's'}`),
        withMemory ? h('span', { class: 'num memory', title: memoryTitle(l, run.totals.memory) }, memoryCell(l)) : null,
        withBound ? h('span', { class: `bound bound-${l.bound || 'none'}`, title: boundPhrase(l) }, boundCell(l)) : null,
      );
      activate(row, () => vscode.post({ type: 'revealLine', runId: run.run_id, line: l.line }));
      return row;
    },
  });
  const order = h(
    'div',
    { class: 'toggle', role: 'group', 'aria-label': 'Order of lines' },
    ...(['source', 'time'] as LineOrder[]).map((o) =>
      button(o === 'source' ? 'Source order' : 'By time', () => {
        state.lineOrder = o;
        save();
        showRunAgain();
      }, { 'aria-pressed': String(state.lineOrder === o) }),
    ),
  );
  const what = useDevice ? `Self ${label}` : 'Self CPU (no device time in this run)';
  const head =
    withMemory || withBound
      ? h(
          'div',
          { class: `chart-row chart-head${extra}`, 'aria-hidden': 'true' },
          h('span', { class: 'lineno' }, 'line'),
          h('span', {}, 'source'),
          h('span', {}),
          h('span', { class: 'num' }, `Self ${useDevice ? label : 'CPU'}`),
          h('span', { class: 'num' }, 'share'),
          h('span', { class: 'num' }, 'ops'),
          withMemory ? h('span', { class: 'num', title: `${run.totals.memory} memory in one call: allocated by the line's ops / the most allocated while it ran` }, 'alloc / peak') : null,
          withBound ? h('span', { title: 'What bounds the line, and how close it gets to the roofline' }, 'bound · roofline') : null,
        )
      : null;
  return section(`Lines · ${what} per iteration${allRanks(view) ? ', mean over ranks' : ''}`, order, head, scroller);
}

/** The roofline chart (shared/roofline.ts lays it out), or the one line saying why there is none. */
function rooflineSection(view: RunView): HTMLElement {
  const { run } = view;
  const laid = roofline(run, view.source);
  const title = 'Roofline · each line against the device’s ceilings';
  if ('note' in laid) {
    return section(title, h('p', { class: 'muted roofline-note' }, laid.note));
  }
  const c = laid.chart;
  const readout = h('p', { class: 'roofline-readout muted small', 'aria-live': 'polite' }, 'Point at a dot for its line; click it to go there.');
  return section(
    title,
    h('div', { class: 'roofline-wrap' }, rooflineSvg(c, run.run_id, readout)),
    readout,
    // a dot above the roofline is never left unexplained (the line beats a ceiling: its data stays in cache, ...)
    ...c.above.map((why) => h('p', { class: 'muted small roofline-above' }, `▲ ${why}`)),
    h(
      'p',
      { class: 'muted small roofline-key' },
      ...['compute', 'memory', 'overhead', 'host', 'unknown'].flatMap((b) => [h('span', { class: `key-dot bound-${b}` }), `${b} `]),
      ` · ceilings ${c.source}; achieved FLOP/s = the line’s FLOPs in one call / its self time per call; dot size: its share of the time`,
      c.unplaced > 0 ? ` · ${c.unplaced} line${c.unplaced === 1 ? '' : 's'} with work but no bytes or time not shown` : '',
    ),
  );
}

function rooflineSvg(c: RooflineChart, runId: string, readout: HTMLElement): SVGSVGElement {
  const p = c.plot;
  const svg = s('svg', { class: 'roofline', viewBox: `0 0 ${c.width} ${c.height}`, role: 'img', 'aria-label': 'Roofline chart: each line’s achieved FLOP/s against its arithmetic intensity, under the device’s ceilings' });
  const grid = s('g', { class: 'grid' });
  for (const t of c.xTicks) {
    grid.append(s('line', { x1: t.at, y1: p.top, x2: t.at, y2: p.bottom }), s('text', { x: t.at, y: p.bottom + 14, 'text-anchor': 'middle' }, t.label));
  }
  for (const t of c.yTicks) {
    grid.append(s('line', { x1: p.left, y1: t.at, x2: p.right, y2: t.at }), s('text', { x: p.left - 6, y: t.at + 4, 'text-anchor': 'end' }, t.label));
  }
  grid.append(s('rect', { class: 'frame', x: p.left, y: p.top, width: p.right - p.left, height: p.bottom - p.top }));
  const axes = s(
    'g',
    { class: 'axis-titles' },
    s('text', { x: (p.left + p.right) / 2, y: c.height - 6, 'text-anchor': 'middle' }, 'arithmetic intensity (FLOP / byte)'),
    s('text', { x: 14, y: (p.top + p.bottom) / 2, 'text-anchor': 'middle', transform: `rotate(-90 14 ${(p.top + p.bottom) / 2})` }, 'achieved FLOP/s'),
  );
  const ceilings = s('g', { class: 'ceilings' });
  for (const l of c.ceilings) {
    ceilings.append(
      s('line', { class: `ceiling ceiling-${l.kind}`, x1: l.x1, y1: l.y1, x2: l.x2, y2: l.y2 }),
      s('text', { class: `ceiling-label ceiling-${l.kind}`, x: l.labelX, y: l.labelY, 'text-anchor': l.anchor, transform: l.angle ? `rotate(${l.angle} ${l.labelX} ${l.labelY})` : undefined }, l.label),
    );
  }
  const dots = s('g', { class: 'dots' });
  for (const d of c.dots) {
    const dot = s('circle', { class: `dot bound-${d.bound}${d.above ? ' above' : ''}`, cx: d.cx, cy: d.cy, r: d.r, tabindex: 0, role: 'button', 'aria-label': d.title.split('\n').join('; ') }, s('title', {}, d.title));
    const show = (): void => {
      readout.textContent = d.title.split('\n').join(' · ');
    };
    const go = (): void => vscode.post({ type: 'revealLine', runId, line: d.line });
    dot.addEventListener('mouseenter', show);
    dot.addEventListener('focus', show);
    dot.addEventListener('click', go);
    dot.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        go();
      }
    });
    dots.append(dot);
  }
  svg.append(grid, axes, ceilings, dots);
  return svg;
}

function lineTooltip(l: LineStat, label: string, withCpu: boolean, straggler?: number): string {
  const parts = [`line ${l.line}: Self ${label} ${fmtUs(l.self_device_us)} (${fmtShare(l.pct_device)})`];
  if (withCpu) {
    parts.push(`Self CPU ${fmtUs(l.self_cpu_us)} (${fmtShare(l.pct_cpu)})`);
  }
  parts.push(`median ${fmtUs(l.device_spread.median)}, min ${fmtUs(l.device_spread.min)}, max ${fmtUs(l.device_spread.max)}${l.noisy ? ' — noisy' : ''}`);
  const r = l.ranks;
  if (r) {
    const slowest = r.max > r.min && r.slowest >= 0 ? `, slowest rank ${r.slowest}` : '';
    parts.push(`across ${r.per_rank.length} ranks: median ${fmtUs(r.median)}, ${fmtUsRange(r.min, r.max)}${slowest}${straggler !== undefined ? ` — ⚠ rank ${straggler} is the straggler` : ''}`);
  }
  if (l.collective_us > 0) {
    parts.push(`in collectives ${fmtUs(l.collective_us)}`);
  }
  const bound = boundPhrase(l);
  if (bound) {
    parts.push(bound);
  }
  const top = l.ops.slice(0, 5).map((o) => `${o.name} ×${fmtCount(o.calls)} ${fmtUs(o.self_device_us)}`);
  if (top.length) {
    parts.push(...top);
  }
  return parts.join('\n');
}

function ops(run: Run, label: string, opLines: Record<string, number>): HTMLElement {
  const deviceIsCpu = !onDevice(run);
  const columns: { key: OpKey; title: string; numeric: boolean }[] = [
    { key: 'name', title: 'Name', numeric: false },
    { key: 'calls', title: 'Calls', numeric: true },
    ...(deviceIsCpu ? [] : [{ key: 'self_cpu_us' as OpKey, title: 'Self CPU', numeric: true }]),
    { key: 'self_device_us', title: `Self ${label}`, numeric: true },
    { key: 'pct', title: `% ${label}`, numeric: true },
  ];
  const filter = h('input', { type: 'search', placeholder: `Filter ${run.ops.length} operators`, 'aria-label': 'Filter operators', value: state.filter });
  const table = h('table', { class: 'ops' });
  const head = h('thead');
  const headRow = h('tr');
  for (const c of columns) {
    const sorted = state.opSort.key === c.key;
    const th = h(
      'th',
      { scope: 'col', class: c.numeric ? 'num' : '', 'aria-sort': sorted ? (state.opSort.desc ? 'descending' : 'ascending') : 'none' },
      c.title,
      sorted ? h('span', { class: 'arrow' }, state.opSort.desc ? ' ▼' : ' ▲') : null,
    );
    activate(th, () => {
      state.opSort = { key: c.key, desc: sorted ? !state.opSort.desc : c.numeric };
      save();
      showRunAgain();
    });
    headRow.append(th);
  }
  head.append(headRow);
  const body = h('tbody');
  table.append(head, body);
  const scroller = h('div', { class: 'scroller ops-scroller' }, table);
  const max = run.ops.reduce((m, o) => Math.max(m, o.self_device_us), 0);

  const fill = (): void => {
    const needle = state.filter.trim().toLowerCase();
    const rows = run.ops.filter((o) => !needle || o.name.toLowerCase().includes(needle));
    const { key, desc } = state.opSort;
    rows.sort((a, b) => {
      const cmp = key === 'name' ? a.name.localeCompare(b.name) : (a[key] as number) - (b[key] as number);
      return desc ? -cmp : cmp;
    });
    body.replaceChildren();
    new VirtualRows({
      scroller,
      body,
      rowHeight: ROW_HEIGHT,
      count: rows.length,
      spacer: () => h('tr', {}, h('td', { colspan: columns.length })),
      render: (i) => opRow(rows[i] as OpStat, deviceIsCpu, max, opLines, run.run_id),
    });
    count.textContent = needle ? `${rows.length} of ${run.ops.length}` : `${run.ops.length}`;
  };
  const count = h('span', { class: 'muted count' });
  let debounce = 0;
  filter.addEventListener('input', () => {
    window.clearTimeout(debounce);
    debounce = window.setTimeout(() => {
      state.filter = filter.value;
      save();
      fill();
    }, 120);
  });
  fill();
  return section('Operators (key_averages, per iteration)', h('div', { class: 'table-tools' }, filter, count), scroller);
}

function opRow(o: OpStat, deviceIsCpu: boolean, max: number, opLines: Record<string, number>, runId: string): HTMLElement {
  const pctCell = h('td', { class: 'num pct' }, bar(max > 0 ? o.self_device_us / max : 0), h('span', {}, fmtShare(o.pct)));
  const row = h(
    'tr',
    {},
    h(
      'td',
      { class: 'name', title: o.name },
      h('code', {}, o.name),
      o.category ? h('span', { class: `tag category category-${o.category}`, title: o.category === 'collective' ? 'a collective op: time spent with the other ranks, waiting for the slowest as much as moving data' : o.category }, o.category) : null,
    ),
    h('td', { class: 'num' }, fmtCount(o.calls)),
    deviceIsCpu ? null : h('td', { class: 'num' }, fmtUs(o.self_cpu_us)),
    h('td', { class: 'num' }, fmtUs(o.self_device_us)),
    pctCell,
  );
  const line = opLines[o.name];
  const r = o.ranks;
  const across = r ? `; across ${r.per_rank.length} ranks ${fmtUsRange(r.min, r.max)}${r.max > r.min && r.slowest >= 0 ? `, slowest rank ${r.slowest}` : ''}` : '';
  if (line !== undefined) {
    row.title = `${o.name}${o.category ? ` (${o.category})` : ''}: mostly on line ${line} (click to go there)${across}`;
    activate(row, () => vscode.post({ type: 'revealLine', runId, line }));
  } else if (across || o.category) {
    row.title = `${o.name}${o.category ? ` (${o.category})` : ''}${across}`;
  }
  return row;
}

function artifacts(run: Run): HTMLElement {
  const a = run.artifacts;
  const items: HTMLElement[] = [];
  const add = (label: string, path: string, note?: string): void => {
    if (!path) {
      return;
    }
    const link = h('a', { class: 'artifact', title: path }, path);
    activate(link, () => vscode.post({ type: 'openArtifact', runId: run.run_id, path }));
    items.push(h('li', {}, h('span', { class: 'artifact-label' }, label), link, note ? h('span', { class: 'muted' }, ` ${note}`) : null));
  };
  add('Framework trace', a.trace_json, '(Chrome trace)');
  add('Device profile', a.device_profile_dir, a.neff_ntff_pairs.length ? `(${a.neff_ntff_pairs.length} NEFF/NTFF pair${a.neff_ntff_pairs.length === 1 ? '' : 's'})` : undefined);
  if (a.profile_output_dir !== a.device_profile_dir) {
    add('Profile output', a.profile_output_dir, '(what Neuron Explorer ingests)');
  }
  for (const p of a.neff_ntff_pairs.slice(0, 8)) {
    add(`NEFF ${p.hash}`, p.neff);
    add(`NTFF ${p.hash}`, p.ntff, p.ntff_bytes === 0 ? '(empty: this NeuronCore ran nothing)' : `(${(p.ntff_bytes / 2 ** 20).toFixed(1)} MiB)`);
  }
  if (a.neff_ntff_pairs.length > 8) {
    items.push(h('li', { class: 'muted' }, `… ${a.neff_ntff_pairs.length - 8} more pairs`));
  }
  add('Worker log', a.worker_log, '(your function’s stdout and stderr)');
  for (const f of a.system_trace_files.slice(0, 10)) {
    add('System trace', f);
  }
  for (const f of a.files.slice(0, 20)) {
    add('File', f);
  }
  const timings = Object.entries(run.timings_ms)
    .map(([k, v]) => `${k.replace(/_ms$/, '')} ${v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${v.toFixed(0)} ms`}`)
    .join(' · ');
  return section(
    'Run',
    h('p', { class: 'muted' }, `${run.run_id} · ${run.run_dir}`),
    items.length ? h('ul', { class: 'artifacts' }, ...items) : h('p', { class: 'muted' }, 'No artifacts.'),
    timings ? h('p', { class: 'muted' }, `Worker time: ${timings}`) : null,
  );
}

// ---- a comparison -------------------------------------------------------------------------------

function showCompare(view: CompareView): void {
  clear(app);
  const labels = [...new Set(view.rows.map((r) => deviceLabel(r.device_label)))];
  const label = labels.length === 1 ? (labels[0] as string) : 'DEVICE';
  const withCpu = backendOfLabel(label)?.onDevice ?? true; // mixed devices: each row's CPU time is its own
  const max = view.rows.reduce((m, r) => Math.max(m, r.self_device_us), 0);
  const body = h('tbody');
  view.rows.forEach((r, i) => {
    const name = h('a', { class: 'variant', title: 'Show this run' }, r.variant);
    activate(name, () => vscode.post({ type: 'showRun', runId: r.run_id }));
    body.append(
      h(
        'tr',
        { class: i === 0 ? 'baseline' : '' },
        h('td', { class: 'variant-cell' }, name, i === 0 ? h('span', { class: 'tag' }, 'baseline') : null, view.files[r.run_id] ? h('div', { class: 'muted small' }, view.files[r.run_id] ?? '') : null),
        h('td', { class: 'bar-cell' }, bar(max > 0 ? r.self_device_us / max : 0)),
        h('td', { class: 'num' }, fmtUs(r.self_device_us)),
        withCpu ? h('td', { class: 'num' }, fmtUs(r.self_cpu_us)) : null,
        h('td', { class: 'num' }, fmtCount(r.op_calls)),
        h('td', { class: 'num speedup' }, i === 0 ? '1.00×' : fmtSpeedup(r.speedup)),
      ),
    );
  });
  const head = h(
    'thead',
    {},
    h(
      'tr',
      {},
      h('th', { scope: 'col' }, 'Variant'),
      h('th', { scope: 'col', class: 'bar-cell', 'aria-label': `Self ${label}, as bars` }),
      h('th', { scope: 'col', class: 'num' }, `Self ${label}`),
      withCpu ? h('th', { scope: 'col', class: 'num' }, 'Self CPU') : null,
      h('th', { scope: 'col', class: 'num', title: 'Operator calls per iteration' }, 'Ops'),
      h('th', { scope: 'col', class: 'num' }, 'Speed-up'),
    ),
  );
  const baseline = view.rows[0];
  const best = view.rows.slice(1).reduce<(typeof view.rows)[number] | undefined>((b, r) => (!b || r.speedup > b.speedup ? r : b), undefined);
  let summary: HTMLElement | null = null;
  if (baseline && best && best.speedup > 1) {
    summary = h(
      'p',
      {},
      `${best.variant} takes ${fmtUs(best.self_device_us)} of ${label} time per iteration against ${fmtUs(baseline.self_device_us)} for ${baseline.variant}: ` +
        `${fmtSpeedup(best.speedup)} faster, in ${fmtCount(best.op_calls)} operator call${best.op_calls === 1 ? '' : 's'} instead of ${fmtCount(baseline.op_calls)}.`,
    );
  } else if (baseline && best) {
    summary = h('p', {}, `No variant is faster than ${baseline.variant} here (${fmtUs(baseline.self_device_us)} of ${label} time per iteration).`);
  }
  append(
    app,
    h('header', {}, h('h1', {}, 'Comparison ', h('span', { class: `badge device-${label.toLowerCase()}` }, label)), h('div', { class: 'sub' }, 'Per iteration, identical inputs and profiler settings; speed-ups against the first variant.')),
    section('Variants', h('table', { class: 'compare' }, head, body), summary),
    view.failed.length ? section('Not compared', h('ul', {}, ...view.failed.map((f) => h('li', {}, h('code', {}, f.variant), `: ${f.message}`)))) : null,
  );
}

// ---- messages -----------------------------------------------------------------------------------

let lastRun: RunView | undefined;

function showRunAgain(): void {
  if (lastRun) {
    const y = window.scrollY;
    showRun(lastRun);
    window.scrollTo(0, y);
    setBanner(bannerMessage);
  }
}

let bannerMessage: string | null = null;

function setBanner(message: string | null): void {
  bannerMessage = message;
  banner?.remove();
  banner = undefined;
  if (message) {
    banner = h('div', { class: 'busy', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), message);
    document.body.prepend(banner);
  }
}

window.addEventListener('message', (event: MessageEvent<ToResultsPanel>) => {
  const m = event.data;
  switch (m.type) {
    case 'run':
      lastRun = m.view;
      state.runId = shownId(m.view);
      state.rank = m.view.ranks?.shown ?? null;
      save();
      showRun(m.view);
      break;
    case 'compare':
      lastRun = undefined;
      state.runId = undefined;
      save();
      showCompare(m.view);
      break;
    case 'empty':
      lastRun = undefined;
      state.runId = undefined;
      save();
      clear(app);
      app.append(h('div', { class: 'empty' }, h('h1', {}, 'OpLens results'), h('p', {}, m.message)));
      break;
    case 'busy':
      setBanner(m.message);
      break;
    case 'diff':
    case 'noDiff':
      if (!lastRun || shownId(lastRun) !== m.runId) {
        break; // for a run no longer on show
      }
      lastDiff = m.type === 'diff' ? { runId: m.runId, view: m.view } : { runId: m.runId, message: m.message };
      showRunAgain();
      break;
  }
});

vscode.post({ type: 'ready' });

// ---- a program overview -------------------------------------------------------------------------

function showOverview(run: Run, o: Overview, page: OverviewPage): void {
  const label = deviceLabel(o.device_label);
  const per = o.per || 'step';
  const hot = page.hot;
  const byIndex = new Map<number, HotFunction>((hot?.functions ?? []).map((f) => [f.index, f]));
  clear(app);
  const partial = run.capture?.partial ? ' (partial)' : '';
  const stats = h(
    'div',
    { class: 'stats' },
    stat(`${label} time`, fmtUs(o.total_device_us), `per ${per}`),
    o.total_cpu_us > 0 && onDevice(run) ? stat('CPU time', fmtUs(o.total_cpu_us), `per ${per}`) : null,
    per === 'step' ? stat('Steps', String(o.steps), 'profiled, each recorded whole') : stat('Window', `${o.window_s} s`, `from ${o.delay_s} s after the start`),
    stat('Functions', String(byIndex.size || o.functions.length), 'of yours, seen in the window'),
    o.outside_user_device_us > 0 ? stat('Outside your code', fmtUs(o.outside_user_device_us), `per ${per}: under none of your frames`) : null,
  );
  append(
    app,
    h(
      'header',
      {},
      h('h1', {}, h('span', { class: 'qualname' }, hot?.title ?? `overview${o.step ? ` of ${o.step.split('::').pop() ?? ''}` : ''}${partial}`), ' ', h('span', { class: `badge device-${label.toLowerCase()}` }, label)),
      h('div', { class: 'sub muted' }, run.capture ? `${run.capture.program} ${run.capture.argv.join(' ')}` : '', run.created ? ` · ${run.created.replace('T', ' ').replace(/\+0000$/, ' UTC')}` : ''),
      stats,
    ),
    ...run.backend.warnings.map((w) => h('p', { class: 'notice warning' }, w)),
    o.note ? h('p', { class: 'notice' }, o.note) : null,
    page.problem ? h('p', { class: 'notice warning' }, page.problem) : null,
    functionsSection(o, label, per, byIndex),
    icicleSection(o, label, per, byIndex),
    modulesSection(o, label, per),
  );
}

function functionsSection(o: Overview, label: string, per: string, byIndex: Map<number, HotFunction>): HTMLElement {
  const rows = o.functions.map((f, i) => ({ f, i, hot: byIndex.get(i) })).filter((r) => r.hot !== undefined || byIndex.size === 0);
  rows.sort((a, b) => b.f.self_device_us - a.f.self_device_us || b.f.total_device_us - a.f.total_device_us);
  const max = rows.reduce((m, r) => Math.max(m, r.f.self_device_us), 0);
  const body = h('tbody');
  for (const { f, hot } of rows) {
    const where = `${fileName(f.file)}:${f.def_line}`;
    const lines = hot?.lines ? button('▶ lines', () => vscode.post({ type: 'profileLines', lines: hot.lines as Record<string, unknown> }), { title: `Capture ${f.qualname}'s lines in the same program`, class: 'lines-button' }) : null;
    const row = h(
      'tr',
      { class: 'function-row', title: hot?.tooltip ?? '' },
      h('td', {}, h('code', {}, f.qualname)),
      h('td', { class: 'muted' }, where),
      h('td', { class: 'num' }, fmtUs(f.self_device_us)),
      h('td', { class: 'num' }, fmtShare(f.pct_self)),
      h('td', { class: 'bar-cell' }, bar(max > 0 ? f.self_device_us / max : 0)),
      h('td', { class: 'num' }, fmtUs(f.total_device_us)),
      h('td', { class: 'num' }, fmtShare(f.pct_total)),
      h('td', { class: 'num' }, fmtCount(f.calls)),
      h('td', {}, lines),
    );
    if (hot) {
      activate(row.firstElementChild as HTMLElement, () => vscode.post({ type: 'revealFunction', uri: hot.uri, line: hot.line }));
    }
    body.append(row);
  }
  const head = h(
    'thead',
    {},
    h(
      'tr',
      {},
      h('th', { scope: 'col' }, 'Function'),
      h('th', { scope: 'col' }, 'Where'),
      h('th', { scope: 'col', class: 'num' }, `Self ${label}`),
      h('th', { scope: 'col', class: 'num' }, 'Share'),
      h('th', { scope: 'col' }, ''),
      h('th', { scope: 'col', class: 'num' }, `Total ${label}`),
      h('th', { scope: 'col', class: 'num' }, 'Share'),
      h('th', { scope: 'col', class: 'num' }, `Calls/${per}`),
      h('th', { scope: 'col' }, ''),
    ),
  );
  return section(
    `Your functions · per ${per} · by self ${label} time`,
    h('p', { class: 'muted small' }, 'Self: the ops whose innermost frame of your code is the function; total: every op with it anywhere on the stack. Click a name to go there; ▶ lines captures its lines in the same program.'),
    h('div', { class: 'scroller functions-scroller' }, h('table', { class: 'functions' }, head, body)),
  );
}

function icicleSection(o: Overview, label: string, per: string, byIndex: Map<number, HotFunction>): HTMLElement | null {
  const chart = icicle(o);
  if (!chart.cells.length) {
    return null;
  }
  const rowPx = 22;
  const box = h('div', { class: 'icicle', role: 'tree', 'aria-label': 'The call tree of your functions' });
  box.style.height = `${chart.depth * rowPx}px`;
  for (const c of chart.cells) {
    const fn = o.functions[c.fn];
    const hot = byIndex.get(c.fn);
    const title = `${c.label}${fn ? ` (${fn.file}:${fn.def_line})` : ''}\ntotal ${fmtUs(c.totalUs)}/${per} (${fmtShare((100 * c.totalUs) / chart.totalUs)}), self ${fmtUs(c.selfUs)}`;
    const cell = h('div', { class: `icicle-cell lvl-${Math.min(8, Math.max(1, Math.ceil((c.selfUs / Math.max(c.totalUs, 1e-9)) * 8)))}`, role: 'treeitem', title, 'aria-label': title }, c.width > 0.04 ? c.label : '');
    cell.style.left = `${c.x * 100}%`;
    cell.style.width = `${c.width * 100}%`;
    cell.style.top = `${c.depth * rowPx}px`;
    cell.style.height = `${rowPx - 2}px`;
    if (hot) {
      activate(cell, () => vscode.post({ type: 'revealFunction', uri: hot.uri, line: hot.line }));
    }
    box.append(cell);
  }
  return section(
    `Call tree of your code · total ${label} per ${per}`,
    box,
    h('p', { class: 'muted small' }, `Each frame is one of your functions along one path from the top; its width its total time (${fmtUs(chart.totalUs)} the whole width), its colour how much of it is its own. Click a frame to go there.`),
  );
}

function modulesSection(o: Overview, label: string, per: string): HTMLElement | null {
  if (!o.modules.length) {
    return null;
  }
  const body = h('tbody');
  for (const m of o.modules.slice(0, 200)) {
    body.append(
      h(
        'tr',
        {},
        h('td', {}, h('code', {}, m.path)),
        h('td', { class: 'muted' }, m.type),
        h('td', { class: 'num' }, fmtUs(m.self_device_us)),
        h('td', { class: 'num' }, fmtUs(m.total_device_us)),
        h('td', { class: 'num' }, fmtShare(m.pct_total)),
        h('td', { class: 'num' }, fmtCount(m.calls)),
      ),
    );
  }
  const head = h(
    'thead',
    {},
    h(
      'tr',
      {},
      h('th', { scope: 'col' }, 'Module'),
      h('th', { scope: 'col' }, 'Type'),
      h('th', { scope: 'col', class: 'num' }, `Self ${label}`),
      h('th', { scope: 'col', class: 'num' }, `Total ${label}`),
      h('th', { scope: 'col', class: 'num' }, 'Share'),
      h('th', { scope: 'col', class: 'num' }, `Calls/${per}`),
    ),
  );
  return section(`Modules · per ${per}`, h('div', { class: 'scroller modules-scroller' }, h('table', { class: 'modules' }, head, body)));
}
