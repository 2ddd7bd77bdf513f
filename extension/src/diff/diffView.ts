/**
 * The results page's "vs previous run" view, from the server's `oplens.diff` answer: one row per
 * line across the edit (before line → line now, both times, the change, the verdict, the source),
 * the function's verdict in the words of the totals lens, the picker of earlier runs, and what
 * besides the edit may explain a difference. Everything is written here, so that the page only
 * draws; the verdicts themselves are the server's (`engine/diff.py`).
 *
 * Pure: imports no `vscode`; unit-tested in diffView.test.ts.
 */

import type { FunctionDiff, LineChange } from '../../shared/diff';
import { deviceLabel, fmtChange, fmtRatio, fmtUs, verdictPhrase } from '../../shared/format';
import type { DiffRow, DiffView } from '../../shared/messages';
import type { Run } from '../../shared/run';

/** `2026-12-01T10:30:00+0000` → `2026-12-01 10:30:00` (the server's local time). */
export function when(created: string): string {
  return created.replace('T', ' ').replace(/[+-]\d{4}$/, '');
}

/** A p-value as the page shows it. */
export function fmtP(p: number): string {
  return p < 1e-4 ? '< 0.0001' : p.toPrecision(2);
}

/** The view of `diff`, or why there is none (the function's first run). */
export function diffView(diff: FunctionDiff): DiffView | { message: string } {
  const { before, after, totals } = diff;
  if (!before || !totals) {
    return { message: `${after.target.qualname} has no earlier run to compare with. Edit it and profile it again: this view then shows what changed, line by line.` };
  }
  const against = diff.earlier[0]?.run_id === before.run_id ? 'previous run' : `the run of ${when(before.created)}`;
  return {
    afterRunId: after.run_id,
    beforeRunId: before.run_id,
    qualname: after.target.qualname,
    label: deviceLabel(after.backend.device_label),
    against,
    rows: diff.lines.map(row),
    totals: {
      before: fmtUs(totals.before_us),
      after: fmtUs(totals.after_us),
      change: fmtChange(totals.verdict, totals.ratio) || (totals.ratio !== null ? fmtRatio(totals.ratio) : ''),
      verdict: totals.verdict,
      phrase: verdictPhrase(totals, against),
      pValue: totals.p_value !== null ? fmtP(totals.p_value) : '',
    },
    runs: { before: runLabel(before), after: runLabel(after) },
    earlier: diff.earlier.map((e, i) => ({
      runId: e.run_id,
      label: [when(e.created) || e.run_id, `${deviceLabel(e.device_label)} ${fmtUs(e.self_device_us)}`, e.args].filter(Boolean).join(' · ') + (i === 0 ? ' (previous run)' : ''),
    })),
    notes: notes(before, after),
    method: method(diff.method, after.config.iters, before.config.iters),
  };
}

function row(c: LineChange): DiffRow {
  const before = c.verdict === 'new' ? '' : fmtUs(c.before_us);
  const after = c.verdict === 'removed' ? '' : fmtUs(c.after_us);
  const marked = fmtChange(c.verdict, c.ratio);
  const change = marked || (c.verdict === 'same' && c.ratio !== null ? fmtRatio(c.ratio) : '');
  const where = `line ${c.before_line ?? '–'} → ${c.after_line ?? '–'}`;
  const figures = [before && after ? `${before} → ${after}` : before || after, c.ratio !== null && c.verdict !== 'removed' ? `×${c.ratio.toFixed(2)}` : '', c.p_value !== null ? `p = ${fmtP(c.p_value)}` : '']
    .filter(Boolean)
    .join(', ');
  return { beforeLine: c.before_line, afterLine: c.after_line, before, after, change, verdict: c.verdict, text: c.text, title: `${where}: ${figures} (${c.verdict})` };
}

function runLabel(run: Run): string {
  return [when(run.created), run.config.args ? `args ${run.config.args}` : '', `${run.config.iters} iterations`, run.run_id].filter(Boolean).join(' · ');
}

function notes(before: Run, after: Run): string[] {
  const found: string[] = [];
  if (before.config.args !== after.config.args) {
    found.push(`The runs had different arguments (${before.config.args || 'none'}, then ${after.config.args || 'none'}): the inputs, not only the edit, may explain a change.`);
  }
  if (before.target.source && before.target.source === after.target.source) {
    found.push('The function’s text is the same in both runs: a difference comes from the machine or the inputs, not from an edit.');
  }
  return found;
}

function method(m: Record<string, unknown>, afterIters: number, beforeIters: number): string {
  const num = (key: string, fallback: number): number => (typeof m[key] === 'number' ? (m[key] as number) : fallback);
  const alpha = num('alpha', 0.01);
  const minEffect = Math.round(num('min_effect', 0.1) * 100);
  const drift = num('drift', 1);
  const beyond = drift ** num('drift_margin', 1);
  return (
    `A line is slower or faster where the Mann-Whitney test over its per-iteration times (${beforeIters} and ${afterIters} iterations) gives p < ${alpha} ` +
    `and the change is beyond ${minEffect} %, twice the line’s own spread, and the drift between the two runs: here ×${beyond.toFixed(2)}, ` +
    `from the largest move of an unchanged line (×${drift.toFixed(2)}) with a margin. Otherwise it is the same.`
  );
}
