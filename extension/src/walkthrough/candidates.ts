/**
 * The interpreters worth offering on this host when the Python extension is not there to choose one.
 * Pure: imports no `vscode` (node:fs only), unit-tested.
 */

import * as fs from 'node:fs';
import * as path from 'node:path';

/** Interpreters worth offering on this host, the Neuron DLAMI's first (`/opt/aws_neuronx_venv_*`). */
export function candidates(workspaceFolders: string[], optDir = '/opt'): string[] {
  const found: string[] = [];
  const neuron = safeList(optDir).filter((n) => n.startsWith('aws_neuronx_venv_')).sort();
  for (const venv of neuron) found.push(path.join(optDir, venv, 'bin', 'python'));
  for (const folder of workspaceFolders) {
    for (const venv of ['.venv', 'venv']) found.push(path.join(folder, venv, 'bin', 'python'));
  }
  return found.filter((p) => fs.existsSync(p));
}

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}
