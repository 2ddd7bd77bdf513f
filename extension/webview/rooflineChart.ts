/**
 * The run page's roofline chart: hand-written SVG of the server's chart (the page's `roofline`,
 * `oplens.views.roofline`: every word) as shared/roofline.ts lays it out (log-log, the device's
 * ceilings, one dot per line), with a readout of the dot pointed at.
 */

import type { RooflineView } from '../shared/generated/views';
import type { RunView } from '../shared/messages';
import { roofline, type RooflineChart } from '../shared/roofline';
import { s, h } from './dom';
import { section, vscode } from './page';

/** The roofline chart (shared/roofline.ts lays it out), or the one line saying why there is none. */
export function rooflineSection(view: RunView, chart: RooflineView): HTMLElement {
  const { run } = view;
  const laid = roofline(chart, view.source);
  const title = 'Roofline · each line against the device’s ceilings';
  if ('note' in laid) {
    return section(title, h('p', { class: 'muted roofline-note' }, laid.note));
  }
  const c = laid.chart;
  const readout = h('p', { class: 'roofline-readout muted small', 'aria-live': 'polite' }, 'Point at a dot for its line; click it to go there.');
  return section(
    title,
    h('div', { class: 'roofline-wrap' }, rooflineSvg(c, run.run_id, readout)),
    readout,
    // a dot above the roofline is never left unexplained (the line beats a ceiling: its data stays in cache, ...)
    ...chart.above.map((why) => h('p', { class: 'muted small roofline-above' }, `▲ ${why}`)),
    h(
      'p',
      { class: 'muted small roofline-key' },
      ...['compute', 'memory', 'overhead', 'host', 'unknown'].flatMap((b) => [h('span', { class: `key-dot bound-${b}` }), `${b} `]),
      chart.key,
    ),
  );
}

function rooflineSvg(c: RooflineChart, runId: string, readout: HTMLElement): SVGSVGElement {
  const p = c.plot;
  const svg = s('svg', { class: 'roofline', viewBox: `0 0 ${c.width} ${c.height}`, role: 'img', 'aria-label': 'Roofline chart: each line’s achieved FLOP/s against its arithmetic intensity, under the device’s ceilings' });
  const grid = s('g', { class: 'grid' });
  for (const t of c.xTicks) {
    grid.append(s('line', { x1: t.at, y1: p.top, x2: t.at, y2: p.bottom }), s('text', { x: t.at, y: p.bottom + 14, 'text-anchor': 'middle' }, t.label));
  }
  for (const t of c.yTicks) {
    grid.append(s('line', { x1: p.left, y1: t.at, x2: p.right, y2: t.at }), s('text', { x: p.left - 6, y: t.at + 4, 'text-anchor': 'end' }, t.label));
  }
  grid.append(s('rect', { class: 'frame', x: p.left, y: p.top, width: p.right - p.left, height: p.bottom - p.top }));
  const axes = s(
    'g',
    { class: 'axis-titles' },
    s('text', { x: (p.left + p.right) / 2, y: c.height - 6, 'text-anchor': 'middle' }, 'arithmetic intensity (FLOP / byte)'),
    s('text', { x: 14, y: (p.top + p.bottom) / 2, 'text-anchor': 'middle', transform: `rotate(-90 14 ${(p.top + p.bottom) / 2})` }, 'achieved FLOP/s'),
  );
  const ceilings = s('g', { class: 'ceilings' });
  for (const l of c.ceilings) {
    ceilings.append(
      s('line', { class: `ceiling ceiling-${l.kind}`, x1: l.x1, y1: l.y1, x2: l.x2, y2: l.y2 }),
      s('text', { class: `ceiling-label ceiling-${l.kind}`, x: l.labelX, y: l.labelY, 'text-anchor': l.anchor, transform: l.angle ? `rotate(${l.angle} ${l.labelX} ${l.labelY})` : undefined }, l.label),
    );
  }
  const dots = s('g', { class: 'dots' });
  for (const d of c.dots) {
    const dot = s('circle', { class: `dot bound-${d.bound}${d.above ? ' above' : ''}`, cx: d.cx, cy: d.cy, r: d.r, tabindex: 0, role: 'button', 'aria-label': d.title.split('\n').join('; ') }, s('title', {}, d.title));
    const show = (): void => {
      readout.textContent = d.title.split('\n').join(' · ');
    };
    const go = (): void => vscode.post({ type: 'revealLine', runId, line: d.line });
    dot.addEventListener('mouseenter', show);
    dot.addEventListener('focus', show);
    dot.addEventListener('click', go);
    dot.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        go();
      }
    });
    dots.append(dot);
  }
  svg.append(grid, axes, ceilings, dots);
  return svg;
}
