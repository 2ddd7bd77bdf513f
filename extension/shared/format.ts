/**
 * A time as OpLens writes it (`server/oplens/records/format.py`'s `fmt_us`), for the one page that
 * writes times the server cannot: the trace viewer's axis and readouts, which change as it zooms.
 * Every other word the results panel shows is the server's (`oplens.views`).
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
