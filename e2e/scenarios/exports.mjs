// The run where users already look, from the results page of rmsnorm_naive's run: Open in Perfetto opens the server's
// one-shot page in a new tab, whose button hands the trace to a stand-in of Perfetto UI's documented handler
// (e2e/standins/perfetto.mjs); Flame graph opens the bundled
// speedscope on the run's stacks (it renders, no "Something went wrong"), a frame's line opens in the editor (Ctrl+click
// on the chart, a click on a stack line's file:line).
import { step } from '../harness.mjs';
import { log, StepFailure, waitFor } from '../helpers.mjs';

export const EXPORTS_PASSED = 'the flame graph in the bundled speedscope (a frame\'s Ctrl+click and a stack line\'s click open their lines), and Open in Perfetto handing the trace to a stand-in of the UI by PING/PONG';

/** The status bar's "Ln N" (the editor's cursor line). */
async function cursorLine(ctx) {
  const m = /Ln (\d+)/.exec(await ctx.ui.statusBarText());
  return m ? Number(m[1]) : null;
}

export async function exportViews(ctx) {
  const { page } = ctx;
  const { findWebviewFrame, screenshot, clickOnLine } = ctx.ui;
  await step('Open in Perfetto: the one-shot page in a new tab hands the trace to Perfetto UI (its stand-in)', async () => {
    const results = await waitFor('the results page of rmsnorm_naive', () => findWebviewFrame('Profile again'), 30000);
    const opened = ctx.browser.waitForEvent('page', { timeout: 30000 });
    await results.getByRole('button', { name: /^Open in Perfetto$/ }).first().click();
    const oneShot = await opened;
    await oneShot.waitForLoadState('domcontentloaded');
    log(`the page: ${oneShot.url()}`);
    const button = oneShot.getByRole('button', { name: /Open in Perfetto/ });
    await waitFor('its button enabled (the trace fetched)', async () => (await button.count()) > 0 && (await button.isEnabled()), 20000);
    const ui = ctx.browser.waitForEvent('page', { timeout: 20000 });
    await button.click();
    const uiPage = await ui;
    await waitFor('the stand-in to get the trace', async () => ctx.perfetto.got.length > 0, 20000);
    const got = ctx.perfetto.got[0];
    log(`Perfetto UI stand-in got ${got.fileName} (${got.bytes} bytes) titled "${got.title}"`);
    if (!(got.bytes > 100) || !/rmsnorm_naive/.test(got.title)) throw new StepFailure(`the stand-in got ${JSON.stringify(got)}`);
    await uiPage.close();
    await oneShot.close();
  });

  let flame;
  await step('the results page → Flame graph: speedscope renders the run by line', async () => {
    const results = await waitFor('the results page of rmsnorm_naive', () => findWebviewFrame('Profile again'), 30000);
    await results.getByRole('button', { name: /^Flame graph$/ }).first().click();
    flame = await waitFor('the flame graph (speedscope, its Left Heavy view, the server\'s hint)', async () => {
      const f = await findWebviewFrame('Left Heavy');
      return f && (await f.evaluate(() => document.body.innerText)).includes('Ctrl+click') ? f : null;
    }, 30000);
    const text = await flame.evaluate(() => document.body.innerText);
    if (/Something went wrong/.test(text)) throw new StepFailure(`speedscope could not read the run's file:\n${text.slice(0, 800)}`);
    if (!/self CPU time per call/.test(text)) throw new StepFailure(`the flame graph does not open on self CPU time by line:\n${text.slice(0, 400)}`);
    await screenshot('flame-graph');
  });

  await step('Ctrl+click a line\'s frame in the chart: the editor goes to that line', async () => {
    const box = await flame.locator('canvas').first().boundingBox();
    let found = null;
    // the chart (function → line → op, widest first): hover down the left edge until the tooltip names a line frame
    for (let y = box.y + 110; y < box.y + box.height - 150 && !found; y += 6) {
      await page.mouse.move(box.x + 20, y);
      await page.waitForTimeout(60);
      const tip = await flame.evaluate(() => {
        for (const el of document.querySelectorAll('div')) {
          const t = el.textContent ?? '';
          if (el.childElementCount === 0 && /rmsnorm\.py:\d+$/.test(t) && el.parentElement?.querySelector(':scope > span')) return el.parentElement.textContent;
        }
        return null;
      });
      if (tip && /\bL\d+ /.test(tip)) found = { y, tip, line: Number(/rmsnorm\.py:(\d+)$/.exec(tip)[1]) };
    }
    if (!found) throw new StepFailure('no line frame under the chart\'s left edge (the tooltip never named an L<n> frame)');
    log(`hovered: ${found.tip}`);
    await page.keyboard.down('Control');
    await page.mouse.click(box.x + 20, found.y);
    await page.keyboard.up('Control');
    await waitFor(`the editor's cursor on line ${found.line}`, async () => (await cursorLine(ctx)) === found.line, 15000);
  });

  await step('click a stack line\'s file:line under the chart: the editor goes to that line', async () => {
    const box = await flame.locator('canvas').first().boundingBox();
    await page.mouse.click(box.x + 20, box.y + 110 + 40); // select a frame: its stack shows under the chart
    const stackLine = flame.getByText(/\(.*rmsnorm\.py:\d+\)$/).last();
    await waitFor('a stack line with rmsnorm.py:<line> under the chart', async () => (await stackLine.count()) > 0, 10000);
    const text = await stackLine.innerText();
    const line = Number(/rmsnorm\.py:(\d+)\)$/.exec(text)[1]);
    await clickOnLine('EPS = 1e-6'); // the cursor elsewhere first, so that the jump is seen
    await stackLine.click();
    await waitFor(`the editor's cursor on line ${line} (${text.trim()})`, async () => (await cursorLine(ctx)) === line, 15000);
    await screenshot('flame-graph-jump');
  });

  await step('back to rmsnorm.py (the flame graph closed)', async () => {
    await clickOnLine('EPS = 1e-6');
    const tabs = page.locator('.tabs-container .tab', { hasText: /Flame graph/ });
    if ((await tabs.count()) > 0) {
      await tabs.first().click();
      await page.keyboard.press('Control+W');
    }
    await clickOnLine('mean_eps = mean_sq + EPS');
  });
}
