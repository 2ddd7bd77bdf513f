/**
 * The heat gutter: for every visible Python editor, each profiled line of each fresh or moved run
 * (where the server places it: `oplens/document`) gets a gutter bar and an overview-ruler mark
 * (and, with `oplens.heat: "line"`, a faint background), coloured by its share of the function's
 * device time, or with `oplens.heatBy: "headroom"` by its headroom at the roofline (heat.ts;
 * lines without one get no heat then). Colours follow the theme kind and are rebuilt when it changes. Runs
 * whose function changed since they were profiled draw nothing (the server's lens says "stale").
 * While the user types, VS Code carries the drawn ranges along; the server's next notification
 * redraws them.
 *
 * VS Code glue: imports `vscode`; its model is heat.ts.
 */

import * as vscode from 'vscode';
import { isDrawable } from '../documents/documentIndex';
import type { Documents } from '../documents/documents';
import type { RunStore } from '../runs/runStore';
import type { HeatBy, HeatMode } from '../settings/settings';
import type { SettingsSource } from '../settings/source';
import { gutterSvg, HEAT_LEVELS, heatLines, heatPalette, type ThemeKind } from './heat';

function themeKind(kind: vscode.ColorThemeKind): ThemeKind {
  switch (kind) {
    case vscode.ColorThemeKind.Light:
      return 'light';
    case vscode.ColorThemeKind.HighContrast:
      return 'highContrast';
    case vscode.ColorThemeKind.HighContrastLight:
      return 'highContrastLight';
    default:
      return 'dark';
  }
}

export class HeatDecorations implements vscode.Disposable {
  private types: vscode.TextEditorDecorationType[] = [];
  private mode: HeatMode;
  private by: HeatBy;
  private timer: NodeJS.Timeout | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly store: RunStore,
    private readonly documents: Documents,
    settings: SettingsSource,
  ) {
    this.mode = settings.value.heat;
    this.by = settings.value.heatBy;
    this.rebuildTypes();
    this.subscriptions.push(
      store.onDidChange(() => this.schedule(0)),
      documents.onDidChange((info) => {
        if (this.store.forUri(info.uri).length > 0) {
          this.schedule(0);
        }
      }),
      vscode.window.onDidChangeVisibleTextEditors(() => this.schedule(0)),
      vscode.window.onDidChangeActiveColorTheme(() => {
        this.rebuildTypes();
        this.schedule(0);
      }),
      settings.onDidChange((s) => {
        if (s.heat !== this.mode) {
          this.mode = s.heat;
          this.rebuildTypes();
          this.schedule(0);
        }
        if (s.heatBy !== this.by) {
          this.by = s.heatBy;
          this.schedule(0);
        }
      }),
    );
  }

  private rebuildTypes(): void {
    this.types.forEach((t) => t.dispose());
    this.types = [];
    if (this.mode === 'off') {
      return;
    }
    const palette = heatPalette(themeKind(vscode.window.activeColorTheme.kind), HEAT_LEVELS);
    palette.forEach((colours, i) => {
      const svg = gutterSvg(colours.gutter, i + 1, HEAT_LEVELS);
      this.types.push(
        vscode.window.createTextEditorDecorationType({
          gutterIconPath: vscode.Uri.parse(`data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`),
          gutterIconSize: 'contain',
          overviewRulerColor: colours.ruler,
          overviewRulerLane: vscode.OverviewRulerLane.Left,
          isWholeLine: true,
          ...(this.mode === 'line' ? { backgroundColor: colours.background } : {}),
        }),
      );
    });
  }

  private schedule(delayMs: number): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.redraw();
    }, delayMs);
  }

  /** Redraw every visible editor (only visible ones: a large workspace costs nothing). */
  redraw(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      this.draw(editor);
    }
  }

  private draw(editor: vscode.TextEditor): void {
    const byLevel: vscode.Range[][] = this.types.map(() => []);
    const doc = editor.document;
    const uri = doc.uri.toString();
    const runs = doc.languageId === 'python' ? this.store.forUri(uri) : [];
    if (runs.length > 0 && this.types.length > 0) {
      this.documents.ensure(uri);
      for (const { run } of runs) {
        const placed = this.documents.placeHeld(uri, run);
        if (!isDrawable(placed)) {
          continue; // changed since profiled, or not placed yet: no heat rather than heat on the wrong lines
        }
        for (const h of heatLines(run, placed.shift, 0.001, this.types.length, this.by)) {
          if (h.line < doc.lineCount) {
            byLevel[h.level - 1]?.push(doc.lineAt(h.line).range);
          }
        }
      }
    }
    this.types.forEach((type, i) => editor.setDecorations(type, byLevel[i] ?? []));
  }

  dispose(): void {
    if (this.timer) {
      clearTimeout(this.timer);
    }
    this.types.forEach((t) => t.dispose());
    this.subscriptions.forEach((d) => d.dispose());
  }
}
