/**
 * The OpLens results panel's page (browser side): the entry, which takes the panel's messages
 * (shared/messages.ts) and shows the page they are for: one run (runPage.ts, with its "vs previous
 * run" tab, diffPage.ts), a comparison (comparePage.ts) or a program overview (overviewPage.ts);
 * page.ts holds what they share. Plain DOM, no framework.
 */

import './results.css';
import type { OverviewRunView, RunView, ToResultsPanel } from '../shared/messages';
import { showCompare } from './comparePage';
import { setDiff } from './diffPage';
import { clear, h } from './dom';
import { showOverview } from './overviewPage';
import { app, onRedraw, save, shownId, state, vscode } from './page';
import { showRun } from './runPage';

let lastRun: RunView | undefined;
let lastOverview: OverviewRunView | undefined;
let banner: HTMLElement | undefined;

function showRunAgain(): void {
  if (lastRun || lastOverview) {
    const y = window.scrollY;
    if (lastRun) {
      showRun(lastRun);
    } else if (lastOverview) {
      showOverview(lastOverview);
    }
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
      lastOverview = undefined;
      state.runId = shownId(m.view);
      state.rank = m.view.ranks?.shown ?? null;
      save();
      showRun(m.view);
      break;
    case 'overview':
      lastRun = undefined;
      lastOverview = m.view;
      state.runId = m.view.run.run_id;
      state.rank = null;
      save();
      showOverview(m.view);
      break;
    case 'compare':
      lastRun = undefined;
      lastOverview = undefined;
      state.runId = undefined;
      save();
      showCompare(m.view);
      break;
    case 'empty':
      lastRun = undefined;
      lastOverview = undefined;
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
