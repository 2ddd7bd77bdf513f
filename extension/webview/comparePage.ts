/**
 * The results page of a comparison: each variant's time, as bars and figures, and its speed-up
 * against the first with its 95 % interval and verdict. The server writes the page (`oplens.views.compare`:
 * names, figures, speed-ups, intervals, verdicts, the summary and how the variants were measured); this
 * draws it, the bars' lengths from the device times.
 */

import type { CompareView } from '../shared/messages';
import { activate, append, clear, h } from './dom';
import { app, bar, section, vscode } from './page';

export function showCompare(view: CompareView): void {
  clear(app);
  const { label, rows } = view.page;
  const withCpu = view.page.with_cpu;
  const max = rows.reduce((m, r) => Math.max(m, r.self_device_us), 0);
  const body = h('tbody');
  rows.forEach((r, i) => {
    const name = h('a', { class: 'variant', title: 'Show this run' }, r.variant);
    activate(name, () => vscode.post({ type: 'showRun', runId: r.run_id }));
    body.append(
      h(
        'tr',
        { class: i === 0 ? 'baseline' : '' },
        h('td', { class: 'variant-cell' }, name, i === 0 ? h('span', { class: 'tag' }, 'baseline') : null, view.files[r.run_id] ? h('div', { class: 'muted small' }, view.files[r.run_id] ?? '') : null),
        h('td', { class: 'bar-cell' }, bar(max > 0 ? r.self_device_us / max : 0)),
        h('td', { class: 'num' }, r.self_device),
        withCpu ? h('td', { class: 'num' }, r.self_cpu) : null,
        h('td', { class: 'num' }, r.op_calls),
        h('td', { class: 'num speedup' }, r.speedup),
        h('td', { class: 'num muted' }, r.interval),
        h('td', { class: `verdict verdict-${r.verdict.replace(/ /g, '-')}` }, r.verdict),
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
      h('th', { scope: 'col', class: 'num', title: "The speed-up's 95 % interval" }, '95 % interval'),
      h('th', { scope: 'col' }, 'Verdict'),
    ),
  );
  const summary = view.page.summary ? h('p', {}, view.page.summary) : null;
  const method = view.page.method ? h('p', { class: 'muted small method' }, view.page.method) : null;
  append(
    app,
    h('header', {}, h('h1', {}, 'Comparison ', h('span', { class: `badge device-${label.toLowerCase()}` }, label)), h('div', { class: 'sub' }, 'Per iteration, measured side by side; speed-ups against the first variant, with their 95 % interval.')),
    section('Variants', h('table', { class: 'compare' }, head, body), summary, method),
    view.failed.length ? section('Not compared', h('ul', {}, ...view.failed.map((f) => h('li', {}, h('code', {}, f.variant), `: ${f.message}`)))) : null,
  );
}
