/**
 * The walkthrough's "Open the Example": OpLens's RMSNorm example (examples/rmsnorm.py, shipped in the .vsix)
 * copied into the workspace's first folder, unless a file of that name is there already, and opened; without a
 * folder, the shipped file itself. VS Code glue: imports `vscode`.
 */

import * as vscode from 'vscode';

/** The example's name in the user's workspace. */
export const EXAMPLE_NAME = 'oplens_rmsnorm_example.py';

export async function openExample(extensionUri: vscode.Uri): Promise<void> {
  const shipped = vscode.Uri.joinPath(extensionUri, 'examples', 'rmsnorm.py');
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  let target = shipped;
  if (folder) {
    target = vscode.Uri.joinPath(folder, EXAMPLE_NAME);
    const exists = await vscode.workspace.fs.stat(target).then(() => true, () => false);
    if (!exists) {
      await vscode.workspace.fs.copy(shipped, target);
    }
  }
  const editor = await vscode.window.showTextDocument(target);
  const line = editor.document.getText().split('\n').findIndex((l) => l.startsWith('def rmsnorm_naive'));
  if (line >= 0) {
    const at = new vscode.Position(line + 1, 4);
    editor.selection = new vscode.Selection(at, at);
    editor.revealRange(new vscode.Range(at, at), vscode.TextEditorRevealType.InCenter);
  }
}
