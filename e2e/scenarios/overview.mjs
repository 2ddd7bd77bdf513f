// The program overview (issue 22): train_step's steps of train_tinyblock.py from its launch configuration, lenses in
// two files, the Hot Functions view, the results page's call tree, and ▶ lines capturing Block.forward's lines.
import fs from 'node:fs';
import path from 'node:path';
import { step } from '../harness.mjs';
import { CAPTURED_5, LAUNCH_NAME, log, PROFILE_TIMEOUT_MS, PROGRAM_LENS, StepFailure, TIME_RE, waitFor } from '../helpers.mjs';

// The overview lens on a function: `CPU 12.3 % · 4.56 ms/step` (and `· total …` where it calls others).
const OVERVIEW_LENS = /CPU \d+(\.\d+)? % · [^|]+\/step/;
const LINES_LENS = '▶ lines';

export async function programOverview(ctx) {
  const { page, tmpRoot } = ctx;
  const { screenshot, editorLines, codeLensTexts, rightClickOnLine, clickMenuItem, quickInputVisible, findWebviewFrame, openFromExplorer, workspaceRuns, clearNotifications } = ctx.ui;
  await step('open train_tinyblock.py; right-click in train_step → OpLens: Program Overview… → the launch configuration', async () => {
    await clearNotifications();
    await openFromExplorer('train_tinyblock.py');
    await waitFor('the editor to show train_tinyblock.py with def train_step', async () => (await editorLines()).some((l) => l.includes('def train_step(')), 30000);
    await waitFor('the lenses of train_tinyblock.py', async () => (await codeLensTexts()).some((t) => t.includes(PROGRAM_LENS)), 30000);
    await rightClickOnLine('loss.backward()');
    await clickMenuItem(/^(OpLens: )?Program Overview \(Steps of This Function\)…$/);
    const widget = page.locator('.quick-input-widget');
    const rows = widget.locator('.quick-input-list .monaco-list-row').filter({ visible: true });
    await waitFor('the program picker', async () => (await quickInputVisible()) && (await rows.count()) > 0, 20000, 200);
    const labels = (await rows.allInnerTexts()).map((l) => l.replace(/\s+/g, ' ').trim());
    log(`program picker offers: ${labels.join(' | ')}`);
    await rows.filter({ has: page.locator('.label-name', { hasText: LAUNCH_NAME }) }).first().locator('.quick-input-list-label').first().click();
  });

  let overviewTitle = '';
  await step('wait for the overview: train_step\'s share lens, the results page with its functions and call tree', async () => {
    const started = Date.now();
    const lens = await waitFor(
      'the overview lens over train_step (CPU … % · …/step)',
      async () => {
        const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
        const err = toasts.find((t) => /error|failed|cannot|could not|never called/i.test(t) && /oplens/i.test(t));
        if (err) throw new StepFailure(`the extension reported: ${err.replace(/\s+/g, ' ')}`);
        return (await codeLensTexts()).find((t) => OVERVIEW_LENS.test(t));
      },
      PROFILE_TIMEOUT_MS,
      500,
    );
    log(`overview in ${((Date.now() - started) / 1000).toFixed(1)} s; train_step's lens row: ${lens}`);
    if (!lens.includes('total')) throw new StepFailure(`train_step calls Block.forward: its lens should give its total too: "${lens}"`);
    const frame = await waitFor('the results page of the overview (its call tree)', async () => findWebviewFrame('Call tree of your code'), 30000);
    const functions = (await frame.locator('table.functions tbody tr td:first-child').allTextContents()).map((t) => t.trim());
    log(`results page functions: ${functions.join(', ')}`);
    for (const fn of ['train_step', 'Block.forward']) {
      if (!functions.includes(fn)) throw new StepFailure(`the results page does not list ${fn}: ${functions.join(', ')}`);
    }
    const cells = (await frame.locator('.icicle-cell').allInnerTexts()).map((t) => t.trim()).filter(Boolean);
    log(`call tree frames: ${cells.join(', ')}`);
    if (!cells.includes('train_step')) throw new StepFailure(`the call tree has no train_step frame: ${cells.join(', ')}`);
    overviewTitle = (await frame.locator('h1').first().textContent()) ?? '';
    log(`results page: ${overviewTitle.trim()}`);
    await screenshot('overview-results');
  });

  await step('the Hot Functions view lists train_step and Block.forward with their shares', async () => {
    const header = page.locator('.pane-header', { hasText: /Hot Functions/i }).first();
    await header.waitFor({ state: 'visible', timeout: 20000 });
    if ((await header.getAttribute('aria-expanded')) === 'false') await header.click();
    const pane = page.locator('.pane', { has: header }).first();
    const rows = await waitFor(
      'rows in Hot Functions',
      async () => {
        const texts = (await pane.locator('.monaco-list-row').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
        return texts.some((t) => t.startsWith('Block.forward')) && texts.some((t) => t.startsWith('train_step')) ? texts : null;
      },
      20000,
    );
    log(`Hot Functions: ${rows.join(' | ')}`);
    if (!rows.some((t) => /Block\.forward\s*\S+ \S+\/step · [\d.]+ % self · tinyblock\.py:\d+/.test(t))) throw new StepFailure(`Block.forward's row should give its share and file: ${rows.join(' | ')}`);
    await screenshot('overview-hot-functions');
  });

  await step('open tinyblock.py: Block.forward\'s overview lens; click ▶ lines and see its lines captured', async () => {
    await openFromExplorer('tinyblock.py');
    await waitFor('the editor to show tinyblock.py', async () => (await editorLines()).some((l) => l.includes('def forward(self, x')), 30000);
    const lens = await waitFor('the overview lens over Block.forward', async () => (await codeLensTexts()).find((t) => OVERVIEW_LENS.test(t) && t.includes(LINES_LENS)), 30000);
    log(`Block.forward's lens row: ${lens}`);
    const before = new Set(workspaceRuns());
    await page.locator('.monaco-editor .codelens-decoration a', { hasText: LINES_LENS }).first().click();
    const run = await waitFor(
      'a new run of Block.forward captured in the program (▶ lines)',
      async () => {
        const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
        const err = toasts.find((t) => /error|failed|cannot|could not|never called|partial/i.test(t) && /oplens/i.test(t));
        if (err) throw new StepFailure(`the extension reported: ${err.replace(/\s+/g, ' ')}`);
        return workspaceRuns().find((d) => !before.has(d) && d.includes('Block.forward'));
      },
      PROFILE_TIMEOUT_MS,
    );
    const result = JSON.parse(fs.readFileSync(path.join(tmpRoot, 'workspace', '.oplens', 'runs', run, 'result.json'), 'utf8'));
    if (!result.capture || result.capture.program !== 'train_tinyblock.py' && !String(result.capture.program).endsWith('train_tinyblock.py')) {
      throw new StepFailure(`▶ lines should capture Block.forward in the overview's program: ${JSON.stringify(result.capture)}`);
    }
    const body = ['h = self.norm(x)', 'h = self.up(h)', 'h = torch.nn.functional.gelu(h)', 'h = self.down(h)', 'return x + h'];
    await waitFor(
      'an inlay hint with a time at the end of each line of Block.forward',
      async () => {
        const lines = await editorLines();
        return body.every((code) => {
          const l = lines.find((x) => x.includes(code));
          return l && TIME_RE.test(l.slice(l.indexOf(code) + code.length));
        });
      },
      30000,
    );
    const totals = await waitFor(
      "Block.forward's totals lens beside the overview's (… ops · 5 calls)",
      async () => (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && CAPTURED_5.test(t) && OVERVIEW_LENS.test(t)),
      30000,
    ).catch(async (e) => {
      throw new StepFailure(`${e.message}; lenses seen: ${JSON.stringify(await codeLensTexts().catch(() => []))}`);
    });
    const lenses = await codeLensTexts();
    log(`after ▶ lines: run ${run}; Block.forward's lens row: ${totals}`);
    if (!lenses.some((t) => OVERVIEW_LENS.test(t))) throw new StepFailure(`the overview's lens should stay beside the lines' run: ${lenses.join(' | ')}`);
    await screenshot('overview-lines');
    await clearNotifications();
  });
}
