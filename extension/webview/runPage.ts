/**
 * The results page of one run: its header (figures, actions, a distributed run's rank selector),
 * insights, the per-line bar chart (with each line's memory and bound where the run has them), the
 * roofline chart (rooflineChart.ts), a distributed run's ranks × lines strip (ranks.ts), the op table
 * (key_averages) and artifacts; or, on its second tab, the run against an earlier one (diffPage.ts).
 * Long tables are windowed (virtual.ts) so a function with hundreds of lines and thousands of ops stays fast.
 */

import type { LineRow, OpRow, RunPage } from '../shared/generated/views';
import type { ResultsPageState, RunView } from '../shared/messages';
import type { LineStat, OpStat, Run } from '../shared/run';
import { diffSection, tabs } from './diffPage';
import { activate, append, button, clear, h } from './dom';
import { allRanks, app, bar, redraw, ROW_HEIGHT, save, section, stat, state, vscode } from './page';
import { rankSelector, ranksStrip } from './ranks';
import { rooflineSection } from './rooflineChart';
import { VirtualRows } from './virtual';

type OpKey = ResultsPageState['opSort']['key'];
type LineOrder = ResultsPageState['lineOrder'];

export function showRun(view: RunView): void {
  const { run, page } = view;
  clear(app);
  if (!page) {
    // the server did not write the page (it could not read the run): say so, with what the panel knows
    append(app, h('header', {}, h('h1', {}, h('span', { class: 'qualname' }, run.target.qualname))), h('p', { class: 'notice warning' }, view.pageProblem ?? 'No page for this run.'));
    return;
  }
  append(app, header(view, page), tabs(view));
  if (state.tab === 'diff') {
    append(app, diffSection(view));
    return;
  }
  append(
    app,
    view.stale
      ? h('p', { class: 'notice' }, 'This function changed since it was profiled: the lines below are those of the profiled version. Profile it again to refresh.')
      : null,
    ...page.warnings.map((w) => h('p', { class: 'notice warning' }, w)),
    insights(run, page),
    lines(view, page),
    rooflineSection(view, page.roofline),
    allRanks(view) ? ranksStrip(view, page.ranks) : null,
    ops(run, page),
    artifacts(run, page),
  );
}

function header(view: RunView, page: RunPage): HTMLElement {
  const { run } = view;
  const label = page.label;
  const where = `${view.fileLabel}:${page.where_line}`;
  const stats = h('div', { class: 'stats' }, ...page.stats.map((s) => stat(s.label, s.value, s.note)));
  const actions = h(
    'div',
    { class: 'actions' },
    view.actions.explorer ? button('Open in Neuron Explorer', () => vscode.post({ type: 'openExplorer', runId: run.run_id }), { class: 'primary' }) : null,
    view.actions.trace ? button('Open trace', () => vscode.post({ type: 'openTrace', runId: run.run_id })) : null,
    view.actions.trace ? button('Flame graph', () => vscode.post({ type: 'flameGraph', runId: run.run_id }), { title: 'The lines and their ops in speedscope' }) : null,
    view.actions.trace ? button('Open in Perfetto', () => vscode.post({ type: 'openPerfetto', runId: run.run_id })) : null,
    button('Export…', () => vscode.post({ type: 'export', runId: run.run_id }), { title: 'For Perfetto, speedscope or TensorBoard/HTA' }),
    button('Compare with…', () => vscode.post({ type: 'compareWith', runId: run.run_id })),
    button('Profile again', () => vscode.post({ type: 'rerun', runId: run.run_id })),
  );
  const title = h(
    'h1',
    {},
    h('span', { class: 'qualname' }, run.target.qualname),
    ' ',
    h('span', { class: `badge device-${label.toLowerCase()}` }, label),
    page.ranks_badge ? h('span', { class: 'badge ranks-badge' }, page.ranks_badge) : null,
  );
  const goto = h('a', { class: 'where', title: 'Go to the function' }, where);
  activate(goto, () => vscode.post({ type: 'revealLine', runId: run.run_id, line: page.where_line }));
  const sub = h(
    'div',
    { class: 'sub' },
    goto,
    page.sub ? ` · ${page.sub}` : '',
    page.args ? h('span', {}, ' · args ', h('code', {}, page.args)) : '',
    page.created ? ` · ${page.created}` : '',
  );
  const note = page.note ? h('p', { class: 'muted' }, page.note) : null;
  const unattributed = page.unattributed ? h('p', { class: 'muted' }, page.unattributed) : null;
  // a notebook statement's own work around the function's calls (its arguments, -f's caller): not the function's
  const outside = page.outside ? h('p', { class: 'muted' }, page.outside) : null;
  // stalled calls left out of every figure above, in the server's words (analysis/outliers.py)
  const stalled = page.stalled ? h('p', { class: 'notice warning' }, page.stalled) : null;
  return h('header', {}, title, sub, rankSelector(view, page.ranks), note, stats, stalled, unattributed, outside, actions);
}

function insights(run: Run, page: RunPage): HTMLElement | null {
  if (page.insights.length === 0) {
    return null;
  }
  const list = h('ul', { class: 'insights' });
  for (const ins of page.insights) {
    const item = h(
      'li',
      { class: `insight kind-${ins.kind}` },
      h('span', { class: 'line-link' }, ins.where),
      h('span', { class: 'tag' }, ins.tag),
      ins.rank_tag ? h('span', { class: 'tag rank-tag' }, ins.rank_tag) : null,
      h('span', { class: 'message' }, ins.message),
      ins.evidence ? h('div', { class: 'evidence' }, ins.evidence) : null,
    );
    activate(item, () => vscode.post({ type: 'revealLine', runId: run.run_id, line: ins.line }));
    list.append(item);
  }
  return section('Insights', list);
}

function lines(view: RunView, page: RunPage): HTMLElement {
  const { run } = view;
  const value = (l: LineStat): number => (page.use_device ? l.self_device_us : l.self_cpu_us);
  const max = run.lines.reduce((m, l) => Math.max(m, value(l)), 0);
  // each line with its cells (the page's rows are the run's lines, in the same order)
  const rows = run.lines.map((stat, i) => ({ stat, cells: page.lines[i] as LineRow }));
  const ordered = rows.sort((a, b) => (state.lineOrder === 'source' ? a.stat.line - b.stat.line : value(b.stat) - value(a.stat)));
  // The memory and bound columns, where the run recorded them (older runs, and runs without ceilings, have none).
  const withMemory = page.with_memory;
  const withBound = page.with_bound;
  const withWall = page.with_wall;
  const extra = `${withMemory ? ' with-memory' : ''}${withBound ? ' with-bound' : ''}${withWall ? ' with-wall' : ''}`;
  // the grid's columns, the optional ones where the run has them (a custom property: the webview's CSP allows it)
  const columns = ['3em', 'minmax(10em, 3fr)', 'minmax(5em, 2fr)', '6.5em', '4.5em', '3.5em',
    ...(withWall ? ['6.5em', '6.5em'] : []), ...(withMemory ? ['10.5em'] : []), ...(withBound ? ['9em'] : [])].join(' ');

  const scroller = h('div', { class: 'scroller lines-scroller' });
  const body = h('div', { class: `chart${extra}`, role: 'list' });
  body.style.setProperty('--line-columns', columns);
  scroller.append(body);
  new VirtualRows({
    scroller,
    body,
    rowHeight: ROW_HEIGHT,
    count: ordered.length,
    spacer: () => h('div'),
    render: (i) => {
      const { stat: l, cells: c } = ordered[i] as { stat: LineStat; cells: LineRow };
      const row = h(
        'div',
        { class: `chart-row${l.noisy ? ' noisy' : ''}`, role: 'listitem', title: c.tooltip },
        h('span', { class: 'lineno' }, String(l.line)),
        h('code', { class: 'code' }, c.mark ? h('span', { class: 'rank-mark' }, c.mark) : null, (view.source[l.line] ?? '').trim()),
        bar(max > 0 ? value(l) / max : 0),
        h('span', { class: 'num' }, c.time),
        h('span', { class: 'num share' }, c.share),
        h('span', { class: 'num ops' }, c.ops),
        ...(withWall ? [h('span', { class: 'num wall', title: c.wall_title }, c.wall),
          h('span', { class: 'num outside-ops', title: c.wall_title }, c.outside_ops)] : []),
        withMemory ? h('span', { class: 'num memory', title: c.memory_title }, c.memory) : null,
        withBound ? h('span', { class: `bound bound-${l.bound || 'none'}`, title: c.bound_title }, c.bound) : null,
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
  const head =
    withMemory || withBound || withWall
      ? h(
          'div',
          { class: `chart-row chart-head${extra}`, 'aria-hidden': 'true' },
          h('span', { class: 'lineno' }, 'line'),
          h('span', {}, 'source'),
          h('span', {}),
          h('span', { class: 'num' }, page.time_head),
          h('span', { class: 'num' }, 'share'),
          h('span', { class: 'num' }, 'ops'),
          ...(withWall ? [h('span', { class: 'num', title: page.wall_head_title }, 'wall'),
            h('span', { class: 'num', title: page.wall_head_title }, 'outside ops')] : []),
          withMemory ? h('span', { class: 'num', title: page.memory_head_title }, 'alloc / peak') : null,
          withBound ? h('span', { title: 'What bounds the line, and how close it gets to the roofline' }, 'bound · roofline') : null,
        )
      : null;
  head?.style.setProperty('--line-columns', columns);
  return section(page.lines_title, order, head, scroller);
}


function ops(run: Run, page: RunPage): HTMLElement {
  const deviceIsCpu = !page.with_cpu;
  const columns: { key: OpKey; title: string; numeric: boolean }[] = [
    { key: 'name', title: 'Name', numeric: false },
    { key: 'calls', title: 'Calls', numeric: true },
    ...(deviceIsCpu ? [] : [{ key: 'self_cpu_us' as OpKey, title: 'Self CPU', numeric: true }]),
    { key: 'self_device_us', title: page.ops_device_head, numeric: true },
    { key: 'pct', title: page.ops_share_head, numeric: true },
  ];
  const filter = h('input', { type: 'search', placeholder: page.ops_filter, 'aria-label': 'Filter operators', value: state.filter });
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
    // each op with its cells (the page's rows are the run's ops, in the same order)
    const rows = run.ops.map((stat, i) => ({ stat, cells: page.ops[i] as OpRow })).filter(({ stat: o }) => !needle || o.name.toLowerCase().includes(needle));
    const { key, desc } = state.opSort;
    rows.sort(({ stat: a }, { stat: b }) => {
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
      render: (i) => {
        const { stat, cells } = rows[i] as { stat: OpStat; cells: OpRow };
        return opRow(stat, cells, deviceIsCpu, max, run.run_id);
      },
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

function opRow(o: OpStat, c: OpRow, deviceIsCpu: boolean, max: number, runId: string): HTMLElement {
  const pctCell = h('td', { class: 'num pct' }, bar(max > 0 ? o.self_device_us / max : 0), h('span', {}, c.share));
  const row = h(
    'tr',
    {},
    h(
      'td',
      { class: 'name', title: o.name },
      h('code', {}, o.name),
      o.category ? h('span', { class: `tag category category-${o.category}`, title: c.category_title }, o.category) : null,
    ),
    h('td', { class: 'num' }, c.calls),
    deviceIsCpu ? null : h('td', { class: 'num' }, c.self_cpu),
    h('td', { class: 'num' }, c.self_device),
    pctCell,
  );
  if (c.title) {
    row.title = c.title;
  }
  const line = c.line;
  if (line !== null) {
    activate(row, () => vscode.post({ type: 'revealLine', runId, line }));
  }
  return row;
}

function artifacts(run: Run, page: RunPage): HTMLElement {
  const items = page.artifacts.map((a) => {
    if (!a.path) {
      return h('li', { class: 'muted' }, a.note);
    }
    const link = h('a', { class: 'artifact', title: a.path }, a.path);
    activate(link, () => vscode.post({ type: 'openArtifact', runId: run.run_id, path: a.path }));
    return h('li', {}, h('span', { class: 'artifact-label' }, a.label), link, a.note ? h('span', { class: 'muted' }, ` ${a.note}`) : null);
  });
  return section(
    'Run',
    h('p', { class: 'muted' }, page.run_dir),
    items.length ? h('ul', { class: 'artifacts' }, ...items) : h('p', { class: 'muted' }, 'No artifacts.'),
    page.timings ? h('p', { class: 'muted' }, page.timings) : null,
  );
}
