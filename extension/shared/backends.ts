/**
 * What a run's backend is, from the facts the server declares (`generated/backends.ts`, generated
 * from `oplens.backends`): the extension never compares a backend's name or label itself.
 */
import { AUTO_ORDER, BACKEND_FACTS } from './generated/backends';
import { BACKEND_COMMANDS } from './names';

export interface BackendFacts {
  readonly title: string;
  readonly deviceLabel: string;
  /** Work runs on a device apart from the host: Self CPU is its own figure beside the device time. */
  readonly onDevice: boolean;
}

/** The backend that works everywhere, the last `auto` tries: where a request ends when nothing better is present. */
export const EVERYWHERE_BACKEND: string = AUTO_ORDER[AUTO_ORDER.length - 1] ?? 'cpu';

/** The facts of the backend named `name`; one this extension does not know (a newer server's)
 * reads as a device apart from the host, as `registry.facts_of` reads it. */
export function backendFacts(name: string): BackendFacts {
  const known = (BACKEND_FACTS as Record<string, BackendFacts>)[name];
  return known ?? { title: name, deviceLabel: name.toUpperCase(), onDevice: true };
}

/** The backend whose device label is `label` (what an editor has where it has no run). */
export function backendOfLabel(label: string): BackendFacts | undefined {
  return Object.values(BACKEND_FACTS as Record<string, BackendFacts>).find((b) => b.deviceLabel === label.toUpperCase());
}

/** The run's device is apart from the host (its Self CPU is shown beside its device time). */
export function onDevice(run: { backend: { name: string } }): boolean {
  return backendFacts(run.backend.name).onDevice;
}

/** The run's backend offers the LSP command `command` on it (`oplens.openExplorer` on Neuron's). */
export function offers(run: { backend: { name: string } }, command: string): boolean {
  return BACKEND_COMMANDS.some((c) => c.backend === run.backend.name && c.lspCommand === command);
}
