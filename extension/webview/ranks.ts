/**
 * A distributed run on the results page: the rank selector (all ranks, or one rank's own run) and
 * the ranks × lines strip, as the server writes them (the run page's `ranks`, `oplens.views.ranks`);
 * each cell coloured from its time (shared/ranks.ts's levels).
 */

import type { RanksView } from '../shared/generated/views';
import type { RunView } from '../shared/messages';
import { stripLevel } from '../shared/ranks';
import { activate, h } from './dom';
import { save, section, shownId, state, vscode } from './page';

export function rankSelector(view: RunView, words: RanksView | null): HTMLElement | null {
  const r = view.ranks;
  if (!r || !words) {
    return null;
  }
  const picker = h('select', { 'aria-label': 'Ranks to show', class: 'rank-picker' });
  const all = h('option', { value: '' }, words.all_ranks);
  all.selected = r.shown === null;
  picker.append(all);
  let group: HTMLElement = picker; // ranks of several nodes: grouped by node
  for (const o of words.options) {
    if (o.node && group.getAttribute('label') !== `node ${o.node}`) {
      group = h('optgroup', { label: `node ${o.node}` });
      picker.append(group);
    }
    const option = h('option', { value: String(o.rank), title: o.title }, o.label);
    option.selected = r.shown === o.rank;
    option.disabled = o.disabled;
    group.append(option);
  }
  picker.addEventListener('change', () => {
    const rank = picker.value === '' ? null : Number(picker.value);
    state.rank = rank;
    save();
    picker.disabled = true; // until the panel answers with that rank's run
    vscode.post({ type: 'showRank', runId: r.runId, rank });
  });
  return h(
    'div',
    { class: 'rank-tools' },
    h('label', {}, 'Ranks ', picker),
    h('span', { class: 'muted' }, ` ${words.note}`),
    r.problem ? h('p', { class: 'notice warning' }, r.problem) : null,
  );
}

/** A heat row per rank, a cell per line: the line's time on that rank (hover: the value; click: the line). */
export function ranksStrip(view: RunView, strip: RanksView | null): HTMLElement | null {
  const { run } = view;
  if (!strip || strip.rows.length === 0) {
    return null;
  }
  const grid = h('div', { class: 'strip', role: 'grid', 'aria-label': 'Each line’s time on each rank' });
  grid.style.gridTemplateColumns = `5.5em repeat(${strip.lines.length}, minmax(14px, 1fr))`;
  const every = strip.lines.length > 60 ? 10 : strip.lines.length > 30 ? 5 : 1;
  grid.append(h('div', { class: 'strip-corner', role: 'columnheader' }, 'line'));
  strip.lines.forEach((n, i) => {
    grid.append(h('div', { class: 'strip-line', role: 'columnheader', title: (view.source[n] ?? '').trim() }, i % every === 0 ? String(n) : ''));
  });
  let node = '';
  for (const row of strip.rows) {
    if (row.node && row.node !== node) {
      // the ranks of several nodes, grouped: a heading row per node
      node = row.node;
      grid.append(h('div', { class: 'strip-node', role: 'rowheader', title: `the ranks that ran on ${node}` }, `node ${node}`));
    }
    const name = h('div', { class: 'strip-rank', role: 'rowheader', title: `${row.title} (click: its own run)` }, row.label);
    activate(name, () => {
      state.rank = row.rank;
      save();
      vscode.post({ type: 'showRank', runId: shownId(view), rank: row.rank });
    });
    grid.append(name);
    for (const cell of row.cells) {
      const el = h('div', {
        class: `strip-cell lvl-${stripLevel(cell.us, strip.max_us)}${cell.straggler ? ' straggler' : ''}`,
        role: 'gridcell',
        title: cell.title,
        'aria-label': cell.title,
      });
      activate(el, () => vscode.post({ type: 'revealLine', runId: run.run_id, line: cell.line }));
      grid.append(el);
    }
  }
  return section(
    strip.strip_title,
    h('div', { class: 'scroller strip-scroller' }, grid),
    h(
      'p',
      { class: 'muted small' },
      strip.key,
      h('span', { class: 'strip-key straggler' }),
      ' a straggler (the other ranks wait for it). Click a rank for its own run, a cell for its line.',
    ),
    ...strip.failed.map((f) => h('p', { class: 'notice warning' }, f)),
  );
}
