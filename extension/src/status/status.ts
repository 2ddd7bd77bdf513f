/**
 * What the status-bar item says: the backend (`NEURON`, `CUDA`, `CPU`) and the server's state.
 *
 * Pure: imports no `vscode`; unit-tested in status.test.ts.
 */

import { backendFacts } from '../../shared/backends';

export type ServerState = 'stopped' | 'starting' | 'ready' | 'busy' | 'failed';

export interface StatusInput {
  state: ServerState;
  /** The `oplens.backend` setting. */
  backend: string;
  /** The device label of the latest run (what `auto` chose), if any. */
  lastDevice?: string;
  /** `stdio` (a server started here) or the WebSocket URL. */
  connection: string;
  interpreter?: string;
  detail?: string;
}

export interface StatusView {
  text: string;
  tooltip: string;
  /** Draw it as an error (the server is down). */
  error: boolean;
}

const ICONS: Record<ServerState, string> = {
  stopped: '$(circle-slash)',
  starting: '$(sync~spin)',
  ready: '$(flame)',
  busy: '$(loading~spin)',
  failed: '$(error)',
};

const WORDS: Record<ServerState, string> = {
  stopped: 'stopped',
  starting: 'starting…',
  ready: 'ready',
  busy: 'profiling…',
  failed: 'not running',
};

/** `AUTO` shows what auto chose last time, e.g. `AUTO→NEURON`. */
export function backendLabel(backend: string, lastDevice?: string): string {
  const b = backend.toUpperCase();
  if (b === 'AUTO') {
    return lastDevice ? `AUTO→${lastDevice.toUpperCase()}` : 'AUTO';
  }
  return backend ? backendFacts(backend).deviceLabel : 'AUTO';
}

export function statusView(s: StatusInput): StatusView {
  const label = backendLabel(s.backend, s.lastDevice);
  const text = s.state === 'ready' ? `${ICONS.ready} OpLens ${label}` : `${ICONS[s.state]} OpLens ${label} · ${WORDS[s.state]}`;
  const lines = [
    `OpLens server: ${WORDS[s.state]}${s.detail ? ` (${s.detail})` : ''}`,
    `Backend: ${label} (oplens.backend = ${s.backend})`,
    `Connection: ${s.connection}`,
  ];
  if (s.interpreter) {
    lines.push(`Interpreter: ${s.interpreter}`);
  }
  lines.push('', 'Click for OpLens actions');
  return { text, tooltip: lines.join('\n'), error: s.state === 'failed' };
}
