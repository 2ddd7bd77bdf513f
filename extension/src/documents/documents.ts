/**
 * The server's view of the open Python documents (documentIndex.ts), kept current: every
 * `oplens/document` notification goes in (older ones than held are dropped), and where nothing is
 * held yet for a document's text (the server just started, a file just opened), `oplens.functions`
 * asks for it. Profiling, comparing, the heat gutter and the results panel read functions and run
 * placements from here; the extension itself never parses Python.
 *
 * VS Code glue: imports `vscode`; its model is documentIndex.ts.
 */

import * as vscode from 'vscode';
import { FUNCTIONS_COMMAND } from '../../shared/names';
import type { RunStore } from '../runs/runStore';
import type { OpLensServer } from '../server/server';
import { DocumentIndex, parseDocumentInfo, placeRun, type DocumentInfo, type PlaceableRun, type RunState } from './documentIndex';

export class Documents implements vscode.Disposable {
  readonly index = new DocumentIndex();
  private readonly asking = new Map<string, Promise<DocumentInfo>>();
  private readonly changed = new vscode.EventEmitter<DocumentInfo>();
  private readonly subscriptions: vscode.Disposable[] = [];

  /** A document's info changed (a notification or an answer was kept). */
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly server: OpLensServer,
    private readonly store: RunStore,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscriptions.push(
      this.changed,
      this.index.onDidChange((info) => this.changed.fire(info)),
      server.onDidChangeState((state) => {
        if (state === 'starting' || state === 'stopped' || state === 'failed') {
          this.index.clear(); // a new server places runs anew
          this.asking.clear();
        }
      }),
      vscode.workspace.onDidCloseTextDocument((doc) => this.index.delete(doc.uri.toString())),
      server.onDocument((params) => this.onNotification(params)),
    );
  }

  /** The `oplens/document` notification. */
  private onNotification(params: unknown): void {
    try {
      this.keep(parseDocumentInfo(params));
    } catch (e) {
      this.log.error(`unreadable oplens/document: ${(e as Error).message}`);
    }
  }

  private keep(info: DocumentInfo): DocumentInfo {
    const uri = vscode.Uri.parse(info.uri).toString(); // as this editor writes it
    const normalized = uri === info.uri ? info : { ...info, uri };
    this.index.update(normalized);
    return this.index.get(uri) ?? normalized;
  }

  /** What the server knows of `doc`'s current text: held, or asked for with `oplens.functions`. */
  async info(doc: vscode.TextDocument): Promise<DocumentInfo> {
    const uri = doc.uri.toString();
    const held = this.index.get(uri);
    if (held && this.index.isUpToDate(uri, doc.version)) {
      return held;
    }
    return this.ask(uri);
  }

  /** `oplens.functions` for `uri` (one request in flight per document). */
  ask(uri: string): Promise<DocumentInfo> {
    let pending = this.asking.get(uri);
    if (!pending) {
      pending = this.server
        .execute(FUNCTIONS_COMMAND, { uri })
        .then((answer) => this.keep(parseDocumentInfo(answer)))
        .finally(() => this.asking.delete(uri));
      this.asking.set(uri, pending);
    }
    return pending;
  }

  /** Ask for `uri` in the background when nothing is held for it (its change event follows). */
  ensure(uri: string): void {
    if (!this.index.get(uri) && !this.asking.has(uri) && this.server.isReady) {
      this.ask(uri).catch((e: Error) => this.log.debug(`${FUNCTIONS_COMMAND} ${uri}: ${e.message}`));
    }
  }

  /** Where `run` sits in `uri`'s text now, from what is held (for drawing; no request). */
  placeHeld(uri: string, run: PlaceableRun): { state: RunState; shift: number } | undefined {
    return placeRun(this.index.get(uri), run, (id) => this.store.get(id)?.run);
  }

  /**
   * Where `run` sits in `uri`'s text now; asks the server when what is held does not name the run
   * (a result that arrived before its document notification, a file not open yet).
   */
  async place(uri: string, run: PlaceableRun): Promise<{ state: RunState; shift: number } | undefined> {
    const held = this.placeHeld(uri, run);
    if (held || !this.server.isReady) {
      return held;
    }
    try {
      return placeRun(await this.ask(uri), run, (id) => this.store.get(id)?.run);
    } catch (e) {
      this.log.debug(`placing run ${run.run_id} in ${uri}: ${(e as Error).message}`);
      return undefined;
    }
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
  }
}
