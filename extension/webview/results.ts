/**
 * The OpLens results page (browser side): a run's header, actions, insights, per-line bar chart,
 * op table (key_averages) and artifacts, or its "vs previous run" view (the diff against an earlier
 * run of the function, with a picker of those runs); or a comparison. Plain DOM, no framework; long tables and
 * charts are windowed (virtual.ts) so a function with hundreds of lines and thousands of ops stays
 * fast. It speaks only the messages of shared/messages.ts.
 */

import './results.css';
import { deviceLabel, fmtCount, fmtShare, fmtSpeedup, fmtUs } from '../shared/format';
import type { CompareView, DiffView, FromResultsPanel, ResultsPageState, RunView, ToResultsPanel } from '../shared/messages';
import type { LineStat, OpStat, Run } from '../shared/run';
import { activate, append, button, clear, h } from './dom';
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

function showRun(view: RunView): void {
  const { run } = view;
  const label = deviceLabel(run.backend.device_label);
  const useDevice = run.totals.self_device_us > 0;
  clear(app);
  append(app, header(view, label), tabs(run));
  if (state.tab === 'diff') {
    append(app, diffSection(run));
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
    ops(run, label, view.opLines),
    artifacts(run),
  );
}

// ---- the run against an earlier one ------------------------------------------------------------

/** The diff of the shown run (from the panel), or why there is none; undefined while it is asked for. */
let lastDiff: { runId: string; view?: DiffView; message?: string } | undefined;

function diffFor(run: Run): { view?: DiffView; message?: string } | undefined {
  return lastDiff?.runId === run.run_id ? lastDiff : undefined;
}

function tabs(run: Run): HTMLElement {
  const d = diffFor(run);
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

function diffSection(run: Run): HTMLElement {
  const d = diffFor(run);
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
  const stats = h(
    'div',
    { class: 'stats' },
    stat(`Self ${label}`, fmtUs(t.self_device_us), 'per iteration'),
    label !== 'CPU' ? stat('Self CPU', fmtUs(t.self_cpu_us), 'per iteration') : null,
    stat('Operator calls', fmtCount(t.op_calls), 'per iteration'),
    stat('Wall', fmtUs(t.wall_us.median), `median; ${fmtUs(t.wall_us.min)} – ${fmtUs(t.wall_us.max)}`),
    run.compile.compile_us > 0 ? stat('First call', fmtUs(run.compile.first_call_us), `${fmtUs(run.compile.compile_us)} compiling`) : null,
  );
  const actions = h(
    'div',
    { class: 'actions' },
    view.actions.explorer ? button('Open in Neuron Explorer', () => vscode.post({ type: 'openExplorer', runId: run.run_id }), { class: 'primary' }) : null,
    view.actions.trace ? button('Open trace', () => vscode.post({ type: 'openTrace', runId: run.run_id })) : null,
    button('Compare with…', () => vscode.post({ type: 'compareWith', runId: run.run_id })),
    button('Profile again', () => vscode.post({ type: 'rerun', runId: run.run_id })),
  );
  const title = h('h1', {}, h('span', { class: 'qualname' }, run.target.qualname), ' ', h('span', { class: `badge device-${label.toLowerCase()}` }, label));
  const goto = h('a', { class: 'where', title: 'Go to the function' }, where);
  activate(goto, () => vscode.post({ type: 'revealLine', runId: run.run_id, line: run.target.def_line || run.target.first_line }));
  const sub = h(
    'div',
    { class: 'sub' },
    goto,
    backendBits ? ` · ${backendBits}` : '',
    ` · ${run.config.iters} iterations after ${run.config.warmup} warm-up`,
    run.config.args ? h('span', {}, ' · args ', h('code', {}, run.config.args)) : '',
    created ? ` · ${created}` : '',
  );
  const note = run.backend.note ? h('p', { class: 'muted' }, run.backend.note) : null;
  const unattributed = t.unattributed_device_us > 0 ? h('p', { class: 'muted' }, `${fmtUs(t.unattributed_device_us)} of device time had no launching op and is in no line.`) : null;
  return h('header', {}, title, sub, note, stats, unattributed, actions);
}

const INSIGHT_LABELS: Record<string, string> = {
  hot_line: 'hot line',
  fusable_chain: 'fusable chain',
  host_to_device_copy: 'host→device copy',
  device_sync: 'device sync',
  compiled_region: 'compiled region',
  noisy: 'noisy',
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

  const scroller = h('div', { class: 'scroller lines-scroller' });
  const body = h('div', { class: 'chart', role: 'list' });
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
        { class: `chart-row${l.noisy ? ' noisy' : ''}`, role: 'listitem', title: lineTooltip(l, label) },
        h('span', { class: 'lineno' }, String(l.line)),
        h('code', { class: 'code' }, (view.source[l.line] ?? '').trim()),
        bar(max > 0 ? value(l) / max : 0),
        h('span', { class: 'num' }, fmtUs(value(l))),
        h('span', { class: 'num share' }, fmtShare(share(l))),
        h('span', { class: 'num ops' }, `${fmtCount(l.op_calls)} op${l.op_calls === 1 ? '' : 's'}`),
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
  return section(`Lines · ${what} per iteration`, order, scroller);
}

function lineTooltip(l: LineStat, label: string): string {
  const parts = [`line ${l.line}: Self ${label} ${fmtUs(l.self_device_us)} (${fmtShare(l.pct_device)})`];
  if (label !== 'CPU') {
    parts.push(`Self CPU ${fmtUs(l.self_cpu_us)} (${fmtShare(l.pct_cpu)})`);
  }
  parts.push(`median ${fmtUs(l.device_spread.median)}, min ${fmtUs(l.device_spread.min)}, max ${fmtUs(l.device_spread.max)}${l.noisy ? ' — noisy' : ''}`);
  const top = l.ops.slice(0, 5).map((o) => `${o.name} ×${fmtCount(o.calls)} ${fmtUs(o.self_device_us)}`);
  if (top.length) {
    parts.push(...top);
  }
  return parts.join('\n');
}

function ops(run: Run, label: string, opLines: Record<string, number>): HTMLElement {
  const deviceIsCpu = label === 'CPU';
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
    h('td', { class: 'name', title: o.name }, h('code', {}, o.name)),
    h('td', { class: 'num' }, fmtCount(o.calls)),
    deviceIsCpu ? null : h('td', { class: 'num' }, fmtUs(o.self_cpu_us)),
    h('td', { class: 'num' }, fmtUs(o.self_device_us)),
    pctCell,
  );
  const line = opLines[o.name];
  if (line !== undefined) {
    row.title = `${o.name}: mostly on line ${line} (click to go there)`;
    activate(row, () => vscode.post({ type: 'revealLine', runId, line }));
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
        label !== 'CPU' ? h('td', { class: 'num' }, fmtUs(r.self_cpu_us)) : null,
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
      label !== 'CPU' ? h('th', { scope: 'col', class: 'num' }, 'Self CPU') : null,
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
      state.runId = m.view.run.run_id;
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
      if (lastRun?.run.run_id !== m.runId) {
        break; // for a run no longer on show
      }
      lastDiff = m.type === 'diff' ? { runId: m.runId, view: m.view } : { runId: m.runId, message: m.message };
      showRunAgain();
      break;
  }
});

vscode.post({ type: 'ready' });
