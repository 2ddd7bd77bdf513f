// Profile Function on a function that sleeps (sleeps.py): the sleep line's hint says its time outside operators, and
// the results page's first insight names that line; then rmsnorm.py is the active editor again.
import { step } from '../harness.mjs';
import { log, StepFailure, waitFor } from '../helpers.mjs';

export const WALL_PASSED = 'a line that sleeps shown with its time outside operators (its hint) and named by the results page\'s first insight';

export async function wallTime(ctx) {
  const { editorLines, codeLensTexts, rightClickOnLine, clickMenuItem, clickOnLine, answerArgumentsUntil, openFromExplorer,
    findWebviewFrame, screenshot } = ctx.ui;
  await step('open sleeps.py', async () => {
    await clickOnLine('mean_eps = mean_sq + EPS');
    await openFromExplorer('sleeps.py');
    await waitFor('the editor to show sleeps.py', async () => (await editorLines()).some((l) => l.includes('time.sleep(0.05)')), 30000);
  });

  await step('right-click in sleeps → OpLens: Profile Function; the sleep line says its time outside operators', async () => {
    await rightClickOnLine('y = X * 2');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    await answerArgumentsUntil(
      'the CodeLens totals line over sleeps',
      async () => (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && /iters?\b/.test(t)),
      null,
      '',
    );
    const hint = await waitFor('a hint "… ms outside ops" at the end of the sleep line', async () => {
      const line = (await editorLines()).find((l) => l.includes('time.sleep(0.05)'));
      return line && /\d[\d.,]* ms outside ops/.test(line) ? line : null;
    }, 20000);
    log(`hint: ${hint.trim()}`);
    await screenshot('editor-wall-hint');
  });

  await step('the results page: its first insight names the sleep line, outside any operator', async () => {
    // the page opens on the view it last showed (the diff scenario's "vs previous run"): this run's view first
    const page = await waitFor('the results panel of sleeps', () => findWebviewFrame('This run'), 30000);
    await page.getByRole('button', { name: /^This run$/ }).first().click();
    const frame = await waitFor('the results panel with an insight "outside any operator"', () => findWebviewFrame('outside any operator'), 30000);
    const first = (await frame.locator('li.insight').first().innerText()).replace(/\s+/g, ' ');
    log(`first insight: ${first}`);
    if (!/^L11(?!\d)/.test(first) || !/outside any operator/.test(first)) {
      throw new StepFailure(`the first insight does not name line 11 outside any operator: "${first}"`);
    }
    const walls = await frame.locator('.chart-row .num.wall').count();
    if (walls < 3) throw new StepFailure(`the lines' wall column has ${walls} cells, not one per line of sleeps`);
    await screenshot('results-wall');
  });

  await step('back to rmsnorm.py', async () => {
    await clickOnLine('y = X * 2'); // the editor group of sleeps.py active again (the page's button took the focus)
    await openFromExplorer('rmsnorm.py');
    await waitFor('the editor to show rmsnorm.py', async () => (await editorLines()).some((l) => l.includes('mean_eps = mean_sq + EPS')), 30000);
  });
}
