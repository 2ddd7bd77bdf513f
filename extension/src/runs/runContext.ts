/**
 * Which of OpLens's commands apply, from the runs this editor holds, as `when`-clause context keys:
 * `oplens.hasRuns` (Open Trace, Clear Annotations) and, for each backend command, `oplens.runOffers.<name>`
 * (`oplens.runOffers.explorer`: a run whose backend offers Neuron Explorer, so Open in Neuron Explorer is
 * not offered on CPU and GPU hosts). package.json's menus name these keys; a test checks they agree.
 *
 * Pure: imports no `vscode`; unit-tested in runContext.test.ts.
 */

import { offers } from '../../shared/backends';
import { BACKEND_COMMANDS } from '../../shared/names';

export const HAS_RUNS_CONTEXT = 'oplens.hasRuns';

/** The key that says a held run offers the backend command `name` (`explorer`). */
export function runOffersContext(name: string): string {
  return `oplens.runOffers.${name}`;
}

/** Every key and its value for the runs held (each key present, so a key turns false again). */
export function runContext(runs: Iterable<{ backend: { name: string } }>): Record<string, boolean> {
  const held = [...runs];
  const keys: Record<string, boolean> = { [HAS_RUNS_CONTEXT]: held.length > 0 };
  for (const cmd of BACKEND_COMMANDS) {
    keys[runOffersContext(cmd.name)] = held.some((run) => offers(run, cmd.lspCommand));
  }
  return keys;
}
