// Profile Function in Program… as a Slurm job: the real Slurm of two emulated nodes the harness started
// (tests/support/slurmlab.py), a gloo DDP program (tests/data/programs/ddp_train.py) under torchrun on each node; the
// merged run of 4 ranks annotates train_step and the results page groups its ranks by node.
import fs from 'node:fs';
import path from 'node:path';
import { step } from '../harness.mjs';
import { answerWhere, CAPTURED_5, log, REPO, StepFailure, waitFor } from '../helpers.mjs';

export const SLURM_PASSED = 'train_step captured as a Slurm job of two emulated nodes (4 ranks merged, its ranks grouped by node on the results page)';
const PROGRAM = '-m torch.distributed.run --nproc-per-node 2 ddp_train.py --steps 20 --slow-rank 3';

export async function slurmJob(ctx) {
  if (ctx.slurmMissing) {
    log(`the Slurm scenario is skipped: ${ctx.slurmMissing}`);
    return false;
  }
  const { page, workspace } = ctx;
  const { editorLines, codeLensTexts, rightClickOnLine, clickMenuItem, quickInputVisible, clickOnLine, openFromExplorer,
    findWebviewFrame, screenshot, clearNotifications } = ctx.ui;
  await step('open ddp_train.py (a DDP training program, copied into the workspace)', async () => {
    fs.copyFileSync(path.join(REPO, 'tests', 'data', 'programs', 'ddp_train.py'), path.join(workspace, 'ddp_train.py'));
    await clearNotifications();
    await openFromExplorer('ddp_train.py');
    await waitFor('the editor to show ddp_train.py', async () => (await editorLines()).some((l) => l.includes('def train_step(')), 30000);
  });

  await step('right-click in train_step → Profile Function in Program… → a typed program → As a Slurm job… → -N2', async () => {
    await rightClickOnLine('out = model(x)');
    await clickMenuItem(/^(OpLens: )?Profile Function in Program…$/);
    const widget = page.locator('.quick-input-widget');
    const rows = widget.locator('.quick-input-list .monaco-list-row').filter({ visible: true });
    await waitFor('the program picker', async () => (await quickInputVisible()) && (await rows.count()) > 0, 20000, 200);
    await rows.filter({ hasText: 'Enter a script or module' }).first().locator('.quick-input-list-label').first().click();
    await waitFor('the program input box', async () => (await quickInputVisible()) && (await rows.count()) === 0, 10000, 200);
    await widget.locator('input').fill(PROGRAM);
    await page.keyboard.press('Enter');
    await waitFor('the "where" picker', async () => (await rows.allInnerTexts()).some((t) => t.includes('As a Slurm job')), 20000, 200);
    const labels = (await rows.allInnerTexts()).map((l) => l.replace(/\s+/g, ' ').trim());
    log(`where picker offers: ${labels.join(' | ')}`);
    await screenshot('slurm-where');
    await answerWhere(ctx, '-N2');
  });

  await step('wait for the merged run of the job: the totals lens over train_step, 4 ranks', async () => {
    const lens = await waitFor(
      'the CodeLens totals line over train_step (… 5 calls)',
      async () => {
        const toasts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
        const err = toasts.find((t) => /error|failed|cannot|could not|never called/i.test(t) && /oplens/i.test(t));
        if (err) throw new StepFailure(`the extension reported: ${err.replace(/\s+/g, ' ')}`);
        return (await codeLensTexts()).find((t) => /\bCPU\b/.test(t) && CAPTURED_5.test(t));
      },
      240000,
      500,
    );
    log(`lens: ${lens}`);
    await screenshot('slurm-editor');
  });

  await step('the results page groups the ranks by node (n1, n2)', async () => {
    const frame = await waitFor('the results panel with the ranks of node n2', () => findWebviewFrame('node n2'), 60000);
    const heads = await frame.locator('.strip-node').allInnerTexts();
    if (heads.join(',') !== 'node n1,node n2') throw new StepFailure(`the strip's node headings are ${heads.join(', ')}`);
    const ranks = await frame.locator('.strip-rank').allInnerTexts();
    if (ranks.length !== 4) throw new StepFailure(`the strip has ${ranks.length} ranks, not 4: ${ranks.join(', ')}`);
    await screenshot('slurm-results-ranks');
  });

  await step('back to rmsnorm.py', async () => {
    await clickOnLine('out = model(x)');
    await openFromExplorer('rmsnorm.py');
    await waitFor('the editor to show rmsnorm.py', async () => (await editorLines()).some((l) => l.includes('mean_eps = mean_sq + EPS')), 30000);
  });
  return true;
}
