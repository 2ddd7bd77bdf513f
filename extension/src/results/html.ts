/**
 * The HTML shell of a webview: the strict Content Security Policy of `csp.ts`, one stylesheet
 * and one script from `dist/webview` (the only local resource root), nothing from the network.
 *
 * VS Code glue: imports `vscode`; its model is csp.ts; the trace viewer uses it too.
 */

import * as vscode from 'vscode';
import { pageHtml } from './csp';

export function webviewAssetsRoot(extensionUri: vscode.Uri): vscode.Uri {
  return vscode.Uri.joinPath(extensionUri, 'dist', 'webview');
}

/** Options of a webview that may load only `dist/webview`. */
export function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
  return {
    enableScripts: true,
    enableCommandUris: false,
    localResourceRoots: [webviewAssetsRoot(extensionUri)],
    retainContextWhenHidden: false,
    enableFindWidget: true,
  };
}

/** The page for bundle `name` (`results` → dist/webview/results.js and results.css). */
export function webviewHtml(webview: vscode.Webview, extensionUri: vscode.Uri, name: string, title: string): string {
  const root = webviewAssetsRoot(extensionUri);
  return pageHtml({
    cspSource: webview.cspSource,
    scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(root, `${name}.js`)).toString(),
    styleUri: webview.asWebviewUri(vscode.Uri.joinPath(root, `${name}.css`)).toString(),
    title,
  });
}
