/**
 * The baseline of the benchmarks: a bare Bun.serve that reads the body and answers
 * OK without storing anything. `--sink` makes it a destination stand-in that records
 * arrival latency (receivedAt → now) of JSON events instead, and counts events: one a request,
 * or a `/batch` call's items (SEGMENT's batches carry no receivedAt), and the requests apart. `--also json,ip,headers`
 * adds what every event call needs from Bun besides (bench-floor.ts): parsing the body
 * as JSON, the peer address, and the headers the gateway reads.
 */
const args = process.argv.slice(2);
const port = Number(args[args.indexOf("--port") + 1] || 0);
const sink = args.includes("--sink");
const also = new Set(args.includes("--also") ? (args[args.indexOf("--also") + 1] ?? "").split(",") : []);

const latencies: number[] = [];
let count = 0;
let requests = 0;
const server = Bun.serve({
  port,
  hostname: "127.0.0.1",
  async fetch(req, srv) {
    const url = new URL(req.url);
    if (url.pathname === "/__stats") {
      const sorted = latencies.slice().sort((a, b) => a - b);
      const q = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0);
      return Response.json({ count, requests, p50: q(0.5), p99: q(0.99) });
    }
    if (url.pathname === "/__reset") {
      latencies.length = 0;
      count = 0;
      requests = 0;
      return new Response("ok");
    }
    if (also.has("headers")) {
      for (const h of ["origin", "authorization", "content-encoding", "content-length", "anonymousid", "x-forwarded-for"]) req.headers.get(h);
    }
    if (also.has("ip")) srv.requestIP(req);
    if (also.has("json")) {
      await req.json();
      return new Response("OK");
    }
    const text = await req.text();
    if (sink) {
      requests++;
      if (url.pathname.endsWith("/batch")) {
        count += (JSON.parse(text).batch ?? []).length;
        return new Response("OK");
      }
      count++;
      const m = /"receivedAt":"([^"]+)"/.exec(text);
      if (m) latencies.push(Date.now() - Date.parse(m[1]));
    }
    return new Response("OK");
  },
});
console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}` }));
