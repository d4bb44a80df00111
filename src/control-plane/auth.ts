/**
 * API authentication: `Authorization: Bearer <token>` or HTTP Basic `<email>:<token>`.
 * The token's workspace scopes everything the request can see or change.
 */
import type { Db } from "../../db";
import { AppError } from "../lib/errors";
import { type Principal, verifyToken } from "./tokens";

export function authenticate(db: Db, header: string | null, scheme: "bearer-or-basic" | "basic" = "bearer-or-basic"): Principal {
  if (!header) throw new AppError("UNAUTHORIZED", "Authorization header is missing");
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer && scheme === "bearer-or-basic") {
    const p = verifyToken(db, bearer[1]);
    if (!p) throw new AppError("UNAUTHORIZED", "invalid access token");
    return p;
  }
  const basic = /^Basic\s+(\S+)\s*$/i.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1], "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon > 0) {
      const p = verifyToken(db, decoded.slice(colon + 1), decoded.slice(0, colon));
      if (p) return p;
    }
    throw new AppError("UNAUTHORIZED", "invalid e-mail or access token");
  }
  throw new AppError("UNAUTHORIZED", scheme === "basic" ? "expected HTTP Basic auth with <email>:<access token>" : "expected 'Bearer <access token>' or HTTP Basic <email>:<access token>");
}
