/**
 * Browser, OS and device of a web event's user agent, for the kinds that report them (MP, POSTHOG,
 * AM). RudderStack reads them with ua-parser-js 1.x, so this does too: a maintained parser knows
 * far more browsers, systems and devices than rules of our own would, and keeps up with new ones.
 *
 * RudderStack's AM reads agents with Amplitude's fork of ua-parser-js, pinned at 0.7.24. That fork
 * is upstream 0.7.21 plus a few renames, and 0.7.21's rules backtrack catastrophically on crafted
 * agents (CVE-2020-7733, CVE-2020-7793, CVE-2021-27292: one 350-character agent holds the thread
 * for seconds, a longer one for minutes). User agents arrive from anyone holding a write key, so
 * that parser is not used: `amplitudeUserAgent` applies the fork's renames to 1.x's answer instead.
 *
 * Answers are cached by agent: an event's several requests, and the many events of one browser,
 * read each agent once.
 */
import { LRUCache } from "lru-cache";

export interface UserAgentInfo {
  readonly browser: { readonly name?: string; readonly version?: string };
  readonly os: { readonly name?: string };
  readonly device: { readonly vendor?: string };
}

interface ParserResult {
  browser: { name?: string; version?: string };
  os: { name?: string; version?: string };
  device: { vendor?: string; model?: string };
}

// ua-parser-js 1.x ships no type declarations; `require` keeps it bundled by `bun build --compile`.
const parseAgent = require("ua-parser-js") as (ua: string) => ParserResult;

// ua-parser-js 1.x reads at most this many characters; longer agents are cut before caching.
const UA_MAX_LENGTH = 500;
const NONE: UserAgentInfo = Object.freeze({ browser: Object.freeze({}), os: Object.freeze({}), device: Object.freeze({}) });

type Naming = (ua: string, result: ParserResult) => UserAgentInfo;

function cachedParser(naming: Naming): (ua: unknown) => UserAgentInfo {
  const cache = new LRUCache<string, UserAgentInfo>({ max: 2000 });
  return (ua) => {
    if (typeof ua !== "string" || ua === "") return NONE;
    const text = ua.slice(0, UA_MAX_LENGTH);
    let info = cache.get(text);
    if (!info) {
      info = naming(text, parseAgent(text));
      cache.set(text, info);
    }
    return info;
  };
}

const frozen = (browser: UserAgentInfo["browser"], os: UserAgentInfo["os"], device: UserAgentInfo["device"]): UserAgentInfo =>
  Object.freeze({ browser: Object.freeze(browser), os: Object.freeze(os), device: Object.freeze(device) });

/** ua-parser-js 1.x's names, as RudderStack's MP ($browser) and POSTHOG ($browser, $os) send them. */
export const parseUserAgent = cachedParser((_ua, r) =>
  frozen({ name: r.browser.name, version: r.browser.version }, { name: r.os.name }, { vendor: r.device.vendor }),
);

// The fork's own rules: Chrome for Android and iOS is "Chrome Mobile"; iPhones and iPads name their OS.
const CHROME_MOBILE = [/android.+crmo\/[\w.]+/i, /crios\/[\w.]+/i, /android.+chrome\/[\w.]+\s+(?:mobile\s?safari)/i];
const IPHONE_OS = /iphone(?:.*os\s*\w*\slike\smac|;\sopera)/i;
const IPAD_OS = /ipad(?:.*os\s*\w*\slike\smac|;\sopera)/i;
// The fork names every GNU/Linux distribution, BSD and games console "Linux"; these are 1.x's names for them.
const FORK_LINUX = new Set([
  "Linux", "Ubuntu", "Kubuntu", "Xubuntu", "Lubuntu", "Debian", "SUSE", "openSUSE", "Gentoo", "Arch", "Slackware", "Fedora",
  "Mandriva", "CentOS", "PCLinuxOS", "RedHat", "Red Hat", "Zenwalk", "Linpus", "Mint", "Mageia", "VectorLinux", "Joli", "Hurd",
  "GNU", "FreeBSD", "OpenBSD", "NetBSD", "PC-BSD", "DragonFly", "PlayStation", "Nintendo",
]);

function forkOsName(ua: string, name: string | undefined): string | undefined {
  if (name === "Mac OS" || name === "macOS") return "Mac";
  if (name === "iOS") return IPHONE_OS.test(ua) ? "iPhone" : IPAD_OS.test(ua) ? "iPad" : name;
  return name !== undefined && FORK_LINUX.has(name) ? "Linux" : name;
}

/**
 * The names Amplitude's fork of ua-parser-js gives, as RudderStack's AM sends them (browser as
 * os_name/os_version, OS as device_model, vendor as device_manufacturer): 1.x's answer with the
 * fork's renames, and the 0.7 name of Samsung's browser. The fork knows no vendor for desktops, a
 * Mac included. Rare agents can still differ where 1.x reads more than 0.7.21 did (in-app
 * browsers such as Instagram, newer phone makers).
 */
export const amplitudeUserAgent = cachedParser((ua, r) => {
  let browser = r.browser.name;
  if (browser === "Chrome" && CHROME_MOBILE.some((re) => re.test(ua))) browser = "Chrome Mobile";
  else if (browser === "Samsung Internet") browser = "Samsung Browser";
  const vendor = r.device.model === "Macintosh" ? undefined : r.device.vendor;
  return frozen({ name: browser, version: r.browser.version }, { name: forkOsName(ua, r.os.name) }, { vendor });
});
