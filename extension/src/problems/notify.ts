/**
 * Shows a `Problem` (problems.ts): logs it with its detail to the OpLens output, shows the
 * message with its actions as buttons, and does what the chosen button says.
 *
 * VS Code glue: imports `vscode`; its model is problems.ts.
 */

import * as vscode from 'vscode';
import type { Action, Problem } from './problems';

/** Actions that need a part of the extension (the others are done here). */
export interface ActionHandlers {
  restartServer?: () => unknown;
  setToken?: () => unknown;
  editArguments?: () => unknown;
  retryWithBackend?: (backend: string) => unknown;
  /** Profile Function in Program…: pick the program again. */
  pickProgram?: () => unknown;
  /** Install OpLens into the server's interpreter from the bundled wheels, then restart the server. */
  installOplens?: () => unknown;
}

export class Notifier {
  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly shared: ActionHandlers = {},
  ) {}

  /** Register the handlers that exist only once the extension is wired. */
  setShared(handlers: ActionHandlers): void {
    Object.assign(this.shared, handlers);
  }

  async show(problem: Problem, local: ActionHandlers = {}): Promise<void> {
    const logLine = problem.detail ? `${problem.message}\n${problem.detail}` : problem.message;
    if (problem.severity === 'error') {
      this.log.error(logLine);
    } else if (problem.severity === 'warning') {
      this.log.warn(logLine);
    } else {
      this.log.info(logLine);
    }
    const handlers = { ...this.shared, ...local };
    const actions = problem.actions.filter((a) => this.available(a, handlers));
    const show =
      problem.severity === 'error'
        ? vscode.window.showErrorMessage
        : problem.severity === 'warning'
          ? vscode.window.showWarningMessage
          : vscode.window.showInformationMessage;
    const chosen = await show(problem.message, ...actions.map((a) => a.title));
    const action = actions.find((a) => a.title === chosen);
    if (action) {
      await this.run(action, handlers);
    }
  }

  private available(a: Action, h: ActionHandlers): boolean {
    switch (a.kind) {
      case 'restartServer':
        return h.restartServer !== undefined;
      case 'setToken':
        return h.setToken !== undefined;
      case 'editArguments':
        return h.editArguments !== undefined;
      case 'retryWithBackend':
        return h.retryWithBackend !== undefined;
      case 'pickProgram':
        return h.pickProgram !== undefined;
      case 'installOplens':
        return h.installOplens !== undefined;
      case 'selectInterpreter':
        return vscode.extensions.getExtension('ms-python.python') !== undefined;
      default:
        return true;
    }
  }

  private async run(a: Action, h: ActionHandlers): Promise<void> {
    switch (a.kind) {
      case 'restartServer':
        await h.restartServer?.();
        return;
      case 'setToken':
        await h.setToken?.();
        return;
      case 'editArguments':
        await h.editArguments?.();
        return;
      case 'retryWithBackend':
        await h.retryWithBackend?.(a.backend);
        return;
      case 'pickProgram':
        await h.pickProgram?.();
        return;
      case 'installOplens':
        await h.installOplens?.();
        return;
      case 'showOutput':
        this.log.show(true);
        return;
      case 'runInTerminal': {
        const terminal = vscode.window.createTerminal({ name: 'OpLens' });
        terminal.show();
        terminal.sendText(a.command);
        return;
      }
      case 'copy':
        await vscode.env.clipboard.writeText(a.text);
        void vscode.window.showInformationMessage(`Copied: ${a.text}`);
        return;
      case 'openSettings':
        await vscode.commands.executeCommand('workbench.action.openSettings', a.setting);
        return;
      case 'selectInterpreter':
        await vscode.commands.executeCommand('python.setInterpreter');
        return;
      case 'revealLocation': {
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(a.uri));
        const line = Math.max(0, Math.min(a.line - 1, doc.lineCount - 1));
        const range = doc.lineAt(line).range;
        await vscode.window.showTextDocument(doc, { selection: range, viewColumn: vscode.ViewColumn.One });
        return;
      }
      case 'openFile':
        await vscode.window.showTextDocument(vscode.Uri.file(a.path), { preview: true });
        return;
    }
  }
}
