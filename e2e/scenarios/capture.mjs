// Profile Function in Program…: Block.forward captured inside train_tinyblock.py, from its launch configuration.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { step } from '../harness.mjs';
import { answerWhere, CAPTURED_5, findFiles, LAUNCH_NAME, log, PROFILE_TIMEOUT_MS, PROGRAM_LENS, StepFailure, TIME_RE, waitFor } from '../helpers.mjs';

const SLEEPY_PROGRAM = 'train_tinyblock.py --sleep 600';
// 3 steps call Block.forward 6 times (two blocks a step); the capture needs 2 + 2 profiler warm-up + 5
const SHORT_PROGRAM = 'train_tinyblock.py --steps 3';
const CAPTURED_PARTIAL = /\b[1-4] (calls?|iters?)\b/;

export async function captureInProgram(ctx) {
  const { page, tmpRoot } = ctx;
  const { screenshot, editorLines, codeLensTexts, rightClickOnLine, clickMenuItem, quickInputVisible, clickOnLine, openFromExplorer, clearNotifications } = ctx.ui;
  await step('open tinyblock.py (the model of the workspace\'s program, train_tinyblock.py)', async () => {
    // editor group 1 (rmsnorm.py) active, so the file opens there and not beside the results panel
    await clickOnLine('mean_eps = mean_sq + EPS');
    await openFromExplorer('tinyblock.py');
    await waitFor('the editor to show tinyblock.py with def forward', async () => (await editorLines()).some((l) => l.includes('def forward(self, x')), 30000);
    const lens = await waitFor(
      `the ${PROGRAM_LENS} lens over Block.forward`,
      async () => (await codeLensTexts()).find((t) => t.includes(PROGRAM_LENS)),
      30000,
    );
    log(`lens row: ${lens}`);
  });

  await step('right-click in Block.forward → OpLens: Profile Function in Program… → the launch configuration', async () => {
    await rightClickOnLine('h = torch.nn.functional.gelu(h)');
    await screenshot('context-menu-program');
    await clickMenuItem(/^(OpLens: )?Profile Function in Program…$/);
    const widget = page.locator('.quick-input-widget');
    const rows = widget.locator('.quick-input-list .monaco-list-row').filter({ visible: true });
    await waitFor('the program picker', async () => (await quickInputVisible()) && (await rows.count()) > 0, 20000, 200);
    const labels = (await rows.allInnerTexts()).map((l) => l.replace(/\s+/g, ' ').trim());
    log(`program picker offers: ${labels.join(' | ')}`);
    if (!labels.some((l) => l.includes(LAUNCH_NAME))) throw new StepFailure(`the picker does not offer the launch configuration "${LAUNCH_NAME}": ${labels.join(' | ')}`);
    if (!labels.some((l) => l.includes('Enter a script or module'))) throw new StepFailure(`the picker has no "Enter a script or module…": ${labels.join(' | ')}`);
    if (labels.some((l) => l.includes('Attach to a process'))) throw new StepFailure(`the picker offers an attach configuration: ${labels.join(' | ')}`);
    await screenshot('program-picker');
    await rows.filter({ has: page.locator('.label-name', { hasText: LAUNCH_NAME }) }).first().locator('.quick-input-list-label').first().click();
    await answerWhere(ctx);
  });

  await step('wait for the capture of Block.forward in train_tinyblock.py', async () => {
    let progressShot = false;
    const started = Date.now();
    await waitFor(
      'the CodeLens totals line over Block.forward (… ops · 5 calls)',
      async () => {
        const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
        const err = toasts.find((t) => /error|failed|cannot|could not|never called/i.test(t) && /oplens/i.test(t));
        if (err) throw new StepFailure(`the extension reported: ${err.replace(/\s+/g, ' ')}`);
        const progress = toasts.find((t) => /waiting|captured/i.test(t));
        if (progress && !progressShot) {
          progressShot = true;
          log(`progress: ${progress.replace(/\s+/g, ' ')}`);
          await screenshot('program-capture-progress');
        }
        return (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && CAPTURED_5.test(t));
      },
      PROFILE_TIMEOUT_MS,
      500,
    ).catch(async (e) => {
      if (e instanceof StepFailure && /the extension reported/.test(e.message)) throw e;
      throw new StepFailure(`${e.message}; lenses seen: ${JSON.stringify(await codeLensTexts().catch(() => []))}`);
    });
    log(`captured in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  await step('assert: Block.forward\'s totals lens and per-line hints; the program\'s output in the OpLens output', async () => {
    const totals = (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && CAPTURED_5.test(t));
    log(`totals lens: ${totals}`);
    if (!/CPU/.test(totals)) throw new StepFailure(`the totals lens does not name the CPU backend: "${totals}"`);
    if (!TIME_RE.test(totals)) throw new StepFailure(`the totals lens carries no time: "${totals}"`);
    const body = ['h = self.norm(x)', 'h = self.up(h)', 'h = torch.nn.functional.gelu(h)', 'h = self.down(h)', 'return x + h'];
    const hinted = await waitFor(
      'an inlay hint with a time at the end of each line of Block.forward',
      async () => {
        const lines = await editorLines();
        const withTime = body.filter((code) => {
          const l = lines.find((x) => x.includes(code));
          return l && TIME_RE.test(l.slice(l.indexOf(code) + code.length));
        });
        return withTime.length === body.length ? withTime : null;
      },
      20000,
    );
    const lines = await editorLines();
    for (const code of hinted) log(`hint: ${lines.find((x) => x.includes(code)).trim()}`);
    await page.waitForTimeout(300);
    await screenshot('editor-program-capture');
    // the program's output comes to the OpLens output channel (window/logMessage)
    const logsDir = path.join(tmpRoot, 'user-data', 'logs');
    const output = await waitFor(
      'the program\'s "step N loss" lines in the OpLens output',
      async () => {
        for (const f of findFiles(logsDir, (p) => /oplens.*\.log$/i.test(path.relative(logsDir, p)))) {
          const found = fs.readFileSync(f, 'utf8').split('\n').find((l) => /step \d+ loss/.test(l));
          if (found) return found;
        }
        return null;
      },
      15000,
    );
    log(`program output in the OpLens output: ${output.trim()}`);
  });

  await step('Profile Function in Program… → Enter a script that calls Block.forward too few times → a partial run and the error', async () => {
    await enterProgram(ctx, 'h = self.up(h)', SHORT_PROGRAM, LAUNCH_NAME);
    const error = await waitFor(
      'the error that the program called Block.forward too few times',
      async () => (await page.locator('.notifications-toasts .notification-toast').allInnerTexts()).find((t) => /partial run/.test(t) && /OpLens/.test(t)),
      PROFILE_TIMEOUT_MS,
    );
    log(`error: ${error.replace(/\s+/g, ' ')}`);
    if (!/called \d+ times/.test(error)) throw new StepFailure(`the error should say how often the program called Block.forward: ${error}`);
    const totals = await waitFor(
      'the totals lens of the partial run (fewer than 5 calls)',
      async () => (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && CAPTURED_PARTIAL.test(t)),
      20000,
    );
    log(`totals lens of the partial run: ${totals}`);
    if (!TIME_RE.test(totals)) throw new StepFailure(`the partial run's totals lens carries no time: "${totals}"`);
    await screenshot('program-capture-partial');
    await clearNotifications();
  });

  await step('Profile Function in Program… → Enter a script (one that waits first) → Cancel ends the program', async () => {
    await enterProgram(ctx, 'h = self.down(h)', SLEEPY_PROGRAM, SHORT_PROGRAM);
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'capturing Block.forward' }).first();
    await toast.waitFor({ state: 'visible', timeout: 20000 });
    const worker = await waitFor('the program running (an oplens.worker capturing Block.forward)', async () => captureWorkers(tmpRoot)[0], 60000);
    const status = await waitFor(
      'the progress notification to say "waiting for the first call"',
      async () => ((await toast.innerText()).includes('waiting for the first call') ? toast.innerText() : null),
      30000,
    ).catch(() => null);
    log(`program running (pid ${worker.pid}); notification: ${status ? status.replace(/\s+/g, ' ').trim() : '(no "waiting for the first call")'}`);
    await screenshot('program-capture-cancellable');
    await toast.hover(); // the buttons of a progress toast show on hover
    await toast.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
    const cancelled = await waitFor(
      'the message that the capture was cancelled',
      async () => (await page.locator('.notifications-toasts .notification-toast').allInnerTexts()).find((t) => /was cancelled; the program was stopped/.test(t)),
      30000,
    );
    log(`after Cancel: ${cancelled.replace(/\s+/g, ' ')}`);
    await waitFor('the program to end', async () => !captureWorkers(tmpRoot).some((w) => w.pid === worker.pid), 15000);
    await screenshot('program-capture-cancelled');
  });
}

/**
 * Right-click on the line with `textOnLine` → Profile Function in Program… → Enter a script or module…
 * → `line`; `lastUsed`: the label the picker must offer first, marked last used.
 */
async function enterProgram(ctx, textOnLine, line, lastUsed) {
  const { page } = ctx;
  const { rightClickOnLine, clickMenuItem, quickInputVisible } = ctx.ui;
  await rightClickOnLine(textOnLine);
  await clickMenuItem(/^(OpLens: )?Profile Function in Program…$/);
  const widget = page.locator('.quick-input-widget');
  const rows = widget.locator('.quick-input-list .monaco-list-row').filter({ visible: true });
  await waitFor('the program picker', async () => (await quickInputVisible()) && (await rows.count()) > 0, 20000, 200);
  const labels = (await rows.allInnerTexts()).map((l) => l.replace(/\s+/g, ' ').trim());
  log(`program picker offers: ${labels.join(' | ')}`);
  if (!(labels[0]?.includes(lastUsed) && labels[0]?.includes('last used'))) {
    throw new StepFailure(`the remembered choice "${lastUsed}" should come first, marked last used: ${labels.join(' | ')}`);
  }
  await rows.filter({ hasText: 'Enter a script or module' }).first().locator('.quick-input-list-label').first().click();
  await waitFor('the program input box', async () => (await quickInputVisible()) && (await rows.count()) === 0, 10000, 200);
  await widget.locator('input').fill(line);
  await page.keyboard.press('Enter');
  log(`entered: ${line}`);
  await answerWhere(ctx);
}

/** The OpLens worker processes capturing Block.forward for this run's workspace: `[{pid, args}]`. */
function captureWorkers(tmpRoot) {
  const ps = spawnSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return ps.stdout
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(.*)$/.exec(l))
    .filter((m) => m && m[2].includes('oplens.worker') && m[2].includes(tmpRoot) && /Block\.forward[^/]*\.job\.json/.test(m[2]))
    .map((m) => ({ pid: Number(m[1]), args: m[2] }));
}
