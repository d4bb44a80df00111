/**
 * A stand-in for Google's OAuth 2.0 token endpoint, for the Google kinds' tests: it holds a
 * service account of its own (an RSA key made here) and hands out an access token only for a
 * JWT bearer assertion signed RS256 with that account's private key, checked against its public
 * key, with the account as issuer, this endpoint as audience, a scope (an access token) or a
 * target_audience (an ID token), and a time that holds now.
 */
import { generateKeyPairSync, verify } from "node:crypto";

export interface TokenGrant {
  iss: string;
  /** An access token's scope, or an ID token's audience (`target_audience`). */
  scope?: string;
  audience?: string;
  token: string;
}

export function startGoogleOAuth() {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const clientEmail = `sluice-test@project.iam.gserviceaccount.com`;
  const grants: TokenGrant[] = [];
  const refused: string[] = [];
  let n = 0;
  let url = "";
  const server: ReturnType<typeof Bun.serve> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req): Promise<Response> {
      const form = new URLSearchParams(await req.text());
      const refuse = (why: string) => {
        refused.push(why);
        return Response.json({ error: "invalid_grant", error_description: why }, { status: 400 });
      };
      if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") return refuse("grant_type is not the JWT bearer grant");
      const parts = (form.get("assertion") ?? "").split(".");
      if (parts.length !== 3) return refuse("the assertion is not a JWT");
      const [h, c, sig] = parts as [string, string, string];
      const header = JSON.parse(Buffer.from(h, "base64url").toString("utf8"));
      const claims = JSON.parse(Buffer.from(c, "base64url").toString("utf8"));
      if (header.alg !== "RS256") return refuse(`alg ${header.alg}, not RS256`);
      const ok = verify("sha256", Buffer.from(`${h}.${c}`), publicKey, Buffer.from(sig, "base64url"));
      if (!ok) return refuse("Invalid JWT Signature.");
      const now = Math.floor(Date.now() / 1000);
      if (claims.iss !== clientEmail) return refuse(`unknown issuer ${claims.iss}`);
      if (claims.aud !== url) return refuse(`audience ${claims.aud} is not ${url}`);
      if (!claims.scope && !claims.target_audience) return refuse("no scope and no target_audience");
      if (!(claims.iat <= now + 60 && claims.exp > now && claims.exp - claims.iat <= 3600)) return refuse("the JWT's time does not hold");
      if (claims.target_audience) {
        // An ID token (for a Cloud Function): Google's answer has only id_token.
        const token = `eyJ.id-token-${++n}`;
        grants.push({ iss: claims.iss, audience: claims.target_audience, token });
        return Response.json({ id_token: token });
      }
      const token = `ya29.test-${++n}`;
      grants.push({ iss: claims.iss, scope: claims.scope, token });
      return Response.json({ access_token: token, expires_in: 3599, token_type: "Bearer" });
    },
  });
  url = `http://127.0.0.1:${server.port}/token`;
  const serviceAccount = {
    type: "service_account",
    project_id: "project",
    private_key_id: "k1",
    private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    client_email: clientEmail,
    client_id: "1",
    token_uri: url,
  };
  return { url, credentials: JSON.stringify(serviceAccount), grants, refused, stop: () => server.stop(true) };
}
