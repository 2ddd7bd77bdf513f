// Profile Function in a module of a package (tinypkg/mlp.py, which imports `.activations`): imported as the program
// imports it, its lines profiled; then rmsnorm.py is the active editor again.
import { step } from '../harness.mjs';
import { log, TIME_RE, waitFor } from '../helpers.mjs';

export async function packageModule(ctx) {
  const { page } = ctx;
  const { screenshot, editorLines, codeLensTexts, rightClickOnLine, clickMenuItem, clickOnLine, answerArgumentsUntil, openFromExplorer } = ctx.ui;
  await step('open tinypkg/mlp.py (a package module with a relative import)', async () => {
    await clickOnLine('mean_eps = mean_sq + EPS');
    await openFromExplorer('tinypkg');
    await waitFor('tinypkg\'s files in the explorer', async () => (await page.locator('.explorer-folders-view .label-name', { hasText: /^mlp\.py$/ }).count()) > 0, 10000);
    await openFromExplorer('mlp.py');
    await waitFor('the editor to show mlp.py with def forward', async () => (await editorLines()).some((l) => l.includes('g = swish(self.gate(x))')), 30000);
  });

  await step('right-click in GatedMLP.forward → OpLens: Profile Function; its lines get their hints', async () => {
    await rightClickOnLine('u = self.up(x)');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    await answerArgumentsUntil(
      'the CodeLens totals line over GatedMLP.forward',
      async () => (await codeLensTexts()).find((t) => /\bops?\b/.test(t) && /iters?\b/.test(t)),
      null,
      'make_inputs()',
    );
    const lines = await waitFor('a hint with a time on each of the three lines of GatedMLP.forward', async () => {
      const all = await editorLines();
      const body = ['g = swish(self.gate(x))', 'u = self.up(x)', 'return self.down(g * u)'];
      const hinted = body.map((code) => [code, all.find((x) => x.includes(code))])
        .filter(([code, l]) => l && TIME_RE.test(l.slice(l.indexOf(code) + code.length))).map(([, l]) => l);
      return hinted.length === body.length ? hinted : null;
    }, 20000);
    for (const l of lines) log(`hint: ${l.trim()}`);
    await screenshot('package-module-profiled');
  });

  await step('back to rmsnorm.py', async () => {
    await openFromExplorer('rmsnorm.py');
    await waitFor('the editor to show rmsnorm.py', async () => (await editorLines()).some((l) => l.includes('mean_eps = mean_sq + EPS')), 30000);
  });
}
