// `oplens.importStrategy: fromEnvironment` with an interpreter that has OpLens installed (the repository's .venv): the
// server restarts from that OpLens, not the bundled one, and Profile Function still works.
import fs from 'node:fs';
import path from 'node:path';
import { step } from '../harness.mjs';
import { log, StepFailure, waitFor } from '../helpers.mjs';

export async function importStrategy(ctx) {
  const { page, python, userData } = ctx;
  const { screenshot, editorLines, codeLensTexts, rightClickOnLine, clickMenuItem, quickInputVisible, answerArgumentsUntil, openFromExplorer, workspaceRuns } = ctx.ui;
  await step('oplens.importStrategy fromEnvironment with OpLens installed in the interpreter: the server restarts from it and profiles', async () => {
    const logs = () => {
      const found = [];
      const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).forEach((e) => {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p); else if (e.name === 'OpLens.log') found.push(p);
      });
      walk(path.join(userData, 'logs'));
      return found.map((p) => fs.readFileSync(p, 'utf8')).join('\n');
    };
    // as a user sets them: the workspace's settings.json, edited and saved in the editor
    await page.keyboard.press('F1');
    await waitFor('the command palette', () => quickInputVisible(), 10000);
    await page.keyboard.type('Preferences: Open Workspace Settings (JSON)');
    await page.waitForTimeout(500);
    await page.keyboard.press('Enter');
    await waitFor('the workspace\'s settings.json in the editor', async () => /settings\.json/.test(await page.locator('.tabs-container .tab.active').first().textContent()), 15000);
    await page.locator('.monaco-editor .view-lines').filter({ visible: true }).first().click();
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(JSON.stringify({ 'oplens.importStrategy': 'fromEnvironment', 'oplens.pythonPath': python }, null, 2));
    await page.keyboard.press('Control+S');
    const started = await waitFor('the server restarted with the environment\'s OpLens', async () => {
      const line = logs().split('\n').find((l) => l.includes(`starting ${python} `));
      return line && /server ready/.test(logs().slice(logs().indexOf(line))) ? line : null;
    }, 60000, 500).catch(async (e) => {
      await screenshot('settings-json');
      throw e;
    });
    log(`after the change: ${started.replace(/^.*\] /, '').slice(0, 200)}`);
    if (/bundled OpLens/.test(started)) throw new StepFailure(`fromEnvironment still started the bundled OpLens: ${started}`);
    await openFromExplorer('rmsnorm.py');
    await waitFor('the editor to show rmsnorm.py', async () => (await editorLines()).some((l) => l.includes('return torch.rms_norm')), 30000);
    const runsBefore = new Set(workspaceRuns());
    await rightClickOnLine('return torch.rms_norm');
    await clickMenuItem(/^(OpLens: )?Profile Function$/);
    const lens = await answerArgumentsUntil('a new run of rmsnorm_fused and its totals lens (1 op)', async () => {
      const fresh = workspaceRuns().filter((r) => !runsBefore.has(r) && r.includes('rmsnorm_fused'));
      return fresh.length ? (await codeLensTexts()).find((t) => /\b1 ops?\b/.test(t) && /iters?\b/.test(t)) : null;
    });
    log(`rmsnorm_fused's lens from the environment's OpLens: ${lens}`);
  });
}
