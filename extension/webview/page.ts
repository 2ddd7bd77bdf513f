/**
 * What every page of the results panel shares (browser side): the channel to the panel, the page's
 * saved state, the element pages draw into, the way a page asks to be drawn again, and the small
 * pieces (a titled section, a figure with its label, a heat bar).
 */

import type { FromResultsPanel, ResultsPageState, RunView } from '../shared/messages';
import { h } from './dom';
import { channel } from './vscodeApi';

export const vscode = channel<FromResultsPanel, ResultsPageState>();
export const app = document.getElementById('app') as HTMLElement;
export const state: ResultsPageState = vscode.state() ?? { opSort: { key: 'self_device_us', desc: true }, lineOrder: 'source', filter: '' };

export const ROW_HEIGHT = 24;

export function save(): void {
  vscode.save(state);
}

let redrawHook: () => void = () => undefined;

/** The page draws what is on show again (a toggle, a sort, a diff that came), keeping the scroll position. */
export function redraw(): void {
  redrawHook();
}

/** Set by the entry (results.ts), which knows what is on show. */
export function onRedraw(hook: () => void): void {
  redrawHook = hook;
}

export function section(title: string, ...children: (Node | null | false)[]): HTMLElement {
  return h('section', {}, h('h2', {}, title), ...children);
}

export function stat(label: string, value: string, note?: string): HTMLElement {
  return h('div', { class: 'stat' }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value' }, value), note ? h('div', { class: 'stat-note' }, note) : null);
}

/** A bar of `fraction` (0..1 of the largest), coloured like the heat gutter: amber → red as it grows. */
export function bar(fraction: number): HTMLElement {
  const f = Math.max(0, Math.min(1, fraction));
  const level = f > 0 ? Math.min(8, Math.ceil(f * 8 - 1e-9)) : 0;
  const fill = h('div', { class: `bar-fill lvl-${level}` });
  fill.style.width = `${f * 100}%`;
  return h('div', { class: 'bar', 'aria-hidden': 'true' }, fill);
}

/** The run the page is about: a distributed run's merged run also while one rank is on show (what is saved and diffed). */
export function shownId(view: RunView): string {
  return view.ranks?.runId ?? view.run.run_id;
}

/** A merged run of several ranks on show (all ranks): its figures are means over the ranks. */
export function allRanks(view: RunView): boolean {
  return view.ranks !== undefined && view.ranks.shown === null;
}
