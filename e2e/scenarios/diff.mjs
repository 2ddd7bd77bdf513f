// Edit rmsnorm_naive, save, profile it again: a ▲ hint on the edited line, the lens's verdict and the results page's
// "vs previous run" view (after profile.mjs and compare.mjs: rmsnorm_naive's earlier runs are theirs).
import { step } from '../harness.mjs';
import { log, StepFailure, waitFor } from '../helpers.mjs';

// The edit of the diff steps: x * x becomes the mean of 64 copies of it (the same values, 64 multiplies
// and 63 adds on tensors of its own size). The diff's minimum effect grows with how far the unchanged
// lines move between two runs, in the direction of the change: the edit must not move them itself.
// An earlier edit, one 64-wide broadcast, made an 8 MiB temporary whose allocation and cache misses
// slowed the lines after it 3-5× as well, so a 13× slower total could read "same".
const EDITED_FROM = 'x_sq = x * x';
const EDITED_TO = 'x_sq = sum(x * x for _ in range(64)) / 64';

export async function diff(ctx) {
  const { page } = ctx;
  const { screenshot, editorLines, codeLensTexts, rightClickOnLine, clickMenuItem, findWebviewFrame, clickOnLine, answerArgumentsUntil } = ctx.ui;
  // ---------------------------------------------------------------- edit, profile again, diff
  await step(`edit rmsnorm_naive: ${EDITED_FROM} → ${EDITED_TO}, and save`, async () => {
    await clickOnLine(EDITED_FROM);
    await page.keyboard.press('Home'); // to the first character of the code
    await page.keyboard.press('Shift+End');
    await page.keyboard.insertText(EDITED_TO); // no key events: no auto-closed brackets
    await waitFor('the edited line in the editor', async () => (await editorLines()).some((l) => l.includes(EDITED_TO)), 10000);
    await page.keyboard.press('Control+S');
    await waitFor('rmsnorm.py saved (its tab not dirty)', async () => (await page.locator('.tabs-container .tab.active.dirty').count()) === 0, 10000);
    await waitFor('the totals lens of rmsnorm_naive to say stale', async () => (await codeLensTexts()).some((t) => /stale: /.test(t)), 20000);
  });

  await step('right-click in the edited rmsnorm_naive → OpLens: Profile Function, again', async () => {
    await rightClickOnLine(EDITED_TO);
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    await answerArgumentsUntil(
      'the totals lens of the new run against the previous run (… previous run)',
      async () => (await codeLensTexts()).find((t) => /previous run/.test(t) && !/stale: /.test(t)),
    );
  });

  await step('assert: ▲ on the edited line, the lens\'s verdict, the results page\'s "vs previous run" view', async () => {
    const totals = (await codeLensTexts()).find((t) => /previous run/.test(t) && !/stale: /.test(t));
    log(`totals lens: ${totals}`);
    const rowsNow = await waitFor('the results panel', () => findWebviewFrame('vs previous run'), 30000)
      .then((f) => f.evaluate(() => document.body.innerText.split('\n').slice(0, 3).join(' ')))
      .catch(() => '');
    if (rowsNow) log(`results panel: ${rowsNow}`);
    if (!/▲ [\d.,]+(×| %) slower than previous run/.test(totals)) {
      throw new StepFailure(`the totals lens should end "▲ … slower than previous run": "${totals}"`);
    }
    const edited = await waitFor(
      `a ▲ hint at the end of the edited line (${EDITED_TO})`,
      async () => {
        const l = (await editorLines()).find((x) => x.includes(EDITED_TO));
        return l && /▲ [\d.,]+(×| %)/.test(l.slice(l.indexOf(EDITED_TO) + EDITED_TO.length)) ? l : null;
      },
      20000,
    );
    log(`hint: ${edited.trim()}`);
    const lines = await editorLines();
    for (const code of ['mean_sq = x_sq.mean', 'mean_eps = mean_sq + EPS', 'inv_rms = torch.rsqrt', 'x_norm = x * inv_rms', 'return x_norm * w']) {
      const l = lines.find((x) => x.includes(code));
      if (l) log(`hint: ${l.trim()}`);
    }
    // the editor is narrow beside the results panel: wrap its lines (View: Toggle Word Wrap, Alt+Z)
    // for the screenshot, so that the hint of the long edited line shows whole
    await clickOnLine('mean_eps = mean_sq + EPS');
    await page.keyboard.press('Alt+Z');
    await page.waitForTimeout(500);
    await screenshot('editor-diff-hints');
    await page.keyboard.press('Alt+Z');

    const frame = await waitFor('the OpLens results panel with its "vs previous run" tab', () => findWebviewFrame('vs previous run'), 30000);
    await frame.getByRole('button', { name: /vs previous run/ }).first().click();
    const row = await waitFor(
      'the "vs previous run" table with the edited line',
      async () => {
        const r = frame.locator('table.diff tbody tr', { hasText: 'range(64)' }).first();
        return (await r.count()) ? r : null;
      },
      30000,
    );
    const cells = (await row.locator('td').allInnerTexts()).map((t) => t.trim());
    log(`diff row: ${cells.join(' | ')}`);
    const verdict = (await row.locator('.verdict-tag').innerText()).trim();
    if (verdict !== 'slower') throw new StepFailure(`the edited line's verdict is "${verdict}", not slower: ${cells.join(' | ')}`);
    if (!/▲/.test(cells[4] ?? '')) throw new StepFailure(`the edited line's change should carry ▲: ${cells.join(' | ')}`);
    const summary = (await frame.locator('.diff-summary').innerText()).trim();
    log(`diff summary: ${summary}`);
    if (!/slower than previous run/.test(summary)) throw new StepFailure(`the diff's totals should say slower than previous run: ${summary}`);
    const earlierPicker = frame.locator('select[aria-label="The earlier run to compare with"]');
    const options = await earlierPicker.locator('option').allInnerTexts();
    log(`earlier runs in the picker: ${options.join(' | ')}`);
    // rmsnorm_naive ran twice before the edit: the first profile and the comparison
    if (options.length < 2) throw new StepFailure(`the picker should list the earlier runs of rmsnorm_naive: ${options.join(' | ')}`);
    for (const r of await frame.locator('table.diff tbody tr').allInnerTexts()) log(`  ${r.replace(/\s+/g, ' ').trim()}`);
    await page.waitForTimeout(300);
    await screenshot('results-vs-previous-run');

    // the picker: against the first profile of the session instead of the previous run
    await earlierPicker.selectOption({ index: options.length - 1 });
    const picked = await waitFor(
      'the diff against the earliest run',
      async () => {
        const s = frame.locator('.diff-summary');
        const t = (await s.count()) ? (await s.innerText()).trim() : '';
        return /than the run of|as the run of/.test(t) ? t : null;
      },
      30000,
    );
    log(`against the earliest run: ${picked}`);
  });
}
