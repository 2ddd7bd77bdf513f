/**
 * "OpLens: Check Setup": the `oplens.doctor` answer (`oplens doctor --json -` on the server's host:
 * `{backend, checks [{name, status, detail, fix, remedy, command}], usable}`) off the wire, as the output channel's
 * lines and as the notification of its verdict.
 *
 * Pure: imports no `vscode`; unit-tested in doctor.test.ts.
 */

import type { Action, Problem } from '../problems/problems';
import { Reader, RunParseError } from '../runs/parseRun';

export const CHECK_STATUSES = ['ok', 'warning', 'problem'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

export interface DoctorCheck {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to do where the status is not ok ('' where there is nothing to do). */
  fix: string;
  /** What the editor can do about it itself (records/doctor.py's `Remedy`; '' where only the fix can be shown). */
  remedy: string;
  /** The command line that fixes it, where one does (the host's torch install). */
  command: string;
}

export interface DoctorReport {
  backend: string;
  checks: DoctorCheck[];
  /** Profiling works on that host: no check is a problem (warnings allowed). */
  usable: boolean;
}

const MARKS: Record<CheckStatus, string> = { ok: '✓', warning: '!', problem: '✗' };
const NAME_WIDTH = 28; // as `oplens doctor` lines them up

const check = (r: Reader): DoctorCheck => {
  const status = r.str('status');
  if (!(CHECK_STATUSES as readonly string[]).includes(status)) {
    throw new RunParseError(r.where('status'), `should be one of ${CHECK_STATUSES.join(', ')}, not ${JSON.stringify(status)}`);
  }
  return {
    name: r.str('name'),
    status: status as CheckStatus,
    detail: r.str('detail', ''),
    fix: r.str('fix', ''),
    remedy: r.str('remedy', ''),
    command: r.str('command', ''),
  };
};

/** The `oplens.doctor` answer, checked field by field (unknown keys ignored). */
export function parseDoctorReport(result: unknown): DoctorReport {
  const r = Reader.of(result, 'doctor report');
  const checks = r.list('checks', check, false);
  return { backend: r.str('backend'), checks, usable: r.bool('usable', !checks.some((c) => c.status === 'problem')) };
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The output's first line, and the checklist's title. */
export function reportHeading(report: DoctorReport, where: string): string {
  return `OpLens: Check Setup · backend ${report.backend} · ${where}`;
}

/** The output channel's lines: a heading, one line per check (its fix beneath where not ok), the verdict. */
export function reportLines(report: DoctorReport, where: string): string[] {
  const lines = [reportHeading(report, where)];
  for (const c of report.checks) {
    lines.push(`  ${MARKS[c.status]} ${c.name.padEnd(NAME_WIDTH)} ${c.detail}`.trimEnd());
    if (c.fix && c.status !== 'ok') {
      c.fix.split('\n').forEach((line, i) => lines.push(`    ${' '.repeat(NAME_WIDTH)} ${i === 0 ? 'fix: ' : '     '}${line}`));
    }
  }
  lines.push(verdictLine(report));
  return lines;
}

/** The output's last line, and the checklist's placeholder. */
export function verdictLine(report: DoctorReport): string {
  const problems = report.checks.filter((c) => c.status === 'problem');
  const warnings = report.checks.filter((c) => c.status === 'warning');
  if (report.usable) {
    return `usable${warnings.length ? ` (${plural(warnings.length, 'warning')})` : ''}: profiling on ${report.backend} works on this host`;
  }
  return `not usable: ${plural(problems.length, 'problem')} (${problems.map((c) => c.name).join(', ')})`;
}

/** The notification: usable or not, and the first problem (else warning) with its fix. */
export function doctorVerdict(report: DoctorReport, where: string): Problem {
  const problems = report.checks.filter((c) => c.status === 'problem');
  const warnings = report.checks.filter((c) => c.status === 'warning');
  const showOutput: Action = { kind: 'showOutput', title: 'Show Output' };
  const on = `${report.backend} on ${where}`;
  if (report.usable && warnings.length === 0) {
    return { severity: 'info', message: `OpLens: ready to profile (${on}): all ${plural(report.checks.length, 'check')} passed.`, actions: [showOutput] };
  }
  const first = problems[0] ?? warnings[0];
  const fix = first?.fix ? ` Fix: ${first.fix.split('\n')[0]}` : '';
  const actions: Action[] = [showOutput];
  if (first?.fix) {
    actions.push({ kind: 'copy', title: 'Copy Fix', text: first.fix });
  }
  const what = first ? `${first.name}: ${first.detail.replace(/\.$/, '')}` : 'see the output';
  if (report.usable) {
    const message = `OpLens: usable (${on}), with ${plural(warnings.length, 'warning')}: ${what}.${fix}`;
    return { severity: 'warning', message, actions };
  }
  const more = problems.length > 1 ? ` (and ${plural(problems.length - 1, 'other problem')})` : '';
  const message = `OpLens cannot profile (${on}): ${what}${more}.${fix}`;
  return { severity: 'error', message, actions };
}
