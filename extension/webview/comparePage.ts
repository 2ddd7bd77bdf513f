/**
 * The results page of a comparison: each variant's time, as bars and figures, and its speed-up
 * against the first.
 */

import { backendOfLabel } from '../shared/backends';
import { deviceLabel, fmtCount, fmtSpeedup, fmtUs } from '../shared/format';
import type { CompareView } from '../shared/messages';
import { activate, append, clear, h } from './dom';
import { app, bar, section, vscode } from './page';

export function showCompare(view: CompareView): void {
  clear(app);
  const labels = [...new Set(view.rows.map((r) => deviceLabel(r.device_label)))];
  const label = labels.length === 1 ? (labels[0] as string) : 'DEVICE';
  const withCpu = backendOfLabel(label)?.onDevice ?? true; // mixed devices: each row's CPU time is its own
  const max = view.rows.reduce((m, r) => Math.max(m, r.self_device_us), 0);
  const body = h('tbody');
  view.rows.forEach((r, i) => {
    const name = h('a', { class: 'variant', title: 'Show this run' }, r.variant);
    activate(name, () => vscode.post({ type: 'showRun', runId: r.run_id }));
    body.append(
      h(
        'tr',
        { class: i === 0 ? 'baseline' : '' },
        h('td', { class: 'variant-cell' }, name, i === 0 ? h('span', { class: 'tag' }, 'baseline') : null, view.files[r.run_id] ? h('div', { class: 'muted small' }, view.files[r.run_id] ?? '') : null),
        h('td', { class: 'bar-cell' }, bar(max > 0 ? r.self_device_us / max : 0)),
        h('td', { class: 'num' }, fmtUs(r.self_device_us)),
        withCpu ? h('td', { class: 'num' }, fmtUs(r.self_cpu_us)) : null,
        h('td', { class: 'num' }, fmtCount(r.op_calls)),
        h('td', { class: 'num speedup' }, i === 0 ? '1.00×' : fmtSpeedup(r.speedup)),
      ),
    );
  });
  const head = h(
    'thead',
    {},
    h(
      'tr',
      {},
      h('th', { scope: 'col' }, 'Variant'),
      h('th', { scope: 'col', class: 'bar-cell', 'aria-label': `Self ${label}, as bars` }),
      h('th', { scope: 'col', class: 'num' }, `Self ${label}`),
      withCpu ? h('th', { scope: 'col', class: 'num' }, 'Self CPU') : null,
      h('th', { scope: 'col', class: 'num', title: 'Operator calls per iteration' }, 'Ops'),
      h('th', { scope: 'col', class: 'num' }, 'Speed-up'),
    ),
  );
  const baseline = view.rows[0];
  const best = view.rows.slice(1).reduce<(typeof view.rows)[number] | undefined>((b, r) => (!b || r.speedup > b.speedup ? r : b), undefined);
  let summary: HTMLElement | null = null;
  if (baseline && best && best.speedup > 1) {
    summary = h(
      'p',
      {},
      `${best.variant} takes ${fmtUs(best.self_device_us)} of ${label} time per iteration against ${fmtUs(baseline.self_device_us)} for ${baseline.variant}: ` +
        `${fmtSpeedup(best.speedup)} faster, in ${fmtCount(best.op_calls)} operator call${best.op_calls === 1 ? '' : 's'} instead of ${fmtCount(baseline.op_calls)}.`,
    );
  } else if (baseline && best) {
    summary = h('p', {}, `No variant is faster than ${baseline.variant} here (${fmtUs(baseline.self_device_us)} of ${label} time per iteration).`);
  }
  append(
    app,
    h('header', {}, h('h1', {}, 'Comparison ', h('span', { class: `badge device-${label.toLowerCase()}` }, label)), h('div', { class: 'sub' }, 'Per iteration, identical inputs and profiler settings; speed-ups against the first variant.')),
    section('Variants', h('table', { class: 'compare' }, head, body), summary),
    view.failed.length ? section('Not compared', h('ul', {}, ...view.failed.map((f) => h('li', {}, h('code', {}, f.variant), `: ${f.message}`)))) : null,
  );
}
