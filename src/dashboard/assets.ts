/**
 * The dashboard's built files (scripts/build-dashboard.ts → dist/dashboard): index.html and
 * hashed assets. The binary embeds them with `bun build --compile --asset dist/dashboard`, where
 * they sit under `<module dir>/dashboard`; from a source checkout they are read from
 * dist/dashboard. Compressed copies are made once per file, on first request.
 */
import { brotliCompressSync, constants } from "node:zlib";
import { existsSync } from "node:fs";
import { extname, join, normalize } from "node:path";

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".json": "application/json",
};

/**
 * The dashboard's pages run no inline script and no eval, load nothing from elsewhere, and
 * may not be framed: event payloads shown in them can never become code.
 */
export const SECURITY_HEADERS: Record<string, string> = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "same-origin",
};

interface Encoded {
  raw: Uint8Array<ArrayBuffer>;
  br?: Uint8Array<ArrayBuffer>;
  gzip?: Uint8Array<ArrayBuffer>;
}

export class DashboardAssets {
  private readonly cache = new Map<string, Encoded>();

  constructor(readonly dir: string | undefined) {}

  /** Where the built dashboard is: the folder given, else embedded in the binary, else dist/dashboard of a checkout. */
  static locate(dir?: string): DashboardAssets {
    if (dir) return new DashboardAssets(existsSync(join(dir, "index.html")) ? dir : undefined);
    const candidates = [join(import.meta.dir, "dashboard"), join(import.meta.dir, "../../dist/dashboard")];
    return new DashboardAssets(candidates.find((d) => existsSync(join(d, "index.html"))));
  }

  get built(): boolean {
    return this.dir !== undefined;
  }

  /** A file's response, compressed as the browser accepts; undefined when there is no such file. */
  async response(relative: string, acceptEncoding: string | null, headers: Record<string, string>): Promise<Response | undefined> {
    if (!this.dir) return undefined;
    const path = normalize(relative).replace(/^(\.\.(\/|$))+/, "");
    if (path.startsWith("/") || path.includes("..")) return undefined;
    let entry = this.cache.get(path);
    if (!entry) {
      const file = Bun.file(join(this.dir, path));
      if (!(await file.exists())) return undefined;
      entry = { raw: new Uint8Array(await file.arrayBuffer()) };
      this.cache.set(path, entry);
    }
    const type = TYPES[extname(path)] ?? "application/octet-stream";
    const out: Record<string, string> = { ...headers, "Content-Type": type, Vary: "Accept-Encoding" };
    const accepts = acceptEncoding ?? "";
    if (/\bbr\b/.test(accepts)) {
      entry.br ??= new Uint8Array(brotliCompressSync(entry.raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 9 } }));
      return new Response(entry.br, { headers: { ...out, "Content-Encoding": "br" } });
    }
    if (/\bgzip\b/.test(accepts)) {
      entry.gzip ??= new Uint8Array(Bun.gzipSync(entry.raw, { level: 9 }));
      return new Response(entry.gzip, { headers: { ...out, "Content-Encoding": "gzip" } });
    }
    return new Response(entry.raw, { headers: out });
  }
}
