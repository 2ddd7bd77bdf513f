/**
 * Check Setup's checklist: a QuickPick of every check of the report (checklist.ts), each with its
 * status icon; picking a warning or a problem does its first fix action (an OpLens command, the
 * host's command in a terminal, or the fix copied), its buttons the others; the title's button
 * runs Check Setup again.
 *
 * VS Code glue: imports `vscode`; its model is checklist.ts.
 */

import * as vscode from 'vscode';
import { EXTENSION_COMMANDS } from '../../shared/names';
import { actionIcon, BUTTONS, checklistRow, type ChecklistItem, type FixAction } from './checklist';

interface Row extends vscode.QuickPickItem {
  item: ChecklistItem;
}

export async function doFix(action: FixAction): Promise<void> {
  switch (action.kind) {
    case 'command':
      await vscode.commands.executeCommand(action.command);
      return;
    case 'terminal': {
      const terminal = vscode.window.createTerminal({ name: 'OpLens' });
      terminal.show();
      terminal.sendText(action.command);
      return;
    }
    case 'copy':
      await vscode.env.clipboard.writeText(action.text);
      void vscode.window.showInformationMessage(`Copied: ${action.text}`);
      return;
  }
}

/** Shows the checklist; resolves once it is closed (Escape, or a fix started: its failure goes to the log). */
export function showChecklist(items: readonly ChecklistItem[], title: string, placeholder: string, log: vscode.LogOutputChannel): Promise<void> {
  const pick = vscode.window.createQuickPick<Row>();
  pick.title = title;
  pick.placeholder = placeholder;
  pick.matchOnDescription = true;
  pick.matchOnDetail = true;
  const again: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('refresh'), tooltip: BUTTONS.checkAgain };
  pick.buttons = [again];
  pick.items = items.map((item) => ({
    ...checklistRow(item),
    item,
    buttons: item.actions.map((action) => ({ iconPath: new vscode.ThemeIcon(actionIcon(action)), tooltip: action.title })),
  }));
  let chosen: FixAction | string | undefined;
  return new Promise<void>((resolve) => {
    pick.onDidAccept(() => {
      const action = pick.selectedItems[0]?.item.actions[0];
      if (action) {
        chosen = action;
        pick.hide();
      }
    });
    pick.onDidTriggerItemButton((e) => {
      // the button's action, by its label (unique within a row)
      chosen = e.item.item.actions.find((a) => a.title === e.button.tooltip);
      if (chosen) {
        pick.hide();
      }
    });
    pick.onDidTriggerButton(() => {
      chosen = EXTENSION_COMMANDS.checkSetup;
      pick.hide();
    });
    pick.onDidHide(() => {
      pick.dispose();
      resolve();
      if (chosen !== undefined) {
        const next = typeof chosen === 'string' ? vscode.commands.executeCommand(chosen) : doFix(chosen);
        Promise.resolve(next).catch((e: unknown) => log.error(`Check Setup: ${(e as Error).message ?? String(e)}`));
      }
    });
    pick.show();
  });
}
