// Cancel on the progress notification (issue 31): Profile Function on a function that takes a second a call: the
// notification shows the server's stages with Cancel; Cancel stops the run (said as cancelled, no run stored) and
// the next Profile Function on it runs to its end (the server's worker pool is usable).
import fs from 'node:fs';
import path from 'node:path';
import { step } from '../harness.mjs';
import { LENS_TIMEOUT_MS, log, StepFailure, waitFor } from '../helpers.mjs';

const WAITS_PY = `import time

import torch


def make_inputs(*shape):
    return torch.randn(*shape)


def waits(x):
    time.sleep(1.0)
    return x + 1
`;

export async function cancelProfile(ctx) {
  const { page, tmpRoot } = ctx;
  const { screenshot, editorLines, codeLensTexts, rightClickOnLine, clickMenuItem, answerArgumentsUntil, openFromExplorer, workspaceRuns, clearNotifications } = ctx.ui;
  const runsOfWaits = () => workspaceRuns().filter((d) => d.includes('waits'));
  const toast = () => page.locator('.notifications-toasts .notification-toast', { hasText: 'profiling waits' }).first();
  await step('write waits.py (one second a call) and open it', async () => {
    fs.writeFileSync(path.join(tmpRoot, 'workspace', 'waits.py'), WAITS_PY);
    await waitFor('waits.py in the explorer', async () => (await page.locator('.explorer-folders-view .label-name', { hasText: /^waits\.py$/ }).count()) > 0, 20000);
    await openFromExplorer('waits.py');
    await waitFor('the editor to show waits.py', async () => (await editorLines()).some((l) => l.includes('def waits')), 30000);
    await waitFor('a ▶ Profile CodeLens in waits.py', async () => (await codeLensTexts()).some((t) => t.includes('Profile')), LENS_TIMEOUT_MS);
    await clearNotifications();
  });

  await step('right-click in waits → OpLens: Profile Function → the notification shows the server\'s stages and Cancel → Cancel: no run stored', async () => {
    const before = runsOfWaits();
    await rightClickOnLine('time.sleep(1.0)');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    const said = await answerArgumentsUntil(
      'the progress notification saying a stage of the server (warm-up or iteration k/N)',
      async () => {
        if (!(await toast().count())) return null;
        const text = (await toast().innerText()).replace(/\s+/g, ' ');
        return /warm-up|iteration \d+\/\d+/.test(text) ? text : null;
      },
      null,
      'make_inputs(4)',
    );
    log(`progress notification: ${said}`);
    await toast().hover(); // the buttons of a progress toast show on hover
    const cancel = toast().locator('.monaco-button', { hasText: 'Cancel' }).first();
    await cancel.waitFor({ state: 'visible', timeout: 5000 }).catch(() => {
      throw new StepFailure(`the progress notification has no Cancel button: ${said}`);
    });
    await screenshot('profile-cancellable');
    await cancel.click();
    const cancelled = await waitFor(
      'the message that profiling waits was cancelled',
      async () => (await page.locator('.notifications-toasts .notification-toast').allInnerTexts()).find((t) => /profiling waits was cancelled/.test(t)),
      30000,
    );
    log(`after Cancel: ${cancelled.replace(/\s+/g, ' ')}`);
    await page.waitForTimeout(2000); // a run stored late would show now
    const after = runsOfWaits();
    if (after.length !== before.length) throw new StepFailure(`a cancelled profile stored a run: ${after.filter((d) => !before.includes(d)).join(', ')}`);
    if ((await codeLensTexts()).some((t) => /\bops?\b/.test(t) && /iters?\b/.test(t))) throw new StepFailure('a totals lens over waits after Cancel');
    await screenshot('profile-cancelled');
    await clearNotifications();
  });

  await step('Profile Function on waits again: it runs to its end (the worker pool is usable after a cancel)', async () => {
    const before = runsOfWaits();
    await rightClickOnLine('time.sleep(1.0)');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    const totals = await answerArgumentsUntil(
      'the CodeLens totals line over waits',
      async () => (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && /iters?\b/.test(t)),
      null,
      'make_inputs(4)',
    );
    const added = runsOfWaits().filter((d) => !before.includes(d));
    if (added.length !== 1) throw new StepFailure(`one new run of waits expected, found ${JSON.stringify(added)}`);
    log(`after the cancel, waits profiled: ${totals}; run ${added[0]}`);
    await screenshot('profile-after-cancel');
  });

  await step('back to rmsnorm.py', async () => {
    await openFromExplorer('rmsnorm.py');
    await waitFor('the editor to show rmsnorm.py', async () => (await editorLines()).some((l) => l.includes('mean_eps = mean_sq + EPS')), 30000);
  });
}
