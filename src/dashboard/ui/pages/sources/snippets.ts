/**
 * Ready-to-paste code that sends events to one source: RudderStack's browser SDK (its npm
 * package's bundled build, so nothing comes from a CDN), its Node SDK, and curl. Values are
 * quoted for the language they land in, since a write key set through the workspace file may
 * hold any character.
 */
export type SnippetKind = "browser" | "node" | "curl";

export const SNIPPET_KINDS: Array<{ id: SnippetKind; label: string }> = [
  { id: "browser", label: "Browser SDK" },
  { id: "node", label: "Node SDK" },
  { id: "curl", label: "curl" },
];

export function isSnippetKind(v: string | undefined): v is SnippetKind {
  return v === "browser" || v === "node" || v === "curl";
}

/** A JavaScript string literal. */
const js = (v: string) => JSON.stringify(v);

/** A POSIX shell word in single quotes. */
const sh = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;

export function snippet(kind: SnippetKind, writeKey: string, dataPlaneUrl: string): string {
  const url = dataPlaneUrl.replace(/\/+$/, "");
  switch (kind) {
    case "browser":
      return `// npm install @rudderstack/analytics-js
// The bundled build carries its plugins: nothing is loaded from a CDN.
import { RudderAnalytics } from "@rudderstack/analytics-js/bundled";

const analytics = new RudderAnalytics();
analytics.load(${js(writeKey)}, ${js(url)}, {
  // Read the source's settings from Sluice, not from RudderStack's control plane.
  configUrl: ${js(url)},
  // Modern browsers need no polyfill; this keeps the SDK from fetching one.
  polyfillIfRequired: false,
});

analytics.ready(() => {
  // A page call needs a name unless the source's lenient validation is on.
  analytics.page(document.title || "Home");
  analytics.track("Test Event", { sentFrom: "browser" });
});
`;
    case "node":
      return `// npm install @rudderstack/rudder-sdk-node
// CommonJS; in an ES module: import Analytics from "@rudderstack/rudder-sdk-node";
const Analytics = require("@rudderstack/rudder-sdk-node");

const client = new Analytics(${js(writeKey)}, { dataPlaneUrl: ${js(url)} });

client.identify({ userId: "user-1", traits: { email: "user-1@example.com" } });
client.track({ userId: "user-1", event: "Test Event", properties: { sentFrom: "node" } });

// Calls are sent in batches: send what is queued before the process exits.
client.flush();
`;
    case "curl":
      return `curl -u ${sh(`${writeKey}:`)} \\
  -H 'Content-Type: application/json' \\
  -d '{"userId":"user-1","event":"Test Event","properties":{"sentFrom":"curl"}}' \\
  ${sh(`${url}/v1/track`)}
`;
  }
}
