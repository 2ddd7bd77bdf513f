/**
 * The OpLens results panel's page (browser side): the entry, which takes the panel's messages
 * (shared/messages.ts) and shows the page they are for: one run (runPage.ts, with its "vs previous
 * run" tab, diffPage.ts), a comparison (comparePage.ts) or a program overview (overviewPage.ts);
 * page.ts holds what they share. Plain DOM, no framework.
 */

import './results.css';
import type { RunView, ToResultsPanel } from '../shared/messages';
import { showCompare } from './comparePage';
import { setDiff } from './diffPage';
import { clear, h } from './dom';
import { app, onRedraw, save, shownId, state, vscode } from './page';
import { showRun } from './runPage';

let lastRun: RunView | undefined;
let banner: HTMLElement | undefined;

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
      setDiff(m.runId, m.type === 'diff' ? { view: m.view } : { message: m.message });
      showRunAgain();
      break;
  }
});

onRedraw(showRunAgain);
vscode.post({ type: 'ready' });
