// Profile Function on rmsnorm_naive: the argument box, the totals lens, a hint on each line, the results page's op
// table and its roofline chart (a dot's hover and click).
import path from 'node:path';
import { step } from '../harness.mjs';
import { ARTIFACTS, log, REPO, StepFailure, TIME_RE, waitFor } from '../helpers.mjs';

export async function profile(ctx) {
  const { page } = ctx;
  const { screenshot, editorLines, codeLensTexts, rightClickOnLine, clickMenuItem, findWebviewFrame, answerArgumentsUntil } = ctx.ui;
  // ---------------------------------------------------------------- profile rmsnorm_naive
  await step('right-click in rmsnorm_naive → OpLens: Profile Function', async () => {
    await rightClickOnLine('x_sq = x * x');
    await screenshot('context-menu');
    await clickMenuItem(/^(OpLens: )?Profile Function$/, 'context-menu-oplens');
  });

  await step('answer the argument box (if asked) and wait for the profile', async () => {
    await answerArgumentsUntil(
      'the CodeLens totals line over rmsnorm_naive (… ops · … iters)',
      async () => (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && /iters?\b/.test(t)),
      'argument-box',
    );
  });

  await step('assert: totals lens, per-line hints, results panel op table', async () => {
    const lenses = await codeLensTexts();
    const totals = lenses.find((t) => /\bops?\b/.test(t) && /iters?\b/.test(t));
    log(`totals lens: ${totals}`);
    if (!/CPU/.test(totals)) throw new StepFailure(`the totals lens does not name the CPU backend: "${totals}"`);
    if (!/\b6 ops\b/.test(totals)) throw new StepFailure(`the totals lens should count 6 ops for rmsnorm_naive: "${totals}"`);
    if (!TIME_RE.test(totals)) throw new StepFailure(`the totals lens carries no time: "${totals}"`);

    const hinted = await waitFor(
      'an inlay hint with a time at the end of each of the 6 lines of rmsnorm_naive (hintThreshold 0)',
      async () => {
        const lines = await editorLines();
        const body = ['x_sq = x * x', 'mean_sq = x_sq.mean', 'mean_eps = mean_sq + EPS', 'inv_rms = torch.rsqrt', 'x_norm = x * inv_rms', 'return x_norm * w'];
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
    await screenshot('editor-profiled');

    const frame = await waitFor('the OpLens results panel (webview) showing aten::mul', () => findWebviewFrame('aten::mul'), 30000);
    const panelText = await frame.evaluate(() => document.body.innerText);
    if (!/aten::mean/.test(panelText) || !/aten::rsqrt/.test(panelText)) {
      throw new StepFailure(`the results panel's op table lacks aten::mean / aten::rsqrt:\n${panelText.slice(0, 1500)}`);
    }
    if (!/Self CPU/.test(panelText)) throw new StepFailure(`the results panel does not label its device column "Self CPU" on the CPU backend`);
    const rows = await frame.locator('table tr').count();
    log(`results panel: ${rows} table rows; begins: ${panelText.replace(/\s+/g, ' ').slice(0, 200)}`);
    const tabTitles = await page.locator('.tabs-container .tab').allTextContents();
    if (!tabTitles.some((t) => /OpLens/.test(t))) log(`(note: no editor tab titled OpLens; tabs: ${tabTitles.join(' | ')})`);
    await screenshot('results-panel');
    // and the op table itself, scrolled into view inside the webview
    const opsHeading = frame.getByText(/^Operators/).first();
    if (await opsHeading.count()) {
      await opsHeading.evaluate((el) => el.scrollIntoView({ block: 'start' })).catch(() => {});
      await page.waitForTimeout(300);
      await screenshot('results-op-table');
    }
  });

  await step('assert: the results page\'s roofline chart (a dot per line with work; a dot\'s hover and click)', async () => {
    const frame = await waitFor('the OpLens results panel (webview) with its roofline section', () => findWebviewFrame('Roofline'), 30000);
    const note = frame.locator('.roofline-note');
    if (await note.count()) throw new StepFailure(`the results page has no roofline chart: "${(await note.innerText()).trim()}"`);
    const chart = frame.locator('svg.roofline');
    await chart.waitFor({ timeout: 10000 });
    const dots = chart.locator('circle.dot');
    const count = await dots.count();
    const ceilings = await chart.locator('text.ceiling-label').allTextContents();
    log(`roofline: ${count} dots; ceilings: ${ceilings.join(' | ')}`);
    if (count < 1) throw new StepFailure('the roofline chart has no dots (rmsnorm_naive\'s lines all have counted work)');
    if (!ceilings.some((t) => /^memory .*GB\/s · (measured|spec)$/.test(t))) throw new StepFailure(`no labelled memory ceiling: ${ceilings.join(' | ')}`);
    if (!ceilings.some((t) => /\bfloat32\b.*FLOP\/s · (measured|spec)$/.test(t))) throw new StepFailure(`no labelled float32 ceiling: ${ceilings.join(' | ')}`);
    const bounds = await frame.locator('.chart-row .bound').allInnerTexts();
    log(`lines' bound column: ${bounds.map((b) => b.trim()).join(' | ')}`);
    await chart.evaluate((el) => el.scrollIntoView({ block: 'center' })).catch(() => {});
    // the largest dot (the hottest line with work) comes first, drawn under the smaller ones; point at
    // the first that no other covers (two lines of the same work and time overlap), read the readout
    const uncovered = await dots.evaluateAll((els) => els.findIndex((el) => {
      const r = el.getBoundingClientRect();
      return el.ownerDocument.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2) === el;
    }));
    const dot = dots.nth(uncovered >= 0 ? uncovered : count - 1);
    await dot.hover();
    const readout = (await frame.locator('.roofline-readout').innerText()).trim();
    log(`roofline hover: ${readout}`);
    if (!/^line \d+/.test(readout) || !/-bound|bound unknown/.test(readout) || !/% of the roofline/.test(readout)) {
      throw new StepFailure(`pointing at a dot does not name its line, bound and roofline %: "${readout}"`);
    }
    await page.waitForTimeout(300);
    await screenshot('results-roofline');
    const section = frame.locator('section', { has: frame.locator('svg.roofline') });
    const closeUp = path.join(ARTIFACTS, `${String(++ctx.shotIndex).padStart(2, '0')}-results-roofline-chart.png`);
    await section.screenshot({ path: closeUp, timeout: 15000 }).then(() => log(`screenshot ${path.relative(REPO, closeUp)}`), (e) => log(`(roofline close-up failed: ${e.message.split('\n')[0]})`));
    // a click on the dot goes to its line in the editor (the status bar's Ln follows the cursor)
    const line = Number(/^line (\d+)/.exec(readout)?.[1]);
    await dot.click();
    const at = await waitFor(
      `the editor's cursor on line ${line} after a click on its dot`,
      async () => {
        const t = (await page.locator('.statusbar').textContent()) ?? '';
        const m = /Ln (\d+)/.exec(t);
        return m && Number(m[1]) === line ? m[0] : null;
      },
      10000,
    );
    log(`dot click → ${at}`);
  });
}
