/**
 * /test: run a message through a destination's stages (or every destination of a source) with
 * the Test API, and show each stage's result. The target and the stages live in the query
 * string (`?destination=<id>` or `?source=<id>`, `&stages=user_transform,dest_transform`), so a
 * reload or a pasted link opens the same test; the message is kept for the tab in sessionStorage.
 */
import { useLocation } from "preact-iso";
import { useEffect, useMemo, useState } from "preact/hooks";
import { useAction, useSourcesAndDestinations } from "../hooks";
import { ErrorNote, PageHeader } from "../layout";
import { sourcePath } from "../links";
import { ResultView, asText } from "./test-api/result-view";
import { STAGE_KEYS, type Stages, type TestOutcome, runTest } from "./test-api/run-test";
import "./test-api/test-api.css";

const STAGE_LABELS: Record<keyof Stages, { title: string; hint: string }> = {
  user_transform: { title: "User transformation", hint: "run the destination's transformation, if one is connected" },
  dest_transform: { title: "Destination transform", hint: "show the request in the destination's format" },
  send_to_destination: { title: "Send to destination", hint: "really send that request and show the answer" },
};

const EXAMPLE_MESSAGE = asText({
  type: "track",
  userId: "test-user-1",
  event: "Test Event",
  properties: { plan: "pro", price: 42 },
  context: { traits: { email: "test-user-1@example.com" } },
});

const MESSAGE_KEY = "sluice.test.message";

function stagesFrom(raw: string | undefined): Stages {
  if (raw === undefined) return { user_transform: true, dest_transform: true, send_to_destination: true };
  const chosen = new Set(raw.split(","));
  return { user_transform: chosen.has("user_transform"), dest_transform: chosen.has("dest_transform"), send_to_destination: chosen.has("send_to_destination") };
}

function storedMessage(): string {
  try {
    return sessionStorage.getItem(MESSAGE_KEY) ?? EXAMPLE_MESSAGE;
  } catch {
    return EXAMPLE_MESSAGE;
  }
}

/** Parses a JSON object from a textarea, or says what is wrong with it. */
function parseObject(text: string, what: string): { value?: Record<string, unknown>; error?: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { error: `${what}: not valid JSON (${(e as Error).message})` };
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return { error: `${what}: must be a JSON object` };
  return { value: value as Record<string, unknown> };
}

export default function TestApiPage() {
  const { query, path, route } = useLocation();
  const target: { kind: "destination" | "source"; id: string } | undefined = query.destination
    ? { kind: "destination", id: query.destination }
    : query.source
      ? { kind: "source", id: query.source }
      : undefined;
  const stages = stagesFrom(query.stages);

  const { sources, destinations, error: loadError } = useSourcesAndDestinations();
  const [message, setMessage] = useState(storedMessage);
  const [force, setForce] = useState(false);
  const [overrideConfig, setOverrideConfig] = useState(false);
  const [configText, setConfigText] = useState("");
  const { busy: running, error, setError, run: runAction } = useAction();
  const [result, setResult] = useState<{ outcomes: TestOutcome[]; stages: Stages; at: Date } | undefined>();

  const destination = target?.kind === "destination" ? destinations?.find((d) => d.id === target.id) : undefined;
  const source = target?.kind === "source" ? sources?.find((s) => s.id === target.id) : undefined;
  const connected = useMemo(() => (source ? (destinations ?? []).filter((d) => source.destinationIds.includes(d.id)) : []), [source, destinations]);
  const unknownTarget = target !== undefined && sources !== undefined && destinations !== undefined && !destination && !source;
  // `force` matters only when something to test is disabled; the box shows only then.
  const somethingDisabled = destination ? !destination.enabled : source ? !source.enabled || connected.some((d) => !d.enabled) : false;

  // A different target starts from its own stored config and a fresh result.
  useEffect(() => {
    setResult(undefined);
    setError("");
    setForce(false);
    setOverrideConfig(false);
    setConfigText(destination ? asText(destination.config) : "");
  }, [target?.kind, target?.id, destination?.id]);

  const setQuery = (next: { target?: { kind: string; id: string }; stages?: Stages }) => {
    const params = new URLSearchParams();
    const t = "target" in next ? next.target : target;
    if (t) params.set(t.kind, t.id);
    const st = next.stages ?? stages;
    if (!STAGE_KEYS.every((k) => st[k])) params.set("stages", STAGE_KEYS.filter((k) => st[k]).join(","));
    const qs = params.toString();
    route(qs ? `${path}?${qs}` : path, true);
  };

  const chooseTarget = (value: string) => {
    const [kind, ...rest] = value.split(":");
    setQuery({ target: value ? { kind: kind!, id: rest.join(":") } : undefined });
  };

  const toggleStage = (key: keyof Stages, on: boolean) => setQuery({ stages: { ...stages, [key]: on } });

  const editMessage = (text: string) => {
    setMessage(text);
    try {
      sessionStorage.setItem(MESSAGE_KEY, text);
    } catch {
      // Storage may be off; the message then lasts as long as the page.
    }
  };

  const noStage = !STAGE_KEYS.some((k) => stages[k]);
  const noDestinations = source !== undefined && connected.length === 0;

  const run = async (e: Event) => {
    e.preventDefault();
    if (!target) return;
    setError("");
    const msg = parseObject(message, "Message");
    if (msg.error) return setError(msg.error);
    let destinationConfig: Record<string, unknown> | undefined;
    if (target.kind === "destination" && overrideConfig) {
      const cfg = parseObject(configText, "Config");
      if (cfg.error) return setError(cfg.error);
      destinationConfig = cfg.value;
    }
    const ok = await runAction(async () => {
      const outcomes = await runTest({ target: target.kind, id: target.id, message: msg.value!, stages, force, destinationConfig });
      setResult({ outcomes, stages, at: new Date() });
    });
    if (!ok) setResult(undefined);
  };

  const loading = sources === undefined || destinations === undefined;
  const nothingToTest = !loading && sources.length === 0 && destinations.length === 0;

  return (
    <>
      <PageHeader title="Test API" />
      <p class="muted">
        Run one message through a destination's stages, or through every destination connected to a source, and see what each stage makes of it. The request
        really goes to the destination, but nothing is stored, queued, counted or shown in live events.
      </p>
      <ErrorNote error={loadError} />
      {loading && !loadError ? (
        <p class="muted">Loading…</p>
      ) : nothingToTest ? (
        <p class="empty">
          Nothing to test yet. <a href="/destinations">Add a destination</a> (or a <a href="/sources">source</a> with destinations), then come back.
        </p>
      ) : (
        !loading && (
          <form class="card test-form" onSubmit={run}>
            <div class="test-grid">
              <div class="test-field">
                <label for="test-target">Test</label>
                <select id="test-target" value={target ? `${target.kind}:${target.id}` : ""} onChange={(e) => chooseTarget(e.currentTarget.value)}>
                  <option value="">Choose a destination or a source…</option>
                  {destinations.length > 0 && (
                    <optgroup label="Destinations">
                      {destinations.map((d) => (
                        <option key={d.id} value={`destination:${d.id}`}>
                          {d.name} ({d.type}){d.enabled ? "" : ", disabled"}
                        </option>
                      ))}
                    </optgroup>
                  )}
                  {sources.length > 0 && (
                    <optgroup label="Sources (every connected destination)">
                      {sources.map((s) => (
                        <option key={s.id} value={`source:${s.id}`}>
                          {s.name}
                          {s.enabled ? "" : ", disabled"}
                        </option>
                      ))}
                    </optgroup>
                  )}
                </select>
                {unknownTarget && <p class="error">There is no destination or source with the id in this link. Choose one above.</p>}
                {source && (
                  <p class="muted test-hint">
                    {connected.length === 0 ? (
                      <>
                        This source has no destinations. <a href={sourcePath(source.id)}>Connect one</a> to test it.
                      </>
                    ) : (
                      <>Tests {connected.map((d) => d.name).join(", ")}.</>
                    )}
                  </p>
                )}
                <fieldset class="test-stage-choice">
                  <legend>Stages</legend>
                  {STAGE_KEYS.map((k) => (
                    <label key={k} class="test-check">
                      <input type="checkbox" checked={stages[k]} onChange={(e) => toggleStage(k, e.currentTarget.checked)} />
                      <span>
                        {STAGE_LABELS[k].title} <span class="muted">— {STAGE_LABELS[k].hint}</span>
                      </span>
                    </label>
                  ))}
                  {noStage && <p class="error">Choose at least one stage.</p>}
                </fieldset>
                {somethingDisabled && (
                  <label class="test-check">
                    <input type="checkbox" checked={force} onChange={(e) => setForce(e.currentTarget.checked)} />
                    <span>Test even though it is disabled (force)</span>
                  </label>
                )}
                {destination && (
                  <label class="test-check">
                    <input type="checkbox" checked={overrideConfig} onChange={(e) => setOverrideConfig(e.currentTarget.checked)} />
                    <span>Use a different config for this test</span>
                  </label>
                )}
              </div>
              <div class="test-field">
                <label for="test-message">Message</label>
                <textarea id="test-message" class="test-code" rows={14} spellcheck={false} value={message} onInput={(e) => editMessage(e.currentTarget.value)} />
                <p class="muted test-hint">
                  One event as JSON: identify, track, page, screen, group or alias.{" "}
                  <button type="button" class="link-button" onClick={() => editMessage(EXAMPLE_MESSAGE)}>
                    Reset to the example
                  </button>
                </p>
                {destination && overrideConfig && (
                  <>
                    <label for="test-config">Config for this test</label>
                    <textarea id="test-config" class="test-code" rows={8} spellcheck={false} value={configText} onInput={(e) => setConfigText(e.currentTarget.value)} />
                    <p class="muted test-hint">Replaces the stored config for this request only; the keys must be the kind's own.</p>
                  </>
                )}
              </div>
            </div>
            <div class="test-actions">
              <button type="submit" class="primary" disabled={!target || unknownTarget || noStage || noDestinations || running}>
                {running ? "Running…" : "Run test"}
              </button>
              {!target && <span class="muted">Choose what to test first.</span>}
            </div>
            <ErrorNote error={error} />
          </form>
        )
      )}
      {result && (
        <>
          <h2 class="test-results-title">
            Result <span class="muted">{result.at.toLocaleTimeString()}</span>
          </h2>
          <ResultView outcomes={result.outcomes} stages={result.stages} />
        </>
      )}
    </>
  );
}
