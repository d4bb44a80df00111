/**
 * guest-prelude.js is JavaScript for QuickJS, not for the host: sandbox-worker.ts imports it as
 * text (`with { type: "text" }`), so the bundle and the binary embed its source as a string.
 */
declare const source: string;
export default source;
