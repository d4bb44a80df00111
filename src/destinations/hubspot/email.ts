/**
 * The e-mail test RudderStack's new-API identify applies before anything reaches HubSpot
 * (validator.js `isEmail` with its default options), written from that library's documented
 * rules: at most 254 characters; a local part of at most 64 bytes made of dot-separated atoms
 * (UTF-8 letters allowed) or one quoted string; a domain of at most 254 bytes that is a fully
 * qualified name with a letter TLD of two or more characters. IP-literal domains, display
 * names and trailing dots are refused, as they are by default there.
 */

const MAX_EMAIL = 254;
const MAX_LOCAL_BYTES = 64;
const MAX_DOMAIN_BYTES = 254;
const MAX_LABEL = 63;

const UTF8_RANGES = "\\u00A1-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFEF";
const ATOM = new RegExp(`^[a-z\\d!#$%&'*+\\-/=?^_\`{|}~${UTF8_RANGES}]+$`, "i");
const QUOTED = new RegExp(
  `^([\\s\\x01-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f\\x21\\x23-\\x5b\\x5d-\\x7e${UTF8_RANGES}]|(\\\\[\\x01-\\x09\\x0b\\x0c\\x0d-\\x7f${UTF8_RANGES}]))*$`,
  "i",
);
const TLD = /^([a-z\u00A1-\u00A8\u00AA-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF]{2,}|xn[a-z0-9-]{2,})$/i;
const LABEL = /^[a-z\u00a1-\uffff0-9-]+$/i;
const FULLWIDTH = /[\uff01-\uff5e]/;

const byteLength = (s: string) => new TextEncoder().encode(s).length;

function isFqdn(domain: string): boolean {
  const labels = domain.split(".");
  if (labels.length < 2) return false;
  const tld = labels[labels.length - 1]!;
  if (!TLD.test(tld) || /\s/.test(tld)) return false;
  return labels.every(
    (label) => label.length <= MAX_LABEL && LABEL.test(label) && !FULLWIDTH.test(label) && !/^-|-$/.test(label) && !label.includes("_"),
  );
}

export function isEmail(value: string): boolean {
  if (value.length > MAX_EMAIL) return false;
  const at = value.lastIndexOf("@");
  const local = at < 0 ? "" : value.slice(0, at);
  const domain = at < 0 ? value : value.slice(at + 1);
  if (byteLength(local) > MAX_LOCAL_BYTES || byteLength(domain) > MAX_DOMAIN_BYTES) return false;
  if (!isFqdn(domain)) return false;
  if (local.startsWith('"')) return QUOTED.test(local.slice(1, -1));
  return local.split(".").every((atom) => ATOM.test(atom));
}
