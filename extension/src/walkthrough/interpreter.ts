/**
 * "Select Python Interpreter…" (the walkthrough's first step, and the palette's): the Python extension's own
 * Select Interpreter where it is installed; else a pick of the interpreters found on this host (the Neuron
 * DLAMI's venvs, the workspace's `.venv`/`venv`, `python3`) or a typed path, written to `oplens.pythonPath`
 * for this workspace, which restarts the server with it. VS Code glue: imports `vscode`.
 */

import * as vscode from 'vscode';
import { PYTHON_EXTENSION_ID } from '../server/interpreter';
import { candidates } from './candidates';

export async function selectInterpreter(): Promise<void> {
  if (vscode.extensions.getExtension(PYTHON_EXTENSION_ID)) {
    await vscode.commands.executeCommand('python.setInterpreter');
    return;
  }
  const current = vscode.workspace.getConfiguration('oplens').get<string>('pythonPath') ?? '';
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const typed = '$(edit) Enter the interpreter’s path…';
  const items: vscode.QuickPickItem[] = [
    ...candidates(folders).map((p) => ({ label: p, description: p === current ? 'current' : undefined })),
    { label: 'python3', description: current ? undefined : 'current (the default)' },
    { label: typed },
  ];
  const picked = await vscode.window.showQuickPick(items, {
    title: 'OpLens: the Python interpreter with your PyTorch',
    placeHolder: 'OpLens runs your code with it (the Python extension is not installed: this sets oplens.pythonPath)',
  });
  if (!picked) return;
  let chosen = picked.label === 'python3' ? '' : picked.label;
  if (picked.label === typed) {
    const entered = await vscode.window.showInputBox({ prompt: 'The path of a Python interpreter that has torch', value: current });
    if (entered === undefined) return;
    chosen = entered.trim();
  }
  await vscode.workspace.getConfiguration('oplens').update('pythonPath', chosen, vscode.ConfigurationTarget.Workspace);
}
