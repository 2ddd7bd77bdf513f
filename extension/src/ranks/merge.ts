/**
 * Merge Runs of Several Hosts…: what the command decides without VS Code. A distributed capture
 * across hosts leaves one run directory per host; the server merges those on its host
 * (`oplens.merge {dirs}`, `oplens merge DIR...`). Here: where the folder picker opens, the picked
 * folders as the request's `dirs`, and each failure in the user's words.
 *
 * Pure: imports no `vscode`; unit-tested in merge.test.ts.
 */

import * as path from 'node:path';
import { ERROR_KIND } from '../../shared/generated/errors';
import { MERGE_COMMAND } from '../../shared/names';
import { engineError, isConnectionLost, type Problem, type RpcError } from '../problems/problems';
import { packageVersionOf } from '../server/protocol';

/**
 * Where the folder picker opens: the runs directory the server keeps runs in, as this editor sees
 * it. `runsDirectory` (expanded) is the `oplens.runsDirectory` setting, which only a server started
 * here (stdio) is given; else the workspace's `.oplens/runs` (a WebSocket server's, through the path
 * mappings, where the workspace mirrors the host's). Undefined without a workspace.
 */
export function defaultRunsFolder(o: { runsDirectory: string; workspace: string | undefined; websocket: boolean }): string | undefined {
  if (o.runsDirectory && !o.websocket) {
    return o.runsDirectory;
  }
  return o.workspace ? path.join(o.workspace, '.oplens', 'runs') : undefined;
}

/** A folder the picker gave: its URI's scheme and its path on this machine. */
export interface PickedFolder {
  scheme: string;
  fsPath: string;
}

/**
 * The picked folders as `oplens.merge`'s argument (paths as this editor names them: the server maps
 * them through `pathMappings`), or why they cannot be sent.
 */
export function mergeRequest(folders: readonly PickedFolder[]): { dirs: string[] } | { problem: string } {
  const other = folders.find((f) => f.scheme !== 'file');
  if (other) {
    return { problem: `OpLens: ${other.fsPath || 'a folder'} is not on a file system (${other.scheme}:); pick run directories on disk.` };
  }
  if (folders.length === 0) {
    return { problem: 'OpLens: pick the run directory of each host.' };
  }
  return { dirs: folders.map((f) => f.fsPath) };
}

/**
 * A problem when the running server cannot merge: an oplens from before `oplens.merge` (same
 * protocol, so it was let in) lists no such command. `commands`: the server's
 * `executeCommandProvider.commands`; `serverVersion`: its `serverInfo.version`.
 */
export function mergeUnsupported(commands: readonly string[] | undefined, serverVersion: string | undefined, extensionVersion: string): Problem | undefined {
  if (commands === undefined || commands.includes(MERGE_COMMAND)) {
    return undefined;
  }
  return olderServer(serverVersion, extensionVersion);
}

function olderServer(serverVersion: string | undefined, extensionVersion: string): Problem {
  const theirs = serverVersion ? `oplens ${packageVersionOf(serverVersion)}` : 'an older oplens';
  return {
    severity: 'error',
    message:
      `OpLens: the server (${theirs}) cannot merge runs: it is older than this extension (${extensionVersion}). ` +
      `Install oplens ${extensionVersion} where the server runs, then restart the server (or run \`oplens merge DIR...\` on that host).`,
    actions: [{ kind: 'restartServer', title: 'Restart Server' }],
  };
}

/** A failed `oplens.merge` → what to tell the user. */
export function describeMergeError(e: RpcError, serverVersion: string | undefined, extensionVersion: string): Problem {
  if (isConnectionLost(e)) {
    return {
      severity: 'error',
      message: 'OpLens: the server stopped while merging the runs.',
      actions: [
        { kind: 'restartServer', title: 'Restart Server' },
        { kind: 'showOutput', title: 'Show Output' },
      ],
    };
  }
  if (/is not defined/.test(e.message) && e.message.includes(MERGE_COMMAND)) {
    // pygls's answer to a command it does not have: "Command name '<command>' is not defined"
    return olderServer(serverVersion, extensionVersion);
  }
  const err = engineError(e.data);
  if (!err) {
    return { severity: 'error', message: `OpLens: cannot merge the runs: ${e.message}`, actions: [{ kind: 'showOutput', title: 'Show Output' }] };
  }
  if (err.kind === ERROR_KIND.cancelled) {
    return { severity: 'info', message: 'OpLens: merging the runs was cancelled; nothing was stored.', actions: [] };
  }
  // bad_input: not a run directory, runs of different functions, a rank in two directories; the
  // engine's message names the directory or the rank, its detail says what to give instead
  const detail = err.detail || undefined;
  return {
    severity: 'error',
    message: `OpLens: cannot merge the runs: ${err.message}${detail ? ` (${detail})` : ''}`,
    detail,
    actions: [{ kind: 'showOutput', title: 'Show Output' }],
  };
}

/** The status bar's word once merged: "$(check) OpLens rmsnorm_naive: 2 ranks merged · <title>". */
export function mergedMessage(qualname: string, ranks: number | undefined, title: string): string {
  const count = ranks === undefined ? 'runs merged' : `${ranks} rank${ranks === 1 ? '' : 's'} merged`;
  return `$(check) OpLens ${qualname}: ${count}${title ? ` · ${title}` : ''}`;
}
