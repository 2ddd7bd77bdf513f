/**
 * The part of VS Code's `Memento` (`ExtensionContext.workspaceState`) that what OpLens remembers per
 * workspace is kept in: the arguments of each function (profile/argMemory.ts) and the last program
 * (program/program.ts). Here, below both, so that neither imports the other for it; a test gives a Map.
 *
 * Pure: imports no `vscode`.
 */

export interface KeyValueStore {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
}
