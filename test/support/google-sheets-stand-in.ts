/**
 * A stand-in for Google Sheets' REST API v4, for GOOGLESHEETS' tests: the two calls
 * rudder-server's producer makes (values.update of the header row, values.append of the rows),
 * and values.get to read a sheet back, over spreadsheets kept in memory.
 *
 * Like Sheets it takes only `Authorization: Bearer <token>` for a token the OAuth stand-in
 * (google-oauth.ts) granted for the spreadsheets scope, or one of `acceptTokens` (rudder-server's
 * testConfig.accessToken); it answers in Google's error shape (`{error: {code, message, status}}`):
 * 404 NOT_FOUND for a spreadsheet that does not exist, 400 INVALID_ARGUMENT for a range naming a
 * sheet that does not (`Unable to parse range: …`). `failNext(n, status)` makes the next n calls
 * answer 429 or 5xx, as a quota or an outage would.
 */
import type { TokenGrant } from "./google-oauth";

const SCOPE = "https://www.googleapis.com/auth/spreadsheets";

type Cell = string | number | boolean | null;

export interface SheetsCall {
  method: string;
  /** values.update, values.append or values.get. */
  op: string;
  spreadsheetId: string;
  range: string;
  auth: string;
  query: Record<string, string>;
  body: any;
  status: number;
}

const GOOGLE_STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
};
const SCRIPTED_MESSAGE: Record<number, string> = {
  429: "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute per user' of service 'sheets.googleapis.com'.",
  500: "Internal error encountered.",
  503: "The service is currently unavailable.",
};

const googleError = (code: number, message: string) => Response.json({ error: { code, message, status: GOOGLE_STATUS[code] ?? "UNKNOWN" } }, { status: code });

/** `Sheet 1!B3` or `'It''s'!A1` → the sheet's name and the 0-based row and column of its first cell. */
function parseRange(range: string): { sheet: string; row: number; col: number } | undefined {
  const bang = range.lastIndexOf("!");
  let sheet = bang < 0 ? range : range.slice(0, bang);
  const cell = bang < 0 ? "" : range.slice(bang + 1);
  if (/^'.*'$/.test(sheet)) sheet = sheet.slice(1, -1).replace(/''/g, "'");
  if (!cell) return { sheet, row: 0, col: 0 };
  const m = /^([A-Z]+)(\d+)?(?::[A-Z]+\d*)?$/i.exec(cell);
  if (!m) return undefined;
  let col = 0;
  for (const ch of m[1]!.toUpperCase()) col = col * 26 + (ch.charCodeAt(0) - 64);
  return { sheet, row: m[2] ? Number(m[2]) - 1 : 0, col: col - 1 };
}

const columnName = (col: number): string => {
  let name = "";
  for (let n = col + 1; n > 0; n = Math.floor((n - 1) / 26)) name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  return name;
};

export function startSheetsStandIn(oauth: { grants: TokenGrant[] }, opts: { acceptTokens?: string[] } = {}) {
  /** spreadsheetId → sheet name → rows. */
  const books = new Map<string, Map<string, Cell[][]>>();
  const calls: SheetsCall[] = [];
  const failures: number[] = [];

  const authorized = (auth: string) => {
    const token = /^Bearer (.+)$/.exec(auth)?.[1];
    if (!token) return false;
    return (opts.acceptTokens ?? []).includes(token) || oauth.grants.some((g) => g.token === token && g.scope === SCOPE);
  };

  const write = (rows: Cell[][], at: { row: number; col: number }, values: Cell[][]) => {
    values.forEach((values, i) => {
      const row = (rows[at.row + i] ??= []);
      values.forEach((v, j) => {
        row[at.col + j] = v;
      });
    });
  };
  const lastRow = (rows: Cell[][]) => {
    for (let i = rows.length - 1; i >= 0; i--) if ((rows[i] ?? []).some((v) => v !== null && v !== undefined && v !== "")) return i;
    return -1;
  };
  const a1 = (sheet: string, row: number, col: number, rows: number, cols: number) =>
    `${/^[A-Za-z0-9_]+$/.test(sheet) ? sheet : `'${sheet.replace(/'/g, "''")}'`}!${columnName(col)}${row + 1}:${columnName(col + Math.max(cols, 1) - 1)}${row + Math.max(rows, 1)}`;

  const server: ReturnType<typeof Bun.serve> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req): Promise<Response> {
      const u = new URL(req.url);
      const auth = req.headers.get("authorization") ?? "";
      const text = req.method === "GET" ? "" : await req.text();
      let body: any;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      const m = /^\/v4\/spreadsheets\/([^/]+)\/values\/([^/:]+)(:append)?$/.exec(u.pathname);
      const spreadsheetId = m ? decodeURIComponent(m[1]!) : "";
      const range = m ? decodeURIComponent(m[2]!) : "";
      const op = !m ? "unknown" : m[3] ? "values.append" : req.method === "PUT" ? "values.update" : req.method === "GET" ? "values.get" : "unknown";
      const call: SheetsCall = { method: req.method, op, spreadsheetId, range, auth, query: Object.fromEntries(u.searchParams), body, status: 0 };
      calls.push(call);
      const answer = (r: Response) => {
        call.status = r.status;
        return r;
      };

      const scripted = failures.shift();
      if (scripted !== undefined) return answer(googleError(scripted, SCRIPTED_MESSAGE[scripted] ?? "Backend Error"));
      if (!authorized(auth)) {
        return answer(googleError(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."));
      }
      if (op === "unknown") return answer(googleError(404, `Method not found: ${req.method} ${u.pathname}`));
      const book = books.get(spreadsheetId);
      if (!book) return answer(googleError(404, "Requested entity was not found."));
      const where = parseRange(range);
      const rows = where ? book.get(where.sheet) : undefined;
      if (!where || !rows) return answer(googleError(400, `Unable to parse range: ${range}`));

      if (op === "values.get") {
        return answer(Response.json({ range: a1(where.sheet, 0, 0, rows.length, Math.max(0, ...rows.map((r) => r.length))), majorDimension: "ROWS", values: rows.map((r) => Array.from(r, (v) => v ?? "")) }));
      }
      const option = u.searchParams.get("valueInputOption");
      if (!option) return answer(googleError(400, "'valueInputOption' is required but not specified"));
      if (option !== "RAW" && option !== "USER_ENTERED") return answer(googleError(400, `Invalid value at 'value_input_option' (type.googleapis.com/google.apps.sheets.v4.ValueInputOption), "${option}"`));
      if (!body || typeof body !== "object" || !Array.isArray(body.values)) return answer(googleError(400, "Invalid JSON payload received. Expected a ValueRange with values."));
      if (body.range !== undefined && body.range !== range) {
        return answer(googleError(400, `Requested writing within range [${range}], but tried writing to [${body.range}]`));
      }
      if (body.majorDimension !== undefined && body.majorDimension !== "ROWS") return answer(googleError(400, "only majorDimension ROWS is stood in for"));
      const values: Cell[][] = body.values;
      const cols = Math.max(0, ...values.map((r) => r.length));
      const cells = values.reduce((n, r) => n + r.length, 0);
      if (op === "values.update") {
        write(rows, where, values);
        return answer(Response.json({ spreadsheetId, updatedRange: a1(where.sheet, where.row, where.col, values.length, cols), updatedRows: values.length, updatedColumns: cols, updatedCells: cells }));
      }
      // Sheets appends after the table the range starts: here, after the sheet's last row with a value.
      const at = { row: Math.max(lastRow(rows) + 1, where.row), col: where.col };
      const tableRange = lastRow(rows) >= 0 ? a1(where.sheet, 0, 0, lastRow(rows) + 1, Math.max(0, ...rows.map((r) => r.length))) : undefined;
      write(rows, at, values);
      return answer(
        Response.json({
          spreadsheetId,
          ...(tableRange ? { tableRange } : {}),
          updates: { spreadsheetId, updatedRange: a1(where.sheet, at.row, at.col, values.length, cols), updatedRows: values.length, updatedColumns: cols, updatedCells: cells },
        }),
      );
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port as number,
    calls,
    /** A spreadsheet with these sheets (tabs), empty. */
    addSpreadsheet(id: string, sheets: string[] = ["Sheet1"]) {
      books.set(id, new Map(sheets.map((s) => [s, [] as Cell[][]])));
    },
    /** The sheet's rows as Sheets would show them (empty cells as ""), or undefined when it does not exist. */
    rows(id: string, sheet: string): Cell[][] | undefined {
      const rows = books.get(id)?.get(sheet);
      return rows?.map((r) => Array.from(r, (v) => v ?? ""));
    },
    /** The next `n` calls, whatever they are, answer `status` (429, 500, 503) in Google's words. */
    failNext(n: number, status: number) {
      for (let i = 0; i < n; i++) failures.push(status);
    },
    stop: () => server.stop(true),
  };
}

export type SheetsStandIn = ReturnType<typeof startSheetsStandIn>;
