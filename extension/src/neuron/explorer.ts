/**
 * Neuron Explorer: what the server's `oplens.openExplorer` returns, checked, and the
 * tunnel a user needs to reach it.
 *
 * Neuron Explorer serves its UI on one port (3001) and its API on another (3002); the page calls
 * the API at `localhost:<api port>` from the browser, so *both* ports must be forwarded to the same
 * local port numbers, or the page loads empty. Profiles open at `http://localhost:<ui>/profile/<name>`.
 *
 * Pure: imports no `vscode`; unit-tested in explorer.test.ts.
 */

import { OPEN_EXPLORER_COMMAND } from '../../shared/names';
import type { Run } from '../../shared/run';

export interface ExplorerRecord {
  /** The profile's page, as the host sees it (http://localhost:3001/profile/<name>). */
  profileUrl: string;
  uiPort: number;
  apiPort: number;
  displayName: string;
  /** The server's own tunnel command (it knows its host name). */
  tunnelCommand: string;
  /** The server host's name. */
  host: string;
  /** What the server did or noticed (viewer started, ports already served, ...). */
  messages: string[];
  /** The viewer's API the profile was uploaded to (`http://localhost:<api port>`). */
  endpoint: string;
  /** The system profile's session directory the upload used ('' for a device-only NEFF/NTFF pair). */
  profileDirectory: string;
  /** The NEFF and NTFF uploaded, for a device-only profile. */
  uploadFiles: string[];
}

function isPort(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 && v < 65536;
}

/**
 * The record `oplens.openExplorer` answers with: the server's `ExplorerLink`
 * (`server/oplens/backends/neuron/explorer.py`: `url`, `tunnel`, `host`, `ui_port`, `api_port`,
 * `display_name`, `messages`, ...), checked.
 */
export function parseExplorerRecord(raw: unknown): ExplorerRecord {
  if (typeof raw !== 'object' || raw === null) {
    throw new Error(`the server answered ${OPEN_EXPLORER_COMMAND} with no record`);
  }
  const o = raw as Record<string, unknown>;
  const text = (key: string): string => (typeof o[key] === 'string' ? (o[key] as string) : '');
  if (!text('url')) {
    throw new Error(`the server answered ${OPEN_EXPLORER_COMMAND} with no profile URL`);
  }
  if (!isPort(o.ui_port) || !isPort(o.api_port)) {
    throw new Error(`the server answered ${OPEN_EXPLORER_COMMAND} without its ports (ui_port ${String(o.ui_port)}, api_port ${String(o.api_port)})`);
  }
  return {
    profileUrl: text('url'),
    uiPort: o.ui_port,
    apiPort: o.api_port,
    displayName: text('display_name'),
    tunnelCommand: text('tunnel'),
    host: text('host'),
    messages: Array.isArray(o.messages) ? o.messages.filter((m): m is string => typeof m === 'string') : [],
    endpoint: text('endpoint') || `http://localhost:${o.api_port}`,
    profileDirectory: text('profile_directory'),
    uploadFiles: Array.isArray(o.upload_files) ? o.upload_files.filter((m): m is string => typeof m === 'string') : [],
  };
}

/** What to tell a user of the AWS Neuron Explorer extension, and the path to copy for it. */
export interface AwsExtensionGuide {
  /** The path copied to the clipboard: the profile directory to paste into Upload Profile. */
  copy: string;
  message: string;
}

function parentDir(path: string): string {
  const i = path.replace(/\/+$/, '').lastIndexOf('/');
  return i > 0 ? path.slice(0, i) : path;
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/**
 * The documented ways to see the profile in the AWS Neuron Explorer extension (aws-neuron-sdk,
 * tools/neuron-explorer/get-started.rst, "Using VS Code instead of the browser"): with the custom endpoint
 * `localhost:<api port>` (Option B) the profile OpLens uploaded is listed in its Profile Manager under its
 * name ("once a profile is uploaded, it's visible in both interfaces"); with Local Binary (Option A) it is
 * uploaded there: Profile Manager, "Click Upload Profile and paste the path to the profile directory on the
 * instance". A device-only profile goes by Individual Files (its NEFF and NTFF), not as a directory.
 * `fallbackDir`: the run's profile directory where the record names none (an older server).
 */
export function awsExtensionGuide(r: ExplorerRecord, fallbackDir: string): AwsExtensionGuide {
  const endpoint = r.endpoint.replace(/^https?:\/\//, '').replace(/\/+$/, '') || `localhost:${r.apiPort}`;
  const listed = `OpLens: the profile is uploaded to Neuron Explorer as "${r.displayName}" on the endpoint ${endpoint}: with Endpoint → Custom endpoint ${endpoint}, the Profile Manager lists it under that name.`;
  if (!r.profileDirectory && r.uploadFiles.length === 2) {
    const [neff, ntff] = r.uploadFiles;
    const folder = parentDir(ntff);
    return {
      copy: folder,
      message: `${listed} With Local Binary: Profile Manager → Upload Profile → Individual Files (a device-only profile does not upload as a directory): ${basename(neff)} and ${basename(ntff)} in the copied folder ${folder}.`,
    };
  }
  const dir = r.profileDirectory || fallbackDir;
  return {
    copy: dir,
    message: `${listed} With Local Binary: Profile Manager → Upload Profile → paste the copied path (${dir}).`,
  };
}

/** The id of an extension's first view container (its manifest's `contributes.viewsContainers`), if any. */
export function viewContainerId(packageJSON: unknown): string | undefined {
  const contributes = (packageJSON as { contributes?: { viewsContainers?: Record<string, unknown> } } | undefined)?.contributes;
  for (const list of Object.values(contributes?.viewsContainers ?? {})) {
    if (Array.isArray(list)) {
      const found = list.find((c): c is { id: string } => typeof (c as { id?: unknown })?.id === 'string' && (c as { id: string }).id !== '');
      if (found) {
        return found.id;
      }
    }
  }
  return undefined;
}

/** `ssh -L 3001:localhost:3001 -L 3002:localhost:3002 <host>`: both ports, same numbers locally. */
export function tunnelCommand(uiPort: number, apiPort: number, host: string): string {
  return `ssh -L ${uiPort}:localhost:${uiPort} -L ${apiPort}:localhost:${apiPort} ${host || '<host>'}`;
}

/** The record's own tunnel command when it forwards both ports, else one built from the ports. */
export function tunnelFor(r: ExplorerRecord): string {
  const own = r.tunnelCommand;
  if (own && own.includes(String(r.uiPort)) && own.includes(String(r.apiPort))) {
    return own;
  }
  return tunnelCommand(r.uiPort, r.apiPort, r.host);
}

/** The profile page with its port replaced (where the UI port was forwarded to a different local one). */
export function withPort(url: string, port: number): string {
  try {
    const u = new URL(url);
    u.port = String(port);
    return u.toString();
  } catch {
    return url;
  }
}

/** Why a run cannot be opened in Neuron Explorer, or undefined when it can. */
export function explorerUnavailable(run: Run): string | undefined {
  if (run.backend.name !== 'neuron') {
    return (
      `this run is on ${run.backend.device_label || run.backend.name}; Neuron Explorer shows Neuron device profiles. ` +
      'Use Open Trace for CPU and CUDA runs, or profile with oplens.backend "neuron".'
    );
  }
  if (!run.artifacts.device_profile_dir && !run.artifacts.profile_output_dir) {
    return 'this Neuron run kept no device profile (no NEFF/NTFF pair was captured); profile it again.';
  }
  return undefined;
}
