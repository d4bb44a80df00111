/**
 * A list that renders only the rows in view (plus a few either side), whatever the length.
 * Rows have one fixed height, so a row's place is its index times that height. While the
 * reader has scrolled down, rows arriving on top push the scroll position down with them, so
 * what they are reading stays put.
 */
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { type LiveEntry, clockTime } from "./entries";

const OVERSCAN = 6;

export function WindowedRows({
  rows,
  rowHeight,
  resetKey,
  selectedSeq,
  onOpen,
  header,
}: {
  rows: LiveEntry[];
  rowHeight: number;
  /** Changes when the filter does: back to the top, no anchoring across filters. */
  resetKey: string;
  selectedSeq: number | undefined;
  onOpen: (entry: LiveEntry) => void;
  header: [string, string, string, string];
}) {
  const scroller = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [viewport, setViewport] = useState(600);
  const newest = useRef<{ seq: number | undefined; key: string }>({ seq: undefined, key: resetKey });

  // Measured before the first paint, so the first frame renders the right number of rows.
  useLayoutEffect(() => {
    const el = scroller.current!;
    const observer = new ResizeObserver(() => setViewport(el.clientHeight));
    observer.observe(el);
    setViewport(el.clientHeight);
    return () => observer.disconnect();
  }, []);

  useLayoutEffect(() => {
    const el = scroller.current!;
    const before = newest.current;
    newest.current = { seq: rows[0]?.seq, key: resetKey };
    if (before.key !== resetKey) {
      el.scrollTop = 0;
      setScrollTop(0);
      return;
    }
    if (el.scrollTop <= 0 || before.seq === undefined) return;
    // Rows are newest first: the old top row's new index is how many arrived above it.
    let added = 0;
    while (added < rows.length && rows[added]!.seq > before.seq) added++;
    if (added > 0 && added < rows.length) {
      el.scrollTop += added * rowHeight;
      setScrollTop(el.scrollTop);
    }
  }, [rows, resetKey, rowHeight]);

  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - OVERSCAN);
  const last = Math.min(rows.length, Math.ceil((scrollTop + viewport) / rowHeight) + OVERSCAN);
  const visible = rows.slice(first, last);

  return (
    <div class="live-table">
      <div class="live-row live-head" aria-hidden="true">
        {header.map((h) => (
          <span key={h}>{h}</span>
        ))}
      </div>
      <div class="live-scroll" ref={scroller} onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}>
        <ul class="live-spacer" style={{ height: `${rows.length * rowHeight}px` }} aria-label="Live messages, newest first">
          {visible.map((e, i) => (
            <li key={e.seq} class="live-item" style={{ top: `${(first + i) * rowHeight}px`, height: `${rowHeight}px` }}>
              <button
                type="button"
                class={e.seq === selectedSeq ? "live-row selected" : "live-row"}
                aria-current={e.seq === selectedSeq ? "true" : undefined}
                data-testid="live-row"
                onClick={() => onOpen(e)}
              >
                <span class={e.failed ? `live-kind kind-${e.kind} kind-failed` : `live-kind kind-${e.kind}`}>{e.kind || "?"}</span>
                <span class="live-title">{e.title || <span class="muted">—</span>}</span>
                <span class="live-user" title={e.anonymous && e.user ? "anonymousId" : undefined}>
                  {e.user || <span class="muted">{e.webhook ? "—" : "no user"}</span>}
                  {e.anonymous && e.user && <span class="muted"> (anon)</span>}
                </span>
                <time class="live-time" dateTime={e.at} title={e.at}>
                  {clockTime(e.at)}
                </time>
              </button>
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}
