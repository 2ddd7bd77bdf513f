/**
 * How OpLens writes numbers for people; the same rules as `server/oplens/records/format.py`, so the
 * editor's panel, status bar and the server's hints and lenses read alike.
 */

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

/** The device's column label as torch.profiler writes it: `Self NEURON`, `Self CUDA`, `Self CPU`. */
export function deviceLabel(label: string | undefined): string {
  const clean = (label ?? '').trim().toUpperCase();
  return clean || 'DEVICE';
}
