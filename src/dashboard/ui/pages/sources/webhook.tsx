/**
 * A webhook source's page sections: the URL to paste into the service (this data plane's
 * address + /v1/webhook?writeKey=…), the type's setup, and a dry run of the mapping on the
 * type's sample or an edited payload (POST /v2/sources/{id}/sample). Payloads, events and
 * answers are shown as text only.
 */
import { useMemo, useState } from "preact/hooks";
import { api } from "../../api";
import { useAction } from "../../hooks";
import { CopyButton, ErrorNote } from "../../layout";
import type { SampleRun, Source, SourceType } from "../../types";
import { eventCount, requestText } from "../../webhook-request";
import { DataPlaneField, type RouteProps, dataPlaneUrl } from "./data-plane";
import { typeOf } from "./source-types";

/** The URL a service posts to: the write key travels in the query, as RudderStack's webhook URLs carry it. */
export const webhookUrl = (dataPlane: string, writeKey: string) => `${dataPlane.replace(/\/+$/, "")}/v1/webhook?writeKey=${encodeURIComponent(writeKey)}`;

/** The setup paragraph, its `code` spans (query parameters, headers) set as code. */
function SetupText({ text }: { text: string }) {
  return <>{text.split("`").map((part, i) => (i % 2 ? <code key={i}>{part}</code> : part))}</>;
}

export function WebhookSection({ source, types, typesError, ...nav }: RouteProps & { source: Source; types: SourceType[] | undefined; typesError: string }) {
  const name = source.sourceDefinition?.name ?? "";
  const type = typeOf(source, types);
  const url = webhookUrl(dataPlaneUrl(nav.query), source.writeKey);
  const service = type?.displayName ?? name;
  return (
    <>
      <section class="card src-section" aria-labelledby="src-webhook">
        <h2 id="src-webhook">Receive webhooks</h2>
        <p class="muted">
          {service} posts its webhooks to this URL. Each request is mapped into events as RudderStack maps {service}'s, and they go on to the connected destinations like any
          other event.
        </p>
        <dl class="src-facts">
          <dt>Type</dt>
          <dd data-testid="source-type">
            {service}
            {service !== name && <span class="muted"> · {name}</span>}
          </dd>
          <dt>Webhook URL</dt>
          <dd class="src-key">
            <code class="secret" data-testid="webhook-url">
              {url}
            </code>
            <CopyButton text={url} label="Copy webhook URL" />
          </dd>
        </dl>
        <ErrorNote error={typesError} />
        {type ? (
          <p class="wh-setup" data-testid="webhook-setup">
            <SetupText text={type.setup} />
            {type.takesGet && " Its GET requests are mapped too."}
          </p>
        ) : types ? (
          <p class="error">Sluice does not map the type {name}: requests to this URL are refused (400).</p>
        ) : (
          !typesError && <p class="muted">Loading the type…</p>
        )}
        <p class="muted wh-address">
          The URL uses this server's address as your browser reaches it. When {service} reaches Sluice at another address (a proxy, <code>--api-port</code>), enter it here.
        </p>
        <DataPlaneField {...nav} />
      </section>
      {type && <SampleSection source={source} type={type} />}
    </>
  );
}

/** Parses the edited payload: `{query?, headers?, body}`, or what is wrong with it. */
function parsePayload(text: string): { payload?: Record<string, unknown>; error?: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { error: `Payload: not valid JSON (${(e as Error).message})` };
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return { error: "Payload: must be a JSON object with `body` (and optionally `query` and `headers`)" };
  return { payload: value as Record<string, unknown> };
}

function SampleSection({ source, type }: { source: Source; type: SourceType }) {
  const sampleText = useMemo(() => JSON.stringify(type.sample, null, 2), [type]);
  const [text, setText] = useState(sampleText);
  const [result, setResult] = useState<SampleRun | undefined>();
  const { busy, error, setError, run } = useAction();
  const edited = text !== sampleText;

  const trySample = async (e: Event) => {
    e.preventDefault();
    // Unedited, the server runs the type's own sample.
    const parsed = edited ? parsePayload(text) : {};
    if (parsed.error) {
      setResult(undefined);
      setError(parsed.error);
      return;
    }
    const ok = await run(async () => {
      setResult(await api<SampleRun>("POST", `/v2/sources/${encodeURIComponent(source.id)}/sample`, parsed.payload ? { payload: parsed.payload } : {}));
    });
    if (!ok) setResult(undefined);
  };

  return (
    <section class="card src-section" aria-labelledby="src-sample">
      <h2 id="src-sample">Try a sample</h2>
      <p class="muted">
        Maps {type.displayName}'s sample request, or the one you edit, as <code>/v1/webhook</code> would map it. Nothing is stored or sent to destinations.
      </p>
      <form class="wh-form" onSubmit={trySample}>
        <details class="wh-edit">
          <summary>Edit the payload</summary>
          <label for="sample-payload">
            Payload <span class="muted">— the request's <code>body</code>, and its <code>query</code> parameters and <code>headers</code></span>
          </label>
          <textarea id="sample-payload" class="wh-code" rows={14} spellcheck={false} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </details>
        <div class="wh-actions">
          <button type="submit" class="primary" disabled={busy}>
            Try a sample
          </button>
          {edited && (
            <button type="button" onClick={() => setText(sampleText)}>
              Reset to the sample
            </button>
          )}
        </div>
      </form>
      <ErrorNote error={error} />
      {result && <SampleResult result={result} />}
    </section>
  );
}

function SampleResult({ result }: { result: SampleRun }) {
  const { events, answer, error } = result;
  const heading = error ? `Refused (${error.status})` : events.length > 0 ? `Became ${eventCount(events.length)}` : answer ? "Answered, no events" : "No events";
  return (
    <div class="wh-result" data-testid="sample-result">
      <section class="wh-pane" aria-labelledby="wh-request">
        <h3 id="wh-request">Request</h3>
        <pre class="wh-json" data-testid="sample-request">
          {requestText(result.request)}
        </pre>
      </section>
      <section class="wh-pane" aria-labelledby="wh-outcome">
        <h3 id="wh-outcome">{heading}</h3>
        {error && (
          <p class="error" data-testid="sample-error">
            /v1/webhook would answer {error.status}: {error.message.replace(/\.$/, "")}. Nothing would be stored.
          </p>
        )}
        {answer && (
          <>
            <p class="muted">
              /v1/webhook would answer the service {answer.status ?? 200} <code>{answer.contentType}</code>:
            </p>
            <pre class="wh-json" data-testid="sample-answer">
              {answer.body}
            </pre>
          </>
        )}
        {events.length > 0 && (
          <>
            <pre class="wh-json" data-testid="sample-events">
              {JSON.stringify(events, null, 2)}
            </pre>
            <p class="muted wh-note">As the mapping made them: intake then adds messageId, receivedAt and the other server fields.</p>
          </>
        )}
        {!error && !answer && events.length === 0 && <p class="muted">The mapping made no events from this request.</p>}
      </section>
    </div>
  );
}
