/**
 * The run page's "vs previous run" tab: the shown run against an earlier run of its function (the
 * server writes the view, `oplens.views.diff`; this draws it), with a picker of those runs.
 */

import type { DiffView } from '../shared/generated/views';
import type { RunView } from '../shared/messages';
import { activate, button, h } from './dom';
import { redraw, save, section, shownId, state, vscode } from './page';

/** The diff of the shown run (from the panel), or why there is none; undefined while it is asked for. */
let lastDiff: { runId: string; view?: DiffView; message?: string } | undefined;

function diffFor(view: RunView): { view?: DiffView; message?: string } | undefined {
  return lastDiff?.runId === shownId(view) ? lastDiff : undefined;
}

export function tabs(view: RunView): HTMLElement {
  const d = diffFor(view);
  const verdict = d?.view ? d.view.totals.verdict : undefined;
  const mark = d?.view ? d.view.totals.change || 'same' : '';
  const pick = (tab: 'run' | 'diff'): void => {
    state.tab = tab;
    save();
    redraw();
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

export function diffSection(view: RunView): HTMLElement {
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
    const option = h('option', { value: e.run_id }, e.label);
    option.selected = e.run_id === v.before_run_id;
    picker.append(option);
  }
  picker.addEventListener('change', () => {
    lastDiff = undefined; // asked for; drawn when it comes
    vscode.post({ type: 'diff', after: v.after_run_id, before: picker.value, by: v.by });
    redraw();
  });
  // what the figures and verdicts are of: self device time, or each line's wall time (where both runs have it)
  let byPicker: HTMLElement | null = null;
  if (v.by_choices.length > 1) {
    const select = h('select', { 'aria-label': 'What the figures and verdicts are of' });
    for (const c of v.by_choices) {
      const option = h('option', { value: c.value }, c.label);
      option.selected = c.value === v.by;
      select.append(option);
    }
    select.addEventListener('change', () => {
      lastDiff = undefined;
      vscode.post({ type: 'diff', after: v.after_run_id, before: v.before_run_id, by: select.value });
      redraw();
    });
    byPicker = h('label', {}, ' by ', select);
  }
  const t = v.totals;
  const summary = h(
    'p',
    { class: 'diff-summary' },
    `Total ${v.label}: ${t.before} → ${t.after} · `,
    h('span', { class: `verdict-text verdict-${t.verdict}` }, t.phrase),
    t.p_value ? h('span', { class: 'muted' }, ` (p = ${t.p_value})`) : null,
  );
  const body = h('tbody');
  for (const r of v.rows) {
    const row = h(
      'tr',
      { class: `verdict-${r.verdict}`, title: r.title },
      h('td', { class: 'num lineno' }, r.before_line === null ? '' : String(r.before_line)),
      h('td', { class: 'num lineno' }, r.after_line === null ? '' : String(r.after_line)),
      h('td', { class: 'num' }, r.before),
      h('td', { class: 'num' }, r.after),
      h('td', { class: 'num change' }, r.change),
      h('td', { class: 'verdict' }, h('span', { class: 'verdict-tag' }, r.verdict)),
      h('td', { class: 'code-cell' }, h('code', {}, r.text)),
    );
    if (r.after_line !== null) {
      const line = r.after_line;
      activate(row, () => vscode.post({ type: 'revealLine', runId: v.after_run_id, line }));
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
    v.lines_title,
    view.ranks && view.ranks.shown !== null ? h('p', { class: 'muted' }, `All ranks (the merged run) against the earlier run, not rank ${view.ranks.shown} alone.`) : null,
    h('div', { class: 'table-tools' }, h('label', {}, 'Compared with ', picker), byPicker),
    summary,
    h('p', { class: 'diff-method' }, v.measured),
    ...v.notes.map((n) => h('p', { class: 'notice' }, n)),
    h('div', { class: 'scroller diff-scroller' }, h('table', { class: 'diff' }, head, body)),
    h('p', { class: 'muted small' }, `Before: ${v.runs_before}`, h('br'), `Now: ${v.runs_after}`),
    h('p', { class: 'muted small' }, v.method),
  );
}

/** The panel's answer for run `runId`: its diff, or why there is none. */
export function setDiff(runId: string, found: { view: DiffView } | { message: string }): void {
  lastDiff = { runId, ...found };
}
