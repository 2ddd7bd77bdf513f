// examples/notebook.ipynb open in VS Code's notebook editor while a real kernel runs its cells (e2e/run_notebook.py).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { step } from '../harness.mjs';
import { E2E_DIR, log, PROFILE_TIMEOUT_MS, StepFailure, TIME_RE, waitFor } from '../helpers.mjs';

export const NOTEBOOK_PASSED = 'notebook.ipynb open while a real kernel ran its cells: the %oplens run of rmsnorm_naive shown on the cell that defines it (lens, a hint on each line) with the results panel opened for it, the %%oplens cell\'s own run on that cell, the lens stale once the cell was edited, and Profile Function in the cell (the statement prefilled from the notebook; without a kernel, Insert Cell with the magic; with the kernel started, the magic run in it through the Jupyter extension\'s kernel API (a stand-in over a real ipykernel) and its run shown, a raising statement\'s error said)';
// the notebook's cells the kernel runs: %load_ext, the definitions, %oplens rmsnorm_naive(x, w), the %%oplens cell
const NOTEBOOK_CELLS = '1,2,4,10';

export async function notebookCells(ctx) {
  const { page, tmpRoot, python } = ctx;
  const { screenshot, editorLines, codeLensTexts, rightClickOnLine, clickMenuItem, quickInputVisible, clickOnLine, openFromExplorer, scrollNotebook, workspaceRuns, clearNotifications } = ctx.ui;
  const notebook = path.join(tmpRoot, 'workspace', 'notebook.ipynb');
  const body = ['x_sq = x * x', 'mean_sq = x_sq.mean', 'mean_eps = mean_sq + EPS', 'inv_rms = torch.rsqrt', 'x_norm = x * inv_rms', 'return x_norm * w'];
  // a line's lenses are one decoration ("▶ Profile | CPU 41.2 ms · 6 ops · 20 iters"): its totals part
  const totals = async () => (await codeLensTexts()).map((t) => /(?:stale: )?CPU [^|]*\bops?\b[^|]*\biters?\b[^|]*/.exec(t)?.[0]).filter(Boolean);

  await step('open notebook.ipynb: its cells in the notebook editor, ▶ Profile on the cell that defines rmsnorm_naive', async () => {
    await clearNotifications();
    await openFromExplorer('notebook.ipynb');
    await waitFor('a notebook cell with def rmsnorm_naive', async () => (await editorLines()).some((l) => l.includes('def rmsnorm_naive(')), 30000);
    await waitFor('the ▶ Profile lenses of the cell', async () => (await codeLensTexts()).filter((t) => t.includes('▶ Profile')).length >= 2, 60000);
    if ((await totals()).length) throw new StepFailure(`a run shown before the kernel ran: ${await totals()}`);
    await screenshot('notebook-open');
  });

  await step('a real kernel runs the cells (%oplens rmsnorm_naive(x, w), then the %%oplens cell): the run shows on the cell as the kernel writes it', async () => {
    const kernel = spawn(python, [path.join(E2E_DIR, 'run_notebook.py'), notebook, '--cells', NOTEBOOK_CELLS], {
      cwd: path.dirname(notebook),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    kernel.stdout.on('data', (d) => { output += d; });
    kernel.stderr.on('data', (d) => { output += d; });
    const done = new Promise((resolve) => kernel.on('close', resolve));
    const lens = await waitFor('the totals lens of rmsnorm_naive\'s run on its cell', async () => {
      if (kernel.exitCode !== null && kernel.exitCode !== 0) throw new StepFailure(`the kernel failed:\n${output.slice(-3000)}`);
      return (await totals())[0];
    }, PROFILE_TIMEOUT_MS, 500).catch(async (e) => {
      throw new StepFailure(`${e.message}; lenses: ${JSON.stringify(await codeLensTexts())}; kernel: ${output.slice(-2000)}`);
    });
    log(`on the cell: ${lens}`);
    if (!/\b6 ops\b/.test(lens) || !TIME_RE.test(lens)) throw new StepFailure(`rmsnorm_naive's lens should count 6 ops and carry a time: "${lens}"`);
    await waitFor('an inlay hint with a time at the end of each line of rmsnorm_naive in the cell', async () => {
      const lines = await editorLines();
      return body.every((code) => {
        const l = lines.find((x) => x.includes(code));
        return l && TIME_RE.test(l.slice(l.indexOf(code) + code.length));
      });
    }, 20000);
    // the panel shows the kernel's newest run: rmsnorm_naive's, then the %%oplens cell's (<cell>) a moment later
    const shown = await waitFor('the results panel, opened for the kernel\'s run', async () => {
      const tabs = await page.locator('.tabs-container .tab').allInnerTexts();
      return tabs.map((t) => t.trim()).find((t) => /^OpLens: (rmsnorm_naive|<cell>)/.test(t));
    }, 30000, 500);
    log(`results panel: ${shown}`);
    await screenshot('notebook-profiled');
    const code = await done;
    if (code !== 0) throw new StepFailure(`the kernel failed (exit ${code}):\n${output.slice(-3000)}`);
    log(`kernel: ${output.trim().split('\n').join(' | ')}`);
    await scrollNotebook(5000); // the notebook editor draws only the cells in view
    const own = await waitFor('the %%oplens cell\'s own totals lens (its 5 iterations)', async () => {
      const found = (await totals()).find((t) => /\b5 iters\b/.test(t));
      if (!found) await scrollNotebook(2000); // a wheel the notebook did not take (a hover over the margin) is tried again
      return found;
    }, 30000)
      .catch(async (e) => {
        throw new StepFailure(`${e.message}; lenses in view: ${JSON.stringify(await codeLensTexts())}; lines: ${JSON.stringify((await editorLines()).slice(-6))}`);
      });
    log(`on the %%oplens cell: ${own}`);
    await screenshot('notebook-cell-magic');
    await scrollNotebook(-5000);
  });

  await step('edit the cell that defines rmsnorm_naive: its lens says stale, its hints go', async () => {
    await clickOnLine('x_norm = x * inv_rms');
    await page.keyboard.press('End');
    await page.keyboard.type(' * 1.0');
    const stale = await waitFor('the stale lens', async () => (await totals()).find((t) => t.startsWith('stale: ')), 20000);
    log(`after the edit: ${stale}`);
    await waitFor('no hint on the edited function', async () => {
      const lines = await editorLines();
      const l = lines.find((x) => x.includes('mean_sq = x_sq.mean'));
      return l && !TIME_RE.test(l.slice(l.indexOf('keepdim')));
    }, 20000);
    await screenshot('notebook-stale');
    await waitFor('the edit undone', async () => {
      const l = (await editorLines()).find((x) => x.includes('x_norm = x * inv_rms'));
      if (l && !/inv_rms\s*\*/.test(l)) return true;
      await page.keyboard.press('Control+Z'); // typing is undone in steps
      return null;
    }, 10000, 300);
    await waitFor('the lens fresh again', async () => (await totals()).some((t) => !t.startsWith('stale') && /\b20 iters\b/.test(t)), 20000);
  });

  await step('right-click in the cell → OpLens: Profile Function: the statement prefilled from the notebook; no kernel started yet: Insert Cell', async () => {
    await clearNotifications();
    await rightClickOnLine('x_sq = x * x');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    const input = page.locator('.quick-input-widget input');
    await waitFor('the statement box', () => quickInputVisible(), 10000, 200);
    const prefilled = await input.inputValue();
    log(`statement box prefilled: ${prefilled}`);
    if (prefilled !== 'y = rmsnorm_naive(x, w)') throw new StepFailure(`the box should hold the notebook's last call of rmsnorm_naive, not "${prefilled}"`);
    await page.keyboard.press('Enter');
    const toast = page.locator('.notifications-toasts .notification-toast').filter({ hasText: 'run this in a cell' }).first();
    await toast.waitFor({ state: 'visible', timeout: 20000 });
    log(`without a kernel: ${(await toast.innerText()).replace(/\s+/g, ' ')}`);
    await toast.locator('.monaco-button', { hasText: 'Insert Cell' }).first().click();
    await waitFor('a new cell with the magic at the notebook\'s end', async () => {
      await scrollNotebook(3000);
      const lines = await editorLines();
      const at = lines.findIndex((l) => l.trim() === '%load_ext oplens');
      return at >= 0 && lines[at + 1]?.trim() === '%oplens y = rmsnorm_naive(x, w)';
    }, 20000);
    await screenshot('notebook-inserted-cell');
    await scrollNotebook(-30000);
  });

  await step('with the notebook\'s kernel started (the Jupyter stand-in finds it): Profile Function runs the magic in it, the run shows', async () => {
    const kernel = spawn(python, [path.join(E2E_DIR, 'run_notebook.py'), notebook, '--cells', '1,2', '--keep-alive'], {
      cwd: path.dirname(notebook),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    kernel.stdout.on('data', (d) => { output += d; });
    kernel.stderr.on('data', (d) => { output += d; });
    try {
      await waitFor('the kernel to run the definitions and stay up', async () => {
        if (kernel.exitCode !== null) throw new StepFailure(`the kernel ended:\n${output.slice(-3000)}`);
        return output.includes('"kernel"');
      }, 120000, 300);
      const before = new Set(workspaceRuns());
      await clearNotifications();
      await rightClickOnLine('x_sq = x * x');
      await clickMenuItem(/^(OpLens: )?Profile Function$/);
      await waitFor('the statement box', () => quickInputVisible(), 10000, 200);
      const prefilled = await page.locator('.quick-input-widget input').inputValue();
      if (prefilled !== 'y = rmsnorm_naive(x, w)') throw new StepFailure(`the box holds "${prefilled}"`);
      await page.keyboard.press('Enter');
      const made = await waitFor('the kernel\'s run of the statement on disk', async () => {
        const id = workspaceRuns().find((d) => !before.has(d) && d.includes('rmsnorm_naive'));
        return id ? JSON.parse(fs.readFileSync(path.join(tmpRoot, 'workspace', '.oplens', 'runs', id, 'result.json'), 'utf8')) : null;
      }, PROFILE_TIMEOUT_MS, 500);
      if (made.config.args !== 'y = rmsnorm_naive(x, w)') throw new StepFailure(`the run's statement is "${made.config.args}"`);
      log(`the kernel ran %oplens ${made.config.args}: run ${made.run_id}, notebook ${path.basename(made.target.notebook)}`);
      const shown = await waitFor('the results panel on rmsnorm_naive\'s new run', async () => {
        const tabs = await page.locator('.tabs-container .tab').allInnerTexts();
        return tabs.map((t) => t.trim()).find((t) => /^OpLens: rmsnorm_naive/.test(t));
      }, 30000, 500);
      log(`results panel: ${shown}; lens: ${(await totals()).join(' | ')}`);

      // a statement that raises: the kernel's error, said as such
      await rightClickOnLine('x_sq = x * x');
      await clickMenuItem(/^(OpLens: )?Profile Function$/);
      await waitFor('the statement box', () => quickInputVisible(), 10000, 200);
      await page.locator('.quick-input-widget input').fill('rmsnorm_naive(x)');
      await page.keyboard.press('Enter');
      const said = await waitFor('the kernel\'s error as a notification', async () => {
        const toasts = (await page.locator('.notifications-toasts .notification-toast').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
        return toasts.find((t) => /rmsnorm_naive in the kernel: TypeError/.test(t));
      }, 60000, 500);
      log(`a raising statement: ${said}`);
      await screenshot('notebook-kernel-api');
      await clearNotifications();
    } finally {
      kernel.stdin.end();
      await new Promise((resolve) => { if (kernel.exitCode !== null) resolve(); else kernel.on('close', resolve); });
    }
  });
}
