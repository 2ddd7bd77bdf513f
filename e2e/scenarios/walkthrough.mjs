// The Get Started walkthrough: opened from the palette, its first step's button runs Select Python Interpreter…
// (here, without the Python extension, OpLens's own pick); then rmsnorm.py is the active editor again.
import { step } from '../harness.mjs';
import { log, waitFor } from '../helpers.mjs';

export async function walkthrough(ctx) {
  const { page } = ctx;
  const { screenshot, editorLines, quickInputVisible, clickOnLine, openFromExplorer } = ctx.ui;
  await step('Welcome: Open Walkthrough… → Get started with OpLens; its first step\'s button runs Select Python Interpreter…', async () => {
    await clickOnLine('mean_eps = mean_sq + EPS');
    await page.keyboard.press('F1');
    await waitFor('the command palette', () => quickInputVisible(), 10000);
    await page.keyboard.type('Welcome: Open Walkthrough');
    await page.waitForTimeout(500);
    await page.keyboard.press('Enter');
    const ours = page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Get started with OpLens' });
    await waitFor('"Get started with OpLens" among the walkthroughs', async () => (await ours.count()) > 0, 15000);
    await ours.first().click();
    await waitFor('the walkthrough page with its first step', async () => (await page.getByText('Choose the interpreter with your PyTorch').count()) > 0, 15000);
    await screenshot('walkthrough');
    await page.getByRole('button', { name: 'Select Interpreter' }).first().click();
    await waitFor('OpLens\'s interpreter pick', async () => (await quickInputVisible())
      && /interpreter with your PyTorch/.test(await page.locator('.quick-input-widget').innerText()), 10000);
    log(`interpreter pick: ${(await page.locator('.quick-input-widget').innerText()).replace(/\s+/g, ' ').slice(0, 200)}`);
    await screenshot('walkthrough-select-interpreter');
    await page.keyboard.press('Escape');
    await openFromExplorer('rmsnorm.py');
    await waitFor('the editor to show rmsnorm.py', async () => (await editorLines()).some((l) => l.includes('mean_eps = mean_sq + EPS')), 30000);
  });
}
