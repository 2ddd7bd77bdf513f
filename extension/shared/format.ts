/**
 * How OpLens writes numbers for people; the same rules as `server/oplens/records/format.py`, so the
 * editor's panel, status bar and the server's hints and lenses read alike.
 */
import { onDevice } from './backends';

function grouped(value: number, decimals: number): string {
  const fixed = Math.abs(value).toFixed(decimals);
  const [whole = '0', frac] = fixed.split('.');
  const withCommas = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const sign = value < 0 && Number(fixed) !== 0 ? '-' : '';
  return sign + withCommas + (frac !== undefined ? '.' + frac : '');
}

/** `1164.5` → `1.16 ms`; `125` → `125.0 µs`; `2_355_000` → `2,355.00 ms`. */
export function fmtUs(us: number): string {
  if (!Number.isFinite(us)) {
    return '–';
  }
  if (Math.abs(us) >= 1000) {
    return `${grouped(us / 1000, 2)} ms`;
  }
  return `${grouped(us, 1)} µs`;
}

/** `46.222` → `46.2 %`. */
export function fmtShare(pct: number): string {
  return Number.isFinite(pct) ? `${pct.toFixed(1)} %` : '–';
}

/** Call counts are means per iteration: `3` → `3`, `1.5` → `1.5`, `0.333…` → `0.33`. */
export function fmtCount(n: number): string {
  if (!Number.isFinite(n)) {
    return '–';
  }
  if (Number.isInteger(n)) {
    return grouped(n, 0);
  }
  return String(Number(n.toFixed(2)));
}

/** `6.0` → `6.0×`, `0` (no device time) → `–`. */
export function fmtSpeedup(x: number): string {
  return Number.isFinite(x) && x > 0 ? `${x >= 10 ? x.toFixed(1) : x.toFixed(2)}×` : '–';
}

/** The device's column label as torch.profiler writes it: `Self NEURON`, `Self CUDA`, `Self CPU`. */
export function deviceLabel(label: string | undefined): string {
  const clean = (label ?? '').trim().toUpperCase();
  return clean || 'DEVICE';
}

/** The short title of a run, like the server's totals lens: `NEURON 2.36 ms · CPU 125.0 µs · 6 ops · 20 iters`. */
export function totalsTitle(run: {
  backend: { name: string; device_label: string };
  totals: { self_device_us: number; self_cpu_us: number; op_calls: number };
  config: { iters: number };
  capture?: { calls_profiled: number; partial: boolean } | null;
}): string {
  const label = deviceLabel(run.backend.device_label);
  const parts = [`${label} ${fmtUs(run.totals.self_device_us)}`];
  if (onDevice(run)) {
    parts.push(`CPU ${fmtUs(run.totals.self_cpu_us)}`);
  }
  const c = run.capture;
  const counted = c ? `${c.calls_profiled} calls${c.partial ? ' (partial)' : ''}` : `${run.config.iters} iters`;
  parts.push(`${fmtCount(run.totals.op_calls)} ops`, counted);
  return parts.join(' · ');
}

/** A change as a user reads it (`format.fmt_ratio`): `2.1×` from 1.5 times up, else `+35 %` / `-40 %`. */
export function fmtRatio(ratio: number): string {
  if (!Number.isFinite(ratio)) {
    return '–';
  }
  if (ratio >= 1.5) {
    return `${ratio.toFixed(1)}×`;
  }
  const pct = (ratio - 1) * 100;
  return `${pct < 0 ? '-' : '+'}${Math.round(Math.abs(pct))} %`;
}

/**
 * A diff's verdict as a mark, as the server's hints write it (`format.fmt_change`): `▲ 2.1×` or
 * `▲ 35 %` slower, `▼ 40 %` faster (the time saved), `new`; '' for same and removed lines.
 */
export function fmtChange(verdict: string, ratio: number | null): string {
  if (verdict === 'new') {
    return 'new';
  }
  if (verdict !== 'slower' && verdict !== 'faster') {
    return '';
  }
  const arrow = verdict === 'slower' ? '▲' : '▼';
  if (ratio === null || !Number.isFinite(ratio)) {
    return arrow;
  }
  if (verdict === 'slower' && ratio >= 1.5) {
    return `${arrow} ${ratio.toFixed(1)}×`;
  }
  return `${arrow} ${Math.round(Math.abs(ratio - 1) * 100)} %`;
}

/** The function's verdict as the totals lens ends (`views.verdict_phrase`), against `than` (default: the previous run). */
export function verdictPhrase(totals: { verdict: string; ratio: number | null }, than = 'previous run'): string {
  if (totals.verdict === 'slower' || totals.verdict === 'faster') {
    return `${fmtChange(totals.verdict, totals.ratio)} ${totals.verdict} than ${than}`;
  }
  return `same as ${than}`;
}
