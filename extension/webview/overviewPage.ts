/**
 * The results page of a program overview: the user's functions (self and total time per step,
 * click: the function; ▶ lines), the icicle chart of their call tree (click a frame: go there;
 * laid out by shared/overview.ts) and the modules. The server writes the page
 * (`oplens.views.overview`: every name, figure and sentence); this draws it, the bars' and frames'
 * sizes from the overview's times.
 */

import type { OverviewView } from '../shared/generated/views';
import type { OverviewRunView } from '../shared/messages';
import { icicle, type HotFunction } from '../shared/overview';
import type { Overview } from '../shared/run';
import { activate, append, button, clear, h } from './dom';
import { app, bar, section, stat, vscode } from './page';

export function showOverview(shown: OverviewRunView): void {
  const { run, overview: page } = shown;
  const o = run.overview;
  clear(app);
  const view = page.hot?.page;
  const byIndex = new Map<number, HotFunction>((page.hot?.functions ?? []).map((f) => [f.index, f]));
  const notices = [...run.backend.warnings.map((w) => h('p', { class: 'notice warning' }, w)), o.note ? h('p', { class: 'notice' }, o.note) : null, page.problem ? h('p', { class: 'notice warning' }, page.problem) : null];
  if (!view) {
    // the server could not say (page.problem): no page to draw
    append(app, h('header', {}, h('h1', {}, h('span', { class: 'qualname' }, 'overview'))), ...notices);
    return;
  }
  const label = view.label;
  append(
    app,
    h(
      'header',
      {},
      h('h1', {}, h('span', { class: 'qualname' }, view.title), ' ', h('span', { class: `badge device-${label.toLowerCase()}` }, label)),
      h('div', { class: 'sub muted' }, view.sub),
      h('div', { class: 'stats' }, ...view.stats.map((s) => stat(s.label, s.value, s.note))),
    ),
    ...notices,
    functionsSection(o, view, byIndex),
    icicleSection(o, view, byIndex),
    modulesSection(view),
  );
}

function functionsSection(o: Overview, view: OverviewView, byIndex: Map<number, HotFunction>): HTMLElement {
  const { label, per } = view;
  const max = view.functions.reduce((m, r) => Math.max(m, o.functions[r.index]?.self_device_us ?? 0), 0);
  const body = h('tbody');
  for (const f of view.functions) {
    const hot = byIndex.get(f.index);
    const lines = hot?.lines ? button('▶ lines', () => vscode.post({ type: 'profileLines', lines: hot.lines as Record<string, unknown> }), { title: `Capture ${f.qualname}'s lines in the same program`, class: 'lines-button' }) : null;
    const selfUs = o.functions[f.index]?.self_device_us ?? 0;
    const row = h(
      'tr',
      { class: 'function-row', title: f.tooltip },
      h('td', {}, h('code', {}, f.qualname)),
      h('td', { class: 'muted' }, f.where),
      h('td', { class: 'num' }, f.self_device),
      h('td', { class: 'num' }, f.self_share),
      h('td', { class: 'bar-cell' }, bar(max > 0 ? selfUs / max : 0)),
      h('td', { class: 'num' }, f.total_device),
      h('td', { class: 'num' }, f.total_share),
      h('td', { class: 'num' }, f.calls),
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

function icicleSection(o: Overview, view: OverviewView, byIndex: Map<number, HotFunction>): HTMLElement | null {
  const chart = icicle(o);
  if (!chart.cells.length) {
    return null;
  }
  const rowPx = 22;
  const box = h('div', { class: 'icicle', role: 'tree', 'aria-label': 'The call tree of your functions' });
  box.style.height = `${chart.depth * rowPx}px`;
  for (const c of chart.cells) {
    const node = view.nodes[c.node];
    const hot = byIndex.get(c.fn);
    const title = node?.title ?? '';
    const cell = h('div', { class: `icicle-cell lvl-${Math.min(8, Math.max(1, Math.ceil((c.selfUs / Math.max(c.totalUs, 1e-9)) * 8)))}`, role: 'treeitem', title, 'aria-label': title }, c.width > 0.04 ? (node?.label ?? '') : '');
    cell.style.left = `${c.x * 100}%`;
    cell.style.width = `${c.width * 100}%`;
    cell.style.top = `${c.depth * rowPx}px`;
    cell.style.height = `${rowPx - 2}px`;
    if (hot) {
      activate(cell, () => vscode.post({ type: 'revealFunction', uri: hot.uri, line: hot.line }));
    }
    box.append(cell);
  }
  return section(`Call tree of your code · total ${view.label} per ${view.per}`, box, h('p', { class: 'muted small' }, view.icicle_note));
}

function modulesSection(view: OverviewView): HTMLElement | null {
  if (!view.modules.length) {
    return null;
  }
  const { label, per } = view;
  const body = h('tbody');
  for (const m of view.modules) {
    body.append(
      h(
        'tr',
        {},
        h('td', {}, h('code', {}, m.path)),
        h('td', { class: 'muted' }, m.type),
        h('td', { class: 'num' }, m.self_device),
        h('td', { class: 'num' }, m.total_device),
        h('td', { class: 'num' }, m.total_share),
        h('td', { class: 'num' }, m.calls),
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
