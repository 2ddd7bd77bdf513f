/**
 * The argument expression last used for each function, remembered per workspace.
 *
 * The expression is what `oplens profile --args` takes (the positional arguments as one Python
 * expression, evaluated in the target's module with `torch` available). The input box is prefilled
 * with, in order: the one last used for this function; the one last used for another function of
 * the same file (the variants of one computation usually share inputs, as in the RMSNorm study);
 * a call of the module's own input factory (`make_inputs()`, `example_inputs()`, ...) when it has one;
 * else nothing.
 *
 * Stored in `ExtensionContext.workspaceState` (anything with `get`/`update` will do), as one
 * bounded object, so that it cannot grow without limit over months of use.
 *
 * Pure: imports no `vscode`; unit-tested in argMemory.test.ts.
 */

import type { KeyValueStore } from '../settings/memento';

interface Remembered {
  args: string;
  /** A counter, not a clock: larger is more recent. */
  seq: number;
}

interface Stored {
  version: 1;
  seq: number;
  functions: Record<string, Remembered>;
}

export const STATE_KEY = 'oplens.arguments';
export const MAX_REMEMBERED = 500;

/** Top-level functions that conventionally build a module's example inputs, in order of preference. */
export const INPUT_FACTORIES = ['make_inputs', 'example_inputs', 'get_inputs', 'make_args', 'sample_inputs'];

export function functionKey(file: string, qualname: string): string {
  return `${file}::${qualname}`;
}

export class ArgumentMemory {
  constructor(
    private readonly store: KeyValueStore,
    private readonly limit = MAX_REMEMBERED,
  ) {}

  private load(): Stored {
    const raw = this.store.get<Stored>(STATE_KEY);
    if (raw && raw.version === 1 && typeof raw.functions === 'object' && raw.functions !== null) {
      return raw;
    }
    return { version: 1, seq: 0, functions: {} };
  }

  /** The expression last used for this very function, if any. */
  get(file: string, qualname: string): string | undefined {
    return this.load().functions[functionKey(file, qualname)]?.args;
  }

  /**
   * What to prefill the input box with for `qualname` in `file`; `factories` are the input
   * factories the module defines (see `INPUT_FACTORIES`).
   */
  suggest(file: string, qualname: string, factories: readonly string[] = []): string {
    const stored = this.load();
    const own = stored.functions[functionKey(file, qualname)];
    if (own) {
      return own.args;
    }
    let sibling: Remembered | undefined;
    const prefix = `${file}::`;
    for (const [key, value] of Object.entries(stored.functions)) {
      if (key.startsWith(prefix) && value.args && (!sibling || value.seq > sibling.seq)) {
        sibling = value;
      }
    }
    if (sibling) {
      return sibling.args;
    }
    const factory = INPUT_FACTORIES.find((name) => factories.includes(name));
    return factory ? `${factory}()` : '';
  }

  async remember(file: string, qualname: string, args: string): Promise<void> {
    const stored = this.load();
    const seq = stored.seq + 1;
    const functions = { ...stored.functions, [functionKey(file, qualname)]: { args, seq } };
    const keys = Object.keys(functions);
    if (keys.length > this.limit) {
      keys.sort((a, b) => (functions[a]?.seq ?? 0) - (functions[b]?.seq ?? 0));
      for (const key of keys.slice(0, keys.length - this.limit)) {
        delete functions[key];
      }
    }
    await this.store.update(STATE_KEY, { version: 1, seq, functions } satisfies Stored);
  }

  async forget(file: string, qualname: string): Promise<void> {
    const stored = this.load();
    const functions = { ...stored.functions };
    delete functions[functionKey(file, qualname)];
    await this.store.update(STATE_KEY, { ...stored, functions });
  }
}
