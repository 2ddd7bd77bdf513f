/**
 * The heat scale: each profiled line's share of the function's device time → one of a few
 * intensity levels, and the colours of those levels for the current theme.
 *
 * By `headroom` (`oplens.heatBy`), a line's heat is instead its headroom (`LineStat.headroom_us`: the
 * time it takes beyond its floor at the device's roofline) as a share of the function's time: what
 * there is to win, not what is spent. Lines without headroom (no counted work, no ceilings, an older
 * run) get no heat then.
 *
 * Intensity is linear in the line's share, with the hottest line at full intensity (so a function
 * of six equal lines is not uniformly faint), and lines under `minShare` get no heat at all. Shares
 * are of device time; a run with no device time at all (a CUDA run whose ops launched no kernel)
 * falls back to CPU time, as the panel does.
 *
 * Pure: imports no `vscode`; unit-tested in heat.test.ts.
 */

import type { HeatBy } from '../settings/settings';

export const HEAT_LEVELS = 8;

export type ThemeKind = 'dark' | 'light' | 'highContrast' | 'highContrastLight';

export interface HeatLine {
  /** 0-based line in the current document. */
  line: number;
  /** 1..HEAT_LEVELS */
  level: number;
  /** 0..1 of the function's time (by headroom: its headroom's share of that time). */
  share: number;
}

export interface HeatInput {
  totals: { self_device_us: number; self_cpu_us?: number };
  lines: readonly { line: number; pct_device: number; pct_cpu: number; headroom_us?: number | null }[];
}

/** The level (1..levels) of a share, given the hottest share; 0 when it gets no heat. */
export function heatLevel(share: number, maxShare: number, minShare = 0.001, levels = HEAT_LEVELS): number {
  if (!(share >= minShare) || !(maxShare > 0)) {
    return 0;
  }
  return Math.min(levels, Math.max(1, Math.ceil((share / maxShare) * levels - 1e-9)));
}

/** Each line's share (0..1) of the function's time (`time`), or its headroom as a share of that time (`headroom`). */
export function heatShares(run: HeatInput, by: HeatBy = 'time'): number[] {
  const useDevice = run.totals.self_device_us > 0;
  if (by === 'headroom') {
    const total = useDevice ? run.totals.self_device_us : (run.totals.self_cpu_us ?? 0);
    return run.lines.map((l) => (l.headroom_us !== null && l.headroom_us !== undefined && total > 0 ? Math.max(0, l.headroom_us / total) : 0));
  }
  return run.lines.map((l) => Math.max(0, (useDevice ? l.pct_device : l.pct_cpu) / 100));
}

/** The heat of each line of `run`, its lines moved by `shift` (profiled line + shift = current line). */
export function heatLines(run: HeatInput, shift: number, minShare = 0.001, levels = HEAT_LEVELS, by: HeatBy = 'time'): HeatLine[] {
  const shares = heatShares(run, by);
  const max = shares.reduce((a, b) => Math.max(a, b), 0);
  const out: HeatLine[] = [];
  run.lines.forEach((l, i) => {
    const share = shares[i] ?? 0;
    const level = heatLevel(share, max, minShare, levels);
    const line = l.line + shift - 1;
    if (level > 0 && line >= 0) {
      out.push({ line, level, share });
    }
  });
  return out;
}

export interface HeatColours {
  /** The gutter bar. */
  gutter: string;
  /** The mark in the overview ruler (scroll bar). */
  ruler: string;
  /** The whole-line background, when `oplens.heat` is `line`. */
  background: string;
}

function hsla(h: number, s: number, l: number, a: number): string {
  return `hsla(${Math.round(h)}, ${Math.round(s)}%, ${Math.round(l)}%, ${a.toFixed(2)})`;
}

/**
 * Colours for levels 1..levels (index 0 is level 1): from amber to red as the share grows, and
 * more opaque. Light themes get darker, more saturated colours; high-contrast themes opaque ones.
 */
export function heatPalette(kind: ThemeKind, levels = HEAT_LEVELS): HeatColours[] {
  const out: HeatColours[] = [];
  for (let level = 1; level <= levels; level++) {
    const t = levels === 1 ? 1 : (level - 1) / (levels - 1);
    const hue = 45 - 40 * t; // amber → red
    switch (kind) {
      case 'dark':
        out.push({
          gutter: hsla(hue, 90, 58, 0.45 + 0.55 * t),
          ruler: hsla(hue, 90, 58, 0.5 + 0.5 * t),
          background: hsla(hue, 90, 50, 0.05 + 0.17 * t),
        });
        break;
      case 'light':
        out.push({
          gutter: hsla(hue, 95, 45, 0.6 + 0.4 * t),
          ruler: hsla(hue, 95, 45, 0.5 + 0.5 * t),
          background: hsla(hue, 95, 50, 0.06 + 0.16 * t),
        });
        break;
      case 'highContrast':
        out.push({ gutter: hsla(hue, 100, 60, 1), ruler: hsla(hue, 100, 60, 1), background: hsla(hue, 100, 40, 0.25 + 0.2 * t) });
        break;
      case 'highContrastLight':
        out.push({ gutter: hsla(hue, 100, 35, 1), ruler: hsla(hue, 100, 35, 1), background: hsla(hue, 100, 50, 0.2 + 0.2 * t) });
        break;
    }
  }
  return out;
}

/** The gutter icon of a level: a bar whose width also grows with the level (readable without colour). */
export function gutterSvg(colour: string, level: number, levels = HEAT_LEVELS): string {
  const width = Math.round(3 + (9 * level) / levels);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">` +
    `<rect x="${16 - width}" y="0" width="${width}" height="16" fill="${colour}"/></svg>`
  );
}
