/**
 * The results page of a program overview: the user's functions (self and total time per step,
 * click: the function; ▶ lines), the icicle chart of their call tree (click a frame: go there;
 * laid out by shared/overview.ts) and the modules.
 */

import { onDevice } from '../shared/backends';
import { deviceLabel, fmtCount, fmtShare, fmtUs } from '../shared/format';
import type { OverviewPage } from '../shared/messages';
import { fileName, icicle, type HotFunction } from '../shared/overview';
import type { Overview, Run } from '../shared/run';
import { activate, append, button, clear, h } from './dom';
import { app, bar, section, stat, vscode } from './page';

export function showOverview(run: Run, o: Overview, page: OverviewPage): void {
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
