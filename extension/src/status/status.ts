/**
 * What the status-bar item says: the backend (`NEURON`, `CUDA`, `CPU`; `AUTO→CPU`: what `auto` picks on the
 * server's host, as the server says, else what it picked for the latest run) and the server's state;
 * while a dropped WebSocket is retried, "disconnected, reconnecting…" with the attempt and the delay.
 *
 * Pure: imports no `vscode`; unit-tested in status.test.ts.
 */

import { backendFacts } from '../../shared/backends';
import type { ReconnectInfo, ServerState } from '../server/contract';


export interface StatusInput {
  state: ServerState;
  /** The `oplens.backend` setting. */
  backend: string;
  /** The device label of the latest run (what `auto` chose), if any. */
  lastDevice?: string;
  /** The device label `auto` picks on the server's host (`oplens.backends`), once the server has said. */
  hostDevice?: string;
  /** Why it picks it ("auto fell back to the CPU (neuron: …; cuda: …)"), or why the backend cannot run there. */
  backendNote?: string;
  /** `stdio` (a server started here) or the WebSocket URL. */
  connection: string;
  interpreter?: string;
  detail?: string;
  reconnect?: ReconnectInfo;
}

export interface StatusView {
  text: string;
  tooltip: string;
  /** Draw it as an error (the server is down). */
  error: boolean;
  /** Draw it as a warning (the connection dropped; it is being retried). */
  warning: boolean;
}

const ICONS: Record<ServerState, string> = {
  stopped: '$(circle-slash)',
  starting: '$(sync~spin)',
  ready: '$(flame)',
  busy: '$(loading~spin)',
  reconnecting: '$(debug-disconnect)',
  failed: '$(error)',
};

const WORDS: Record<ServerState, string> = {
  stopped: 'stopped',
  starting: 'starting…',
  ready: 'ready',
  busy: 'profiling…',
  reconnecting: 'disconnected, reconnecting…',
  failed: 'not running',
};

/** `AUTO` shows what auto picks on the host (else what it chose last time), e.g. `AUTO→NEURON`. */
export function backendLabel(backend: string, lastDevice?: string, hostDevice?: string): string {
  const b = backend.toUpperCase();
  if (b === 'AUTO') {
    const device = hostDevice ?? lastDevice;
    return device ? `AUTO→${device.toUpperCase()}` : 'AUTO';
  }
  return backend ? backendFacts(backend).deviceLabel : 'AUTO';
}

/** "attempt 3, next try in 4 s, last: ECONNREFUSED". */
export function reconnectDetail(r: ReconnectInfo): string {
  const delay = r.nextDelayMs <= 0 ? 'trying now' : `next try in ${r.nextDelayMs < 1_000 ? `${Math.round(r.nextDelayMs)} ms` : `${Math.round(r.nextDelayMs / 1_000)} s`}`;
  return `attempt ${r.attempt}, ${delay}${r.lastFailure ? `, last: ${r.lastFailure}` : ''}`;
}

export function statusView(s: StatusInput): StatusView {
  const label = backendLabel(s.backend, s.lastDevice, s.hostDevice);
  const text = s.state === 'ready' ? `${ICONS.ready} OpLens ${label}` : `${ICONS[s.state]} OpLens ${label} · ${WORDS[s.state]}`;
  const detail = [s.state === 'reconnecting' && s.reconnect ? reconnectDetail(s.reconnect) : undefined, s.detail].filter(Boolean).join('; ');
  const lines = [
    `OpLens server: ${WORDS[s.state]}${detail ? ` (${detail})` : ''}`,
    `Backend: ${label} (oplens.backend = ${s.backend})${s.backendNote ? `: ${s.backendNote}` : ''}`,
    `Connection: ${s.connection}`,
  ];
  if (s.interpreter) {
    lines.push(`Interpreter: ${s.interpreter}`);
  }
  if (s.state === 'reconnecting') {
    lines.push('The server keeps running on the host; its runs show again once reconnected. A command issued meanwhile says so and does not run.');
  }
  lines.push('', 'Click for OpLens actions (the backend among them)');
  return { text, tooltip: lines.join('\n'), error: s.state === 'failed', warning: s.state === 'reconnecting' };
}
