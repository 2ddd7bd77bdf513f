/**
 * The built-in trace viewer (browser side): a canvas timeline of a trace.json laid out by the
 * extension (src/trace/trace.ts). One row per nesting level of each process/thread lane; only events in
 * view are drawn, and events narrower than a pixel are merged, so traces of hundreds of thousands
 * of events pan and zoom smoothly. Works offline: nothing is fetched.
 *
 * Ctrl/⌘+wheel or W/S zoom, drag or A/D pan, wheel scrolls lanes, 0 fits the iterations, 9 shows
 * everything; hover for details;
 * a click on an `oplens.line:N` range jumps to line N.
 */

import './trace.css';
import { fmtUs } from '../shared/format';
import { markerIteration, markerLine } from '../shared/markers';
import type { FromTraceViewer, ToTraceViewer, TraceModel } from '../shared/messages';
import { append, clear, h } from './dom';
import { channel } from './vscodeApi';

const vscode = channel<FromTraceViewer, never>();
const app = document.getElementById('app') as HTMLElement;

const ROW = 18;
const LANE_GAP = 8;
const AXIS = 26;
const LABELS = 200;

interface View {
  t0: number;
  t1: number;
  scrollY: number;
}

class Timeline {
  private readonly canvas: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly tooltip: HTMLElement;
  /** Per row: event indices in start order. */
  private readonly rows: Int32Array[] = [];
  /** Per row: its lane, its depth, and its y (content coordinates). */
  private readonly rowLane: number[] = [];
  private readonly rowY: number[] = [];
  private readonly laneY: number[] = [];
  private readonly contentHeight: number;
  private view: View;
  /** The first view: the profiled iterations (OpLens's `oplens.iter` ranges), else everything. */
  private readonly home: { t0: number; t1: number };
  private frame = 0;
  private search = '';
  private readonly matches: Uint8Array;
  private readonly colours: string[];
  private readonly dark: boolean;

  constructor(
    private readonly m: TraceModel,
    private readonly host: HTMLElement,
  ) {
    this.canvas = h('canvas', { class: 'timeline', tabindex: '0', 'aria-label': 'Trace timeline' });
    this.tooltip = h('div', { class: 'tip', role: 'tooltip' });
    host.append(this.canvas, this.tooltip);
    const ctx = this.canvas.getContext('2d');
    if (!ctx) {
      throw new Error('no 2D canvas');
    }
    this.ctx = ctx;
    this.dark = !document.body.classList.contains('vscode-light') && !document.body.classList.contains('vscode-high-contrast-light');

    // rows: lanes one after another, one row per depth
    let y = AXIS;
    const firstRow: number[] = [];
    m.lanes.forEach((lane, li) => {
      this.laneY.push(y);
      firstRow.push(this.rows.length);
      for (let d = 0; d < Math.max(1, lane.depth); d++) {
        this.rowLane.push(li);
        this.rowY.push(y + d * ROW);
        this.rows.push(new Int32Array(0));
      }
      y += Math.max(1, lane.depth) * ROW + LANE_GAP;
    });
    this.contentHeight = y;
    const counts = new Int32Array(this.rows.length);
    const rowOf = new Int32Array(m.start.length);
    for (let i = 0; i < m.start.length; i++) {
      const r = (firstRow[m.lane[i] ?? 0] ?? 0) + (m.depth[i] ?? 0);
      rowOf[i] = r;
      counts[r] = (counts[r] ?? 0) + 1;
    }
    for (let r = 0; r < this.rows.length; r++) {
      this.rows[r] = new Int32Array(counts[r] ?? 0);
    }
    const filled = new Int32Array(this.rows.length);
    for (let i = 0; i < m.start.length; i++) {
      const r = rowOf[i] ?? 0;
      (this.rows[r] as Int32Array)[filled[r]!++] = i; // events come sorted by lane then start
    }
    this.matches = new Uint8Array(m.names.length).fill(1);
    this.colours = m.names.map((name) => this.colourFor(name));
    this.home = this.fit();
    this.view = { ...this.home, scrollY: 0 };

    new ResizeObserver(() => this.draw()).observe(host);
    this.bind();
    this.draw();
  }

  private colourFor(name: string): string {
    if (markerIteration(name) !== undefined) {
      return this.dark ? 'hsl(210, 15%, 32%)' : 'hsl(210, 20%, 82%)';
    }
    if (markerLine(name) !== undefined) {
      return this.dark ? 'hsl(28, 70%, 40%)' : 'hsl(28, 85%, 70%)';
    }
    let hash = 0;
    for (let i = 0; i < name.length; i++) {
      hash = (hash * 31 + name.charCodeAt(i)) | 0;
    }
    const hue = Math.abs(hash) % 360;
    return this.dark ? `hsl(${hue}, 45%, 38%)` : `hsl(${hue}, 60%, 75%)`;
  }

  setSearch(text: string): void {
    this.search = text.trim().toLowerCase();
    this.m.names.forEach((n, i) => (this.matches[i] = !this.search || n.toLowerCase().includes(this.search) ? 1 : 0));
    this.draw();
  }

  /** The span of the iteration markers, padded; the whole trace when it has none. */
  private fit(): { t0: number; t1: number } {
    let lo = Infinity;
    let hi = -Infinity;
    const m = this.m;
    m.name.forEach((n, i) => {
      if (markerIteration(m.names[n] ?? '') !== undefined) {
        lo = Math.min(lo, m.start[i] ?? 0);
        hi = Math.max(hi, (m.start[i] ?? 0) + (m.dur[i] ?? 0));
      }
    });
    if (!(hi > lo)) {
      return { t0: 0, t1: Math.max(m.span, 1) };
    }
    const pad = (hi - lo) * 0.02;
    return { t0: lo - pad, t1: hi + pad };
  }

  /** Back to the iterations; `all` shows the whole trace. */
  reset(all = false): void {
    this.view = all ? { t0: 0, t1: Math.max(this.m.span, 1), scrollY: 0 } : { ...this.home, scrollY: 0 };
    this.draw();
  }

  private get width(): number {
    return this.host.clientWidth;
  }

  private get height(): number {
    return this.host.clientHeight;
  }

  private tOf(x: number): number {
    const { t0, t1 } = this.view;
    return t0 + ((x - LABELS) / (this.width - LABELS)) * (t1 - t0);
  }

  private zoom(factor: number, atX: number): void {
    const t = this.tOf(Math.max(LABELS, atX));
    const { t0, t1 } = this.view;
    const minSpan = 0.01; // 10 ns
    const span = Math.max(minSpan, Math.min(this.m.span * 1.2 || 1, (t1 - t0) * factor));
    const left = (t - t0) / (t1 - t0);
    this.view.t0 = t - left * span;
    this.view.t1 = this.view.t0 + span;
    this.draw();
  }

  private pan(dxPx: number, dyPx: number): void {
    const dt = (dxPx / Math.max(1, this.width - LABELS)) * (this.view.t1 - this.view.t0);
    this.view.t0 += dt;
    this.view.t1 += dt;
    this.view.scrollY = Math.max(0, Math.min(Math.max(0, this.contentHeight - this.height), this.view.scrollY + dyPx));
    this.draw();
  }

  private bind(): void {
    const c = this.canvas;
    c.addEventListener(
      'wheel',
      (e) => {
        e.preventDefault();
        const rect = c.getBoundingClientRect();
        const scrollable = this.contentHeight > this.height;
        if (e.ctrlKey || e.metaKey || (!scrollable && Math.abs(e.deltaY) > Math.abs(e.deltaX))) {
          this.zoom(Math.exp(e.deltaY * 0.002), e.clientX - rect.left);
        } else {
          this.pan(e.shiftKey ? e.deltaY : e.deltaX, e.shiftKey ? 0 : e.deltaY);
        }
      },
      { passive: false },
    );
    let drag: { x: number; y: number; moved: boolean } | undefined;
    c.addEventListener('mousedown', (e) => (drag = { x: e.clientX, y: e.clientY, moved: false }));
    window.addEventListener('mouseup', () => setTimeout(() => (drag = undefined), 0));
    c.addEventListener('mousemove', (e) => {
      if (drag && (e.buttons & 1) === 1) {
        const dx = e.clientX - drag.x;
        const dy = e.clientY - drag.y;
        if (Math.abs(dx) + Math.abs(dy) > 2) {
          drag.moved = true;
        }
        drag.x = e.clientX;
        drag.y = e.clientY;
        this.pan(-dx, -dy);
        this.tooltip.classList.remove('shown');
        return;
      }
      this.hover(e);
    });
    c.addEventListener('mouseleave', () => this.tooltip.classList.remove('shown'));
    c.addEventListener('click', (e) => {
      if (drag?.moved) {
        return;
      }
      const hit = this.hit(e);
      const line = hit === undefined ? undefined : markerLine(this.m.names[this.m.name[hit] ?? 0] ?? '');
      if (line !== undefined) {
        vscode.post({ type: 'revealLine', line });
      }
    });
    c.addEventListener('dblclick', (e) => {
      const hit = this.hit(e);
      if (hit !== undefined) {
        const start = this.m.start[hit] ?? 0;
        const dur = Math.max(this.m.dur[hit] ?? 0, 0.01);
        this.view.t0 = start - dur * 0.1;
        this.view.t1 = start + dur * 1.1;
        this.draw();
      }
    });
    c.addEventListener('keydown', (e) => {
      const mid = LABELS + (this.width - LABELS) / 2;
      const step = (this.width - LABELS) * 0.15;
      switch (e.key) {
        case 'w':
          this.zoom(0.8, mid);
          break;
        case 's':
          this.zoom(1.25, mid);
          break;
        case 'a':
          this.pan(-step, 0);
          break;
        case 'd':
          this.pan(step, 0);
          break;
        case '0':
          this.reset();
          break;
        case '9':
          this.reset(true);
          break;
        default:
          return;
      }
      e.preventDefault();
    });
  }

  /** The event under the mouse, if any. */
  private hit(e: MouseEvent): number | undefined {
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left;
    const y = e.clientY - rect.top + this.view.scrollY;
    if (x < LABELS || e.clientY - rect.top < AXIS) {
      return undefined;
    }
    const r = this.rowY.findIndex((ry) => y >= ry && y < ry + ROW);
    if (r < 0) {
      return undefined;
    }
    const t = this.tOf(x);
    const slack = (2 / Math.max(1, this.width - LABELS)) * (this.view.t1 - this.view.t0); // 2 px
    const row = this.rows[r] as Int32Array;
    let lo = 0;
    let hi = row.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const i = row[mid] as number;
      if ((this.m.start[i] ?? 0) + (this.m.dur[i] ?? 0) + slack < t) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    const i = row[lo];
    if (i !== undefined && (this.m.start[i] ?? 0) - slack <= t) {
      return i;
    }
    return undefined;
  }

  private hover(e: MouseEvent): void {
    const i = this.hit(e);
    if (i === undefined) {
      this.tooltip.classList.remove('shown');
      this.canvas.classList.remove('pointer');
      return;
    }
    const name = this.m.names[this.m.name[i] ?? 0] ?? '';
    const cat = this.m.categories[this.m.category[i] ?? 0] ?? '';
    const line = markerLine(name);
    this.canvas.classList.toggle('pointer', line !== undefined);
    this.tooltip.replaceChildren();
    append(
      this.tooltip,
      h('div', { class: 'tip-name' }, name),
      h('div', {}, `${fmtUs(this.m.dur[i] ?? 0)} at ${fmtUs(this.m.start[i] ?? 0)}`),
      cat ? h('div', { class: 'muted' }, cat) : null,
      h('div', { class: 'muted' }, this.m.lanes[this.m.lane[i] ?? 0]?.name ?? ''),
      line !== undefined ? h('div', { class: 'muted' }, `click to go to line ${line}`) : null,
    );
    const rect = this.host.getBoundingClientRect();
    this.tooltip.style.left = `${Math.min(e.clientX - rect.left + 14, this.width - 260)}px`;
    this.tooltip.style.top = `${e.clientY - rect.top + 14}px`;
    this.tooltip.classList.add('shown');
  }

  draw(): void {
    cancelAnimationFrame(this.frame);
    this.frame = requestAnimationFrame(() => this.paint());
  }

  private paint(): void {
    const dpr = window.devicePixelRatio || 1;
    const w = this.width;
    const hgt = this.height;
    if (this.canvas.width !== Math.round(w * dpr) || this.canvas.height !== Math.round(hgt * dpr)) {
      this.canvas.width = Math.round(w * dpr);
      this.canvas.height = Math.round(hgt * dpr);
      this.canvas.style.width = `${w}px`;
      this.canvas.style.height = `${hgt}px`;
    }
    const ctx = this.ctx;
    const style = getComputedStyle(document.body);
    const fg = style.getPropertyValue('--vscode-foreground').trim() || (this.dark ? '#ccc' : '#333');
    const muted = style.getPropertyValue('--vscode-descriptionForeground').trim() || '#888';
    const bg = style.getPropertyValue('--vscode-editor-background').trim() || (this.dark ? '#1e1e1e' : '#fff');
    const border = style.getPropertyValue('--vscode-panel-border').trim() || 'rgba(128,128,128,0.35)';
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = bg;
    ctx.fillRect(0, 0, w, hgt);
    ctx.font = `11px ${style.getPropertyValue('--vscode-font-family') || 'sans-serif'}`;
    ctx.textBaseline = 'middle';

    const { t0, t1, scrollY } = this.view;
    const scale = (w - LABELS) / (t1 - t0);
    const m = this.m;

    ctx.save();
    ctx.beginPath();
    ctx.rect(LABELS, AXIS, w - LABELS, hgt - AXIS);
    ctx.clip();
    for (let r = 0; r < this.rows.length; r++) {
      const y = (this.rowY[r] ?? 0) - scrollY;
      if (y + ROW < AXIS || y > hgt) {
        continue;
      }
      const row = this.rows[r] as Int32Array;
      // first event that ends after t0 (events of one row do not overlap, so ends are ordered)
      let lo = 0;
      let hi = row.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        const i = row[mid] as number;
        if ((m.start[i] ?? 0) + (m.dur[i] ?? 0) < t0) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      let lastPx = -1;
      for (let k = lo; k < row.length; k++) {
        const i = row[k] as number;
        const start = m.start[i] ?? 0;
        if (start > t1) {
          break;
        }
        const x0 = LABELS + (start - t0) * scale;
        const x1 = x0 + (m.dur[i] ?? 0) * scale;
        if (x1 - x0 < 1 && Math.floor(x0) <= lastPx) {
          continue; // merged into the pixel already drawn
        }
        const nameIndex = m.name[i] ?? 0;
        const left = Math.max(x0, LABELS - 1);
        const width = Math.max(1, Math.min(x1, w + 1) - left);
        ctx.globalAlpha = this.matches[nameIndex] ? 1 : 0.18;
        ctx.fillStyle = this.colours[nameIndex] ?? '#888';
        ctx.fillRect(left, y + 1, width, ROW - 2);
        lastPx = Math.floor(left + width);
        if (width > 36) {
          const name = m.names[nameIndex] ?? '';
          const room = Math.floor((width - 6) / 6.2);
          ctx.fillStyle = fg;
          ctx.fillText(name.length > room ? name.slice(0, Math.max(1, room - 1)) + '…' : name, left + 3, y + ROW / 2, width - 4);
        }
      }
    }
    ctx.restore();
    ctx.globalAlpha = 1;

    // lane labels
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS, LABELS, hgt - AXIS);
    ctx.clip();
    ctx.fillStyle = bg;
    ctx.fillRect(0, AXIS, LABELS, hgt - AXIS);
    m.lanes.forEach((lane, li) => {
      const y = (this.laneY[li] ?? 0) - scrollY;
      ctx.fillStyle = fg;
      ctx.fillText(lane.name.length > 32 ? lane.name.slice(0, 31) + '…' : lane.name, 6, y + ROW / 2, LABELS - 10);
      ctx.strokeStyle = border;
      ctx.beginPath();
      ctx.moveTo(0, y - LANE_GAP / 2);
      ctx.lineTo(w, y - LANE_GAP / 2);
      ctx.stroke();
    });
    ctx.restore();

    // time axis
    ctx.fillStyle = bg;
    ctx.fillRect(0, 0, w, AXIS);
    ctx.strokeStyle = border;
    ctx.beginPath();
    ctx.moveTo(0, AXIS - 0.5);
    ctx.lineTo(w, AXIS - 0.5);
    ctx.stroke();
    const span = t1 - t0;
    const target = span / Math.max(1, (w - LABELS) / 110);
    const pow = Math.pow(10, Math.floor(Math.log10(target)));
    const step = [1, 2, 5, 10].map((f) => f * pow).find((s) => s >= target) ?? 10 * pow;
    ctx.fillStyle = muted;
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const x = LABELS + (t - t0) * scale;
      ctx.fillRect(x, AXIS - 6, 1, 6);
      ctx.fillText(fmtUs(t), x + 3, AXIS / 2);
    }
    ctx.fillText(`${fmtUs(span)} in view`, 6, AXIS / 2);
  }
}

function show(m: TraceModel): void {
  clear(app);
  const search = h('input', { type: 'search', placeholder: 'Highlight names…', 'aria-label': 'Highlight events by name' });
  const reset = h('button', { type: 'button', title: 'Back to the profiled iterations (0)' }, 'Fit iterations');
  const whole = h('button', { type: 'button', title: 'The whole trace (9)' }, 'Whole trace');
  const info = `${m.start.length.toLocaleString()} events · ${m.lanes.length} lane${m.lanes.length === 1 ? '' : 's'} · ${fmtUs(m.span)}${m.dropped ? ` · ${m.dropped.toLocaleString()} shortest events left out` : ''}`;
  const stage = h('div', { class: 'stage' });
  app.append(
    h(
      'div',
      { class: 'toolbar' },
      h('strong', {}, m.title),
      h('span', { class: 'muted' }, info),
      search,
      reset,
      whole,
      h('span', { class: 'muted hint' }, 'Ctrl/⌘+wheel or W/S zoom · drag or A/D pan · double-click fits an event · click an oplens.line range to go to the line'),
    ),
    stage,
  );
  if (m.start.length === 0) {
    stage.append(h('p', { class: 'muted pad' }, 'This trace has no complete events to show.'));
    return;
  }
  const timeline = new Timeline(m, stage);
  search.addEventListener('input', () => timeline.setSearch(search.value));
  reset.addEventListener('click', () => timeline.reset());
  whole.addEventListener('click', () => timeline.reset(true));
}

window.addEventListener('message', (event: MessageEvent<ToTraceViewer>) => {
  const msg = event.data;
  if (msg.type === 'trace') {
    show(msg.model);
  } else {
    clear(app);
    app.append(h('p', { class: 'error pad' }, msg.message));
  }
});

vscode.post({ type: 'ready' });
