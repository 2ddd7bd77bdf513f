/**
 * The results page of one run: its header (figures, actions, a distributed run's rank selector),
 * insights, the per-line bar chart (with each line's memory and bound where the run has them), the
 * roofline chart (rooflineChart.ts), a distributed run's ranks × lines strip (ranks.ts), the op table
 * (key_averages) and artifacts; or, on its second tab, the run against an earlier one (diffPage.ts).
 * Long tables are windowed (virtual.ts) so a function with hundreds of lines and thousands of ops stays fast.
 */

import { onDevice } from '../shared/backends';
import { deviceLabel, fmtCount, fmtShare, fmtUs } from '../shared/format';
import { INSIGHT_LABELS } from '../shared/generated/views';
import type { ResultsPageState, RunView } from '../shared/messages';
import { fmtUsRange, stragglers } from '../shared/ranks';
import { boundCell, boundPhrase, fmtBytes, memoryCell, memoryTitle } from '../shared/roofline';
import type { LineStat, OpStat, Run } from '../shared/run';
import { diffSection, tabs } from './diffPage';
import { activate, append, button, clear, h } from './dom';
import { showOverview } from './overviewPage';
import { allRanks, app, bar, redraw, ROW_HEIGHT, save, section, stat, state, vscode } from './page';
import { rankSelector, ranksStrip } from './ranks';
import { rooflineSection } from './rooflineChart';
import { VirtualRows } from './virtual';

type OpKey = ResultsPageState['opSort']['key'];
type LineOrder = ResultsPageState['lineOrder'];

export function showRun(view: RunView): void {
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

/** Each insight kind's tag, in the server's words (`oplens.views.insights`, generated). */
const LABELS: Record<string, string> = INSIGHT_LABELS;

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
      h('span', { class: 'tag' }, LABELS[ins.kind] ?? ins.kind.replace(/_/g, ' ')),
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
        redraw();
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
      redraw();
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
