/**
 * Live events: `/live?source=<id>` streams the events a source accepts, `/live?destination=<id>`
 * the delivery attempts to a destination (the API's Server-Sent Events streams). Without either,
 * the page lists sources and destinations to pick from.
 *
 * Built for a firehose: arriving messages wait in a queue that is drained once per animation
 * frame into a bounded buffer (the newest LIMIT), and the list renders only the rows in view.
 * A source's webhook requests come as items of their own, after the events they became; opened,
 * one shows the request as it came beside those events.
 * Every value shown comes from events, webhook requests or destination answers, so it is
 * rendered as text only.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { useLocation } from "preact-iso";
import { ApiError, api } from "../api";
import { useSourcesAndDestinations } from "../hooks";
import { CopyButton, ErrorNote, PageHeader } from "../layout";
import { destinationPath, sourcePath } from "../links";
import { eventCount, requestText } from "../webhook-request";
import { type LiveEntry, type StreamKind, FILTER_VALUES, LIMIT, pairWebhookEvents, parseEntry } from "./live/entries";
import { WindowedRows } from "./live/windowed-rows";
import "./live/live.css";

export default function LivePage() {
  const { query } = useLocation();
  // A key per stream: switching streams starts from an empty buffer and a fresh connection.
  if (query.source) return <LiveStream key={`source:${query.source}`} kind="source" id={query.source} />;
  if (query.destination) return <LiveStream key={`destination:${query.destination}`} kind="destination" id={query.destination} />;
  return <StreamPicker />;
}

function StreamPicker() {
  const { sources, destinations, error } = useSourcesAndDestinations();

  return (
    <>
      <PageHeader title="Live events" />
      <p class="muted">Watch a source's events as they are accepted, or a destination's delivery attempts as they happen. Pick one.</p>
      <ErrorNote error={error} />
      {!error && (sources === undefined || destinations === undefined) && <p class="muted">Loading…</p>}
      {sources && destinations && (
        <div class="live-pick">
          <section class="card">
            <h2>Sources</h2>
            {sources.length === 0 ? (
              <p class="empty">
                No sources yet. <a href="/sources">Create a source</a>, then send it an event.
              </p>
            ) : (
              <ul class="live-pick-list">
                {sources.map((s) => (
                  <li key={s.id}>
                    <a href={`/live?source=${encodeURIComponent(s.id)}`}>{s.name}</a>
                    <span class="muted">
                      {plural(s.destinationIds.length, "destination")}
                      {s.enabled ? "" : " · disabled"}
                    </span>
                  </li>
                ))}
              </ul>
            )}
          </section>
          <section class="card">
            <h2>Destinations</h2>
            {destinations.length === 0 ? (
              <p class="empty">
                No destinations yet. <a href="/destinations">Create a destination</a> and connect it to a source.
              </p>
            ) : (
              <ul class="live-pick-list">
                {destinations.map((d) => (
                  <li key={d.id}>
                    <a href={`/live?destination=${encodeURIComponent(d.id)}`}>{d.name}</a>
                    <span class="muted">
                      {d.type}
                      {d.enabled ? "" : " · disabled"}
                    </span>
                  </li>
                ))}
              </ul>
            )}
          </section>
        </div>
      )}
    </>
  );
}

const plural = (n: number, noun: string) => `${n.toLocaleString()} ${noun}${n === 1 ? "" : "s"}`;

type Connection = "connecting" | "live" | "reconnecting" | "closed";

function useNarrow(): boolean {
  const media = useMemo(() => matchMedia("(max-width: 760px)"), []);
  const [narrow, setNarrow] = useState(media.matches);
  useEffect(() => {
    const on = () => setNarrow(media.matches);
    media.addEventListener("change", on);
    return () => media.removeEventListener("change", on);
  }, [media]);
  return narrow;
}

function LiveStream({ kind, id }: { kind: StreamKind; id: string }) {
  const { query, route } = useLocation();
  const filterValue = FILTER_VALUES[kind].includes(query.type ?? "") ? query.type! : "";
  const text = query.q ?? "";
  const needle = text.trim().toLowerCase();

  const [name, setName] = useState<string | undefined>();
  const [loadError, setLoadError] = useState("");
  const [connection, setConnection] = useState<Connection>("connecting");
  const [generation, setGeneration] = useState(0);
  const [paused, setPaused] = useState(false);
  const [version, setVersion] = useState(0);
  const [held, setHeld] = useState(0);
  const [selected, setSelected] = useState<LiveEntry | undefined>();

  // Oldest first, at most LIMIT entries; changed in place and re-rendered through `version`.
  const buffer = useRef<LiveEntry[]>([]);
  const queue = useRef<LiveEntry[]>([]);
  const pausedRef = useRef(false);
  const frame = useRef(0);
  const seq = useRef(0);
  const total = useRef(0);

  const flush = () => {
    frame.current = 0;
    if (!pausedRef.current && queue.current.length > 0) {
      let next = buffer.current.concat(queue.current);
      if (next.length > LIMIT) next = next.slice(next.length - LIMIT);
      buffer.current = next;
      queue.current = [];
      setVersion((v) => v + 1);
    }
    setHeld(Math.min(queue.current.length, LIMIT));
  };
  const schedule = () => {
    if (!frame.current) frame.current = requestAnimationFrame(flush);
  };

  useEffect(() => {
    const path = `/v2/${kind}s/${encodeURIComponent(id)}`;
    let source: EventSource | undefined;
    let closed = false;
    setConnection("connecting");
    const explainFailure = () =>
      api<{ name: string }>("GET", path).then(
        () => undefined,
        (e: Error) => {
          if (closed) return;
          if (e instanceof ApiError && e.status === 404) {
            source?.close();
            setLoadError(`There is no ${kind} with the id ${id}.`);
          }
        },
      );
    api<{ name: string }>("GET", path).then(
      (row) => {
        if (closed) return;
        setName(row.name);
        source = new EventSource(`${path}/live-events`);
        source.addEventListener("ready", () => setConnection("live"));
        source.addEventListener(kind === "source" ? "event" : "attempt", (m) => {
          const entry = parseEntry(kind, (m as MessageEvent<string>).data, ++seq.current);
          if (!entry) return;
          // Its events arrived just before it: still queued, or already shown.
          if (entry.webhook) pairWebhookEvents(entry, [queue.current, buffer.current]);
          total.current++;
          const q = queue.current;
          q.push(entry);
          // While paused the queue holds the newest LIMIT too, so memory stays bounded.
          if (q.length > LIMIT * 2) queue.current = q.slice(q.length - LIMIT);
          schedule();
        });
        source.onerror = () => {
          if (closed) return;
          setConnection(source!.readyState === EventSource.CLOSED ? "closed" : "reconnecting");
          // A lost session goes to sign-in (api does that); a deleted stream says so.
          explainFailure();
        };
      },
      (e: Error) => {
        if (closed) return;
        setLoadError(e instanceof ApiError && e.status === 404 ? `There is no ${kind} with the id ${id}.` : e.message);
      },
    );
    return () => {
      closed = true;
      source?.close();
      if (frame.current) cancelAnimationFrame(frame.current);
      frame.current = 0;
    };
  }, [kind, id, generation]);

  const togglePause = () => {
    pausedRef.current = !paused;
    setPaused(!paused);
    schedule();
  };
  const clear = () => {
    buffer.current = [];
    queue.current = [];
    total.current = 0;
    setSelected(undefined);
    setVersion((v) => v + 1);
    setHeld(0);
  };
  const setQuery = (patch: Record<string, string>) => {
    const params = new URLSearchParams(location.search);
    for (const [k, v] of Object.entries(patch)) {
      if (v) params.set(k, v);
      else params.delete(k);
    }
    route(`/live?${params}`, true);
  };

  const rows = useMemo(() => {
    const out: LiveEntry[] = [];
    const b = buffer.current;
    for (let i = b.length - 1; i >= 0; i--) {
      const e = b[i]!;
      if (filterValue && e.kind !== filterValue) continue;
      if (needle && !e.search.includes(needle)) continue;
      out.push(e);
    }
    return out;
  }, [version, filterValue, needle]);

  const narrow = useNarrow();
  const isSource = kind === "source";
  const noun = isSource ? "events" : "attempts";
  const title = name === undefined ? "Live events" : `Live: ${name}`;

  if (loadError) {
    return (
      <>
        <PageHeader title="Live events" />
        <ErrorNote error={loadError} />
        <p>
          <a href="/live">Pick a source or destination</a> to watch.
        </p>
      </>
    );
  }

  return (
    <>
      <PageHeader title={title}>
        <a href="/live">Watch another</a>
      </PageHeader>
      <p class="muted live-intro">
        {isSource ? "Each event this source accepts, and each webhook request it maps, newest first. " : "Each delivery attempt to this destination, newest first. "}
        <a href={isSource ? sourcePath(id) : destinationPath(id)}>Open the {kind}</a>
      </p>

      <div class="card live-toolbar">
        <button type="button" class={paused ? "primary" : undefined} onClick={togglePause} aria-pressed={paused}>
          {paused ? "Resume" : "Pause"}
        </button>
        <button type="button" onClick={clear}>
          Clear
        </button>
        <div class="live-field">
          <label for="live-type">{isSource ? "Type" : "State"}</label>
          <select id="live-type" value={filterValue} onChange={(e) => setQuery({ type: e.currentTarget.value })}>
            <option value="">{isSource ? "All types" : "All states"}</option>
            {FILTER_VALUES[kind].map((v) => (
              <option key={v} value={v}>
                {v}
              </option>
            ))}
          </select>
        </div>
        <div class="live-field live-search">
          <label for="live-search">Search</label>
          <input
            id="live-search"
            type="search"
            placeholder={isSource ? "event name, user, any value" : "user, status, response text"}
            value={text}
            onInput={(e) => setQuery({ q: e.currentTarget.value })}
          />
        </div>
      </div>

      <p class="live-status" data-testid="live-status">
        <span class={`live-dot ${paused ? "paused" : connection}`} aria-hidden="true" />
        <span>{paused ? "Paused" : CONNECTION_LABEL[connection]}</span>
        {connection === "closed" && (
          <button type="button" onClick={() => setGeneration((g) => g + 1)}>
            Reconnect
          </button>
        )}
        <span class="muted">
          {plural(buffer.current.length, noun.slice(0, -1))} kept (the newest {LIMIT.toLocaleString()})
          {rows.length !== buffer.current.length && ` · ${rows.length.toLocaleString()} match`}
          {paused && held > 0 && ` · ${held.toLocaleString()} new, shown on resume`}
        </span>
      </p>

      <div class={selected ? (selected.webhook ? "live-body with-detail with-request" : "live-body with-detail") : "live-body"}>
        <div class="live-list">
          {rows.length === 0 ? (
            <div class="empty live-empty">
              {buffer.current.length > 0 ? (
                <>
                  No {noun} match the filter.{" "}
                  <button type="button" onClick={() => setQuery({ type: "", q: "" })}>
                    Clear the filter
                  </button>
                </>
              ) : paused ? (
                `Paused. New ${noun} are held until you resume.`
              ) : isSource ? (
                <>
                  Waiting for events. Send one to this source with its write key (see <a href={sourcePath(id)}>the source</a>); it appears
                  here at once.
                </>
              ) : (
                "Waiting for delivery attempts. They appear as events from connected sources are sent to this destination."
              )}
            </div>
          ) : (
            <WindowedRows
              rows={rows}
              rowHeight={narrow ? 56 : 38}
              resetKey={`${filterValue}\n${needle}`}
              selectedSeq={selected?.seq}
              onOpen={setSelected}
              header={isSource ? ["Type", "Event", "User", "Time"] : ["State", "Status", "User", "Time"]}
            />
          )}
        </div>
        {selected && <EntryDetail entry={selected} kind={kind} onClose={() => setSelected(undefined)} />}
      </div>
    </>
  );
}

const CONNECTION_LABEL: Record<Connection, string> = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Connection lost, reconnecting…",
  closed: "Disconnected",
};

function EntryDetail({ entry, kind, onClose }: { entry: LiveEntry; kind: StreamKind; onClose: () => void }) {
  const pretty = useMemo(() => JSON.stringify(JSON.parse(entry.raw), null, 2), [entry]);
  return (
    <section class="card live-detail" aria-label={kind === "source" ? "Event JSON" : "Attempt JSON"}>
      <div class="live-detail-head">
        <h2>
          {entry.kind} {entry.title && <span class="muted">{entry.title}</span>}
        </h2>
        <div class="live-detail-actions">
          <CopyButton text={pretty} label="Copy JSON" />
          <button type="button" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
      {entry.webhook ? (
        <WebhookDetail entry={entry} pretty={pretty} />
      ) : (
        <pre class="live-json" data-testid="live-json">
          {pretty}
        </pre>
      )}
    </section>
  );
}

/** A webhook request as it came (method, path, headers, body), then what it became: its events, its answer, or its refusal. */
function WebhookDetail({ entry, pretty }: { entry: LiveEntry; pretty: string }) {
  const data = useMemo(() => JSON.parse(entry.raw), [entry]);
  const { mapped, events } = entry.webhook!;
  const answer: string = typeof data.answer === "string" ? data.answer : typeof data.answer?.body === "string" ? data.answer.body : "";
  const missing = mapped - events.length;
  return (
    <>
      <h3 class="live-sub">Request</h3>
      <pre class="live-json live-request" data-testid="live-request">
        {requestText(data.webhookRequest)}
      </pre>
      {entry.failed ? (
        <>
          <h3 class="live-sub">Refused</h3>
          <p class="error" data-testid="live-outcome">
            Answered {String(data.status ?? "")}: {String(data.error ?? "").replace(/\.$/, "")}. Nothing was stored.
          </p>
        </>
      ) : (
        <>
          <h3 class="live-sub" data-testid="live-outcome">
            Became {eventCount(mapped)}
          </h3>
          {answer && <p class="muted">Answered the service: {answer}</p>}
          {events.length > 0 && (
            <>
              {!entry.webhook!.ids && <p class="muted live-note">The newest events that arrived just before it; requests at the same moment can mix theirs in.</p>}
              <pre class="live-json" data-testid="live-request-events">
                {JSON.stringify(
                  events.map((e) => JSON.parse(e.raw)),
                  null,
                  2,
                )}
              </pre>
            </>
          )}
          {missing > 0 && (
            <p class="muted live-note">{eventCount(missing)} not shown: suppressed or duplicates (not stored), or no longer kept on this page.</p>
          )}
        </>
      )}
      <details class="live-raw">
        <summary>The item's JSON</summary>
        <pre class="live-json" data-testid="live-json">
          {pretty}
        </pre>
      </details>
    </>
  );
}
