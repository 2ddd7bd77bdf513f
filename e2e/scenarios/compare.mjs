// Compare Functions… on the three variants of rmsnorm.py, measured side by side: a speed-up for each, with its
// 95 % interval and verdict, and how they were measured.
import { step } from '../harness.mjs';
import { ARGS_EXPR, log, PROFILE_TIMEOUT_MS, StepFailure, waitFor } from '../helpers.mjs';

export async function compare(ctx) {
  const { page } = ctx;
  const { screenshot, rightClickOnLine, clickMenuItem, quickInputVisible, findWebviewFrame } = ctx.ui;
  // ---------------------------------------------------------------- compare the three variants
  await step('Compare Functions… rmsnorm_naive, rmsnorm_fused, rmsnorm_compiled', async () => {
    // Focus the code editor, then run the command from the editor context menu.
    await rightClickOnLine('x_sq = x * x');
    await clickMenuItem(/^(OpLens: )?Compare Functions/);
    const wanted = ['rmsnorm_naive', 'rmsnorm_fused', 'rmsnorm_compiled'];
    let argsAnswered = 0;
    let picked = false;
    const deadline = Date.now() + PROFILE_TIMEOUT_MS;
    const frame = await waitFor(
      'the comparison summary with speed-ups',
      async () => {
        if (await quickInputVisible()) {
          const widget = page.locator('.quick-input-widget');
          const text = await widget.innerText();
          const rowsLoc = widget.locator('.quick-input-list .monaco-list-row').filter({ visible: true });
          const rowCount = await rowsLoc.count();
          if (!picked && rowCount > 0) {
            // A multi-pick of functions (rows with role=checkbox): tick the three variants and accept.
            await screenshot('compare-pick');
            const labels = (await rowsLoc.allInnerTexts()).map((l) => l.replace(/\s+/g, ' ').trim());
            log(`compare pick offers: ${labels.join(' | ')}`);
            const multi = (await rowsLoc.first().getAttribute('role')) === 'checkbox';
            if (!multi) throw new StepFailure(`the compare picker is single-choice; this harness expects a multi-pick: ${text.slice(0, 300)}`);
            for (const name of wanted) {
              // the row's label (IconLabel .label-name) is the function's name; its description follows it
              const row = rowsLoc.filter({ has: page.locator('.label-name', { hasText: new RegExp(`^\\s*${name}\\s*$`) }) }).first();
              if (!(await row.count())) throw new StepFailure(`the compare picker does not offer ${name}: ${labels.join(' | ')}`);
              if ((await row.getAttribute('aria-checked')) !== 'true') await row.locator('.quick-input-list-label').first().click();
              await waitFor(`${name} to be ticked`, async () => (await row.getAttribute('aria-checked')) === 'true', 5000, 200);
            }
            const ticked = [];
            for (let i = 0; i < rowCount; i++) {
              if ((await rowsLoc.nth(i).getAttribute('aria-checked')) === 'true') ticked.push(labels[i]);
            }
            log(`ticked: ${ticked.join(' | ')}`);
            await screenshot('compare-picked');
            await page.keyboard.press('Enter');
            picked = true;
          } else if (rowCount === 0 && argsAnswered < 3) {
            const input = widget.locator('input');
            const value = await input.inputValue();
            log(`argument box: ${text.replace(/\s+/g, ' ').slice(0, 160)} [prefilled: ${value}]`);
            await input.fill(ARGS_EXPR);
            await page.keyboard.press('Enter');
            argsAnswered++;
          }
        }
        const errors = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
        const err = errors.find((t) => /error|failed|cannot|could not/i.test(t) && /oplens/i.test(t));
        if (err) throw new StepFailure(`the extension reported: ${err.replace(/\s+/g, ' ')}`);
        const f = await findWebviewFrame('rmsnorm_fused');
        if (!f) return null;
        const body = await f.evaluate(() => document.body.innerText);
        return body.includes('rmsnorm_compiled') && /speed-?up/i.test(body) && /\d\s?×/.test(body) ? f : null;
      },
      deadline - Date.now(),
      1000,
    );
    const body = await frame.evaluate(() => document.body.innerText);
    log(`comparison: ${body.replace(/\s+/g, ' ').slice(0, 400)}`);
    // One speed-up per variant (N.NN×, the baseline 1.00×): from the table's speed-up cells when
    // the panel marks them, else from the text.
    let speedups = (await frame.locator('td.speedup').allInnerTexts()).map((t) => t.trim());
    if (!speedups.length) speedups = body.match(/\d+(?:\.\d+)?\s?×/g) || [];
    log(`speed-ups shown: ${speedups.join(', ')}`);
    const figures = speedups.map((t) => Number.parseFloat(t)).filter((x) => Number.isFinite(x) && x > 0);
    if (figures.length < wanted.length) {
      throw new StepFailure(`the comparison should show a speed-up for each of the ${wanted.length} variants, found ${JSON.stringify(speedups)}:\n${body.slice(0, 1500)}`);
    }
    const verdicts = (await frame.locator('td.verdict').allInnerTexts()).map((t) => t.trim());
    log(`verdicts shown: ${verdicts.join(', ')}`);
    const allowed = ['faster', 'slower', 'no measurable difference'];
    if (verdicts.length !== wanted.length || verdicts[0] !== 'baseline' || !verdicts.slice(1).every((v) => allowed.includes(v))) {
      throw new StepFailure(`each variant should have a verdict (the first the baseline), found ${JSON.stringify(verdicts)}`);
    }
    if (!/95 % interval/.test(body) || !/side by side in one worker/.test(body)) {
      throw new StepFailure(`the comparison should show the speed-ups' intervals and how the variants were measured:\n${body.slice(0, 1500)}`);
    }
    await screenshot('compare-summary');
  });
}
