/**
 * Windowed rendering for long lists and tables: only the rows in (or near) the viewport exist in
 * the DOM, between two spacers that keep the scroll height right. Rows have one fixed height.
 * Short lists (under `threshold`) are rendered whole, so they need no scrolling container logic.
 */

export interface VirtualOptions {
  /** The element that scrolls (has a fixed max height and overflow: auto). */
  scroller: HTMLElement;
  /** Where rows go (a tbody, or a div). */
  body: HTMLElement;
  rowHeight: number;
  count: number;
  render: (index: number) => HTMLElement;
  /** A spacer element of the body's kind (a `tr` with one cell for tables). */
  spacer: () => HTMLElement;
  threshold?: number;
  overscan?: number;
}

export class VirtualRows {
  private first = -1;
  private last = -1;
  private readonly top: HTMLElement;
  private readonly bottom: HTMLElement;
  private readonly onScroll = (): void => this.update();
  private frame = 0;

  constructor(private readonly o: VirtualOptions) {
    this.top = o.spacer();
    this.bottom = o.spacer();
    this.top.classList.add('spacer');
    this.bottom.classList.add('spacer');
    if (o.count <= (o.threshold ?? 300)) {
      for (let i = 0; i < o.count; i++) {
        o.body.append(o.render(i));
      }
      return;
    }
    o.body.append(this.top, this.bottom);
    o.scroller.addEventListener('scroll', () => {
      cancelAnimationFrame(this.frame);
      this.frame = requestAnimationFrame(this.onScroll);
    });
    new ResizeObserver(() => this.update()).observe(o.scroller);
    this.update();
  }

  /** The rows to show now: the viewport, measured from the body's top, plus some overscan. */
  private update(): void {
    const { scroller, body, rowHeight, count } = this.o;
    const overscan = this.o.overscan ?? 12;
    const offset = body.getBoundingClientRect().top - scroller.getBoundingClientRect().top + scroller.scrollTop;
    const visibleTop = Math.max(0, scroller.scrollTop - offset);
    const height = scroller.clientHeight || 600;
    const first = Math.max(0, Math.floor(visibleTop / rowHeight) - overscan);
    const last = Math.min(count - 1, Math.ceil((visibleTop + height) / rowHeight) + overscan);
    if (first === this.first && last === this.last) {
      return;
    }
    this.first = first;
    this.last = last;
    const rows: HTMLElement[] = [];
    for (let i = first; i <= last; i++) {
      rows.push(this.o.render(i));
    }
    this.top.style.height = `${first * rowHeight}px`;
    this.bottom.style.height = `${Math.max(0, count - 1 - last) * rowHeight}px`;
    body.replaceChildren(this.top, ...rows, this.bottom);
  }
}
