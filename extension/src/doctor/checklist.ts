/**
 * "OpLens: Check Setup"'s checklist: every check of the `oplens.doctor` report (doctor.ts) as an item
 * the user can act on, in the server's order and words. A passing check is shown as ok; a warning or a
 * problem carries its fix actions, the first one done when the item is picked, the others as its
 * buttons:
 *
 * - where OpLens can do the fix on the server's host (the language server runs on this machine or the
 *   Remote-SSH host, not behind `oplens.server.url`), it does it: torch missing or too old → the host's
 *   install command (the check's `command`: `backends/host.py`'s, for the device this host has) run in a
 *   terminal, or another interpreter; torch-neuronx missing → another interpreter (the Neuron DLAMI's venv);
 *   the language server not importing → Install OpLens into the Selected Environment; the backend
 *   unavailable (torch imports) → Choose Backend;
 * - every fix text can be copied (the only action for the others, and on a WebSocket server's host,
 *   which is not this one).
 *
 * What OpLens can do for a check is the server's to say (its `remedy`, and the `command` that fixes
 * it: records/doctor.py); the only words here are the buttons' labels.
 *
 * Pure: imports no `vscode`; unit-tested in checklist.test.ts.
 */

import { EXTENSION_COMMANDS } from '../../shared/names';
import type { CheckStatus, DoctorCheck, DoctorReport } from './doctor';

/** What a fix does: an OpLens command, a command line in a terminal, or the fix text to the clipboard. */
export type FixAction =
  | { kind: 'command'; title: string; command: string }
  | { kind: 'terminal'; title: string; command: string }
  | { kind: 'copy'; title: string; text: string };

export interface ChecklistItem {
  check: DoctorCheck;
  /** The product icon: `pass`, `warning` or `error`. */
  icon: 'pass' | 'warning' | 'error';
  /** Empty for a passing check (and for a problem without a fix); the first is what picking does. */
  actions: FixAction[];
}

/** How the checklist shows an item: a QuickPick row. */
export interface ChecklistRow {
  label: string;
  description: string;
  detail?: string;
}

export interface ChecklistContext {
  /** The server runs on this machine or the Remote-SSH host (stdio), so OpLens's commands and terminals reach it. */
  local: boolean;
}

const ICONS: Record<CheckStatus, ChecklistItem['icon']> = { ok: 'pass', warning: 'warning', problem: 'error' };

export const BUTTONS = {
  runInTerminal: 'Run in Terminal',
  selectInterpreter: 'Select Interpreter',
  installOplens: 'Install OpLens',
  chooseBackend: 'Choose Backend',
  copyFix: 'Copy Fix',
  showChecklist: 'Show Checklist',
  checkAgain: 'Check Again',
} as const;

const command = (title: string, id: string): FixAction => ({ kind: 'command', title, command: id });

/** The actions OpLens can do itself for this check, before Copy Fix: the server's `remedy`. */
function ownActions(check: DoctorCheck): FixAction[] {
  switch (check.remedy) {
    case 'install_torch':
      return [
        ...(check.command ? [{ kind: 'terminal', title: BUTTONS.runInTerminal, command: check.command } as const] : []),
        command(BUTTONS.selectInterpreter, EXTENSION_COMMANDS.selectInterpreter),
      ];
    case 'select_interpreter':
      return [command(BUTTONS.selectInterpreter, EXTENSION_COMMANDS.selectInterpreter)];
    case 'install_oplens':
      return [command(BUTTONS.installOplens, EXTENSION_COMMANDS.installInEnvironment)];
    case 'choose_backend':
      return [command(BUTTONS.chooseBackend, EXTENSION_COMMANDS.chooseBackend)];
    default:
      return []; // '' or a remedy this extension does not know (a newer server): the fix is copied
  }
}

/** Every check of the report, in its order, with its fix actions. */
export function checklist(report: DoctorReport, context: ChecklistContext): ChecklistItem[] {
  return report.checks.map((check) => {
    const icon = ICONS[check.status];
    if (check.status === 'ok') {
      return { check, icon, actions: [] };
    }
    const own = context.local ? ownActions(check) : [];
    const copy: FixAction[] = check.fix ? [{ kind: 'copy', title: BUTTONS.copyFix, text: check.fix }] : [];
    return { check, icon, actions: [...own, ...copy] };
  });
}

/** The row of an item: its icon and name, what was found, and for a problem its fix (one line) after what picking it does. */
export function checklistRow(item: ChecklistItem): ChecklistRow {
  const { check } = item;
  const row: ChecklistRow = { label: `$(${item.icon}) ${check.name}`, description: check.detail };
  const first = item.actions[0];
  const fix = check.fix.split('\n').join(' · ');
  if (first && fix) {
    row.detail = `${first.title}: ${fix}`;
  } else if (fix && check.status !== 'ok') {
    row.detail = fix;
  }
  return row;
}

/** The product icon of an action's button. */
export function actionIcon(action: FixAction): string {
  return action.kind === 'terminal' ? 'terminal' : action.kind === 'copy' ? 'copy' : 'tools';
}
