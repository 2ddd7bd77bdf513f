/**
 * The hints and hovers of a distributed run's lines (`oplens run --nproc-per-node N`). The server
 * writes a line's inlay hint and hover from the run's headline figure, for a merged run the mean
 * over its ranks; as they pass through the language client (server.ts middleware), the extension
 * rewrites those of a merged run's lines from the run it holds (shared/ranks.ts):
 *
 * - the hint shows the median across ranks, the share and the spread (`2.20 ms · 7.9 % · ranks
 *   1.75–2.22 ms`), and `⚠ rank 1` on a straggler's line; a diff's mark after it is kept;
 * - the hover gets, after its headline, a per-rank bar list (rank, bar, time, the slowest marked)
 *   and the collective time.
 *
 * A hint the server already wrote with ranks is left alone, and so is a hover that has them.
 */

import * as vscode from 'vscode';
import { isMerged, rankHint, rankHintTooltip, rankHoverMarkdown, stragglers, withRanksSection } from '../shared/ranks';
import type { LineStat, Run } from '../shared/run';
import { isDrawable } from './core/documentIndex';
import type { RunStore } from './core/runStore';
import type { Documents } from './documents';

interface RankedLine {
  run: Run;
  stat: LineStat;
  straggler: number | undefined;
}

export class RankAnnotations implements vscode.Disposable {
  private readonly subscriptions: vscode.Disposable[] = [];
  /** uri → where its merged runs were placed when last drawn (a change asks for the hints again). */
  private readonly placed = new Map<string, string>();

  constructor(
    private readonly store: RunStore,
    private readonly documents: Documents,
    private readonly refresh: (documents: readonly vscode.TextDocument[]) => void,
  ) {
    this.subscriptions.push(
      store.onDidChange((change) => {
        if (change.kind === 'cleared' || isMerged(change.entry.run)) {
          this.refreshIfMoved(change.kind === 'added' ? change.entry.uri : change.uri);
        }
      }),
      documents.onDidChange((info) => this.refreshIfMoved(info.uri)),
    );
  }

  /** The merged runs' lines of `uri` that have ranks, by 0-based current line. */
  private rankedLines(uri: string): Map<number, RankedLine> {
    const out = new Map<number, RankedLine>();
    for (const { run } of this.store.forUri(uri)) {
      if (!isMerged(run)) {
        continue;
      }
      const place = this.documents.placeHeld(uri, run);
      if (!isDrawable(place)) {
        continue; // changed since profiled, or not placed yet: the server shows no hints there either
      }
      const slow = stragglers(run.insights);
      for (const stat of run.lines) {
        if (stat.ranks) {
          out.set(stat.line + place.shift - 1, { run, stat, straggler: slow.get(stat.line) });
        }
      }
    }
    return out;
  }

  /** Where the merged runs of `uri` sit now, as a key: hints are asked for again when it changes. */
  private signature(uri: string): string {
    return this.store
      .forUri(uri)
      .filter((e) => isMerged(e.run))
      .map((e) => `${e.run.run_id}@${JSON.stringify(this.documents.placeHeld(uri, e.run) ?? null)}`)
      .join(';');
  }

  private refreshIfMoved(uri: string | undefined): void {
    const uris = uri === undefined ? [...this.placed.keys()] : [uri];
    const changed: vscode.TextDocument[] = [];
    for (const u of uris) {
      const now = this.signature(u);
      if (now === (this.placed.get(u) ?? '')) {
        continue;
      }
      if (now) {
        this.placed.set(u, now);
      } else {
        this.placed.delete(u);
      }
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === u);
      if (doc) {
        changed.push(doc);
      }
    }
    if (changed.length > 0) {
      this.refresh(changed);
    }
  }

  /** The server's hints of `document`, those of a merged run's lines rewritten. */
  hints(document: vscode.TextDocument, hints: vscode.InlayHint[]): vscode.InlayHint[] {
    const uri = document.uri.toString();
    this.placed.set(uri, this.signature(uri));
    const lines = this.rankedLines(uri);
    if (lines.size === 0) {
      return hints;
    }
    for (const hint of hints) {
      const ranked = lines.get(hint.position.line);
      if (!ranked || typeof hint.label !== 'string') {
        continue;
      }
      const label = rankHint(hint.label, ranked.stat, ranked.straggler);
      if (label === undefined) {
        continue;
      }
      hint.label = label;
      const more = rankHintTooltip(ranked.stat, ranked.straggler);
      if (hint.tooltip instanceof vscode.MarkdownString) {
        hint.tooltip.appendText(`; ${more}`);
      } else {
        hint.tooltip = hint.tooltip ? `${hint.tooltip}; ${more}` : more;
      }
    }
    return hints;
  }

  /** The server's hover at `position`, with the line's ranks where it is a merged run's. */
  hover(document: vscode.TextDocument, position: vscode.Position, hover: vscode.Hover): vscode.Hover {
    const ranked = this.rankedLines(document.uri.toString()).get(position.line);
    if (!ranked) {
      return hover;
    }
    const said = hover.contents.some((c) => (typeof c === 'string' ? c : c.value).includes('**Ranks**'));
    const section = rankHoverMarkdown(ranked.stat, ranked.run.ranks, ranked.straggler);
    if (said || section === undefined) {
      return hover;
    }
    const [first, ...rest] = hover.contents;
    if (first instanceof vscode.MarkdownString) {
      // inside the server's text, after its headline: seen without scrolling the hover
      const md = new vscode.MarkdownString(withRanksSection(first.value, section), first.supportThemeIcons);
      md.isTrusted = first.isTrusted;
      md.supportHtml = first.supportHtml;
      return new vscode.Hover([md, ...rest], hover.range);
    }
    return new vscode.Hover([...hover.contents, new vscode.MarkdownString(section)], hover.range);
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
  }
}
