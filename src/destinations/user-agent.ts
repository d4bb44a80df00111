/**
 * Browser, OS and device vendor from a user agent, named as ua-parser-js 1.x names them,
 * because RudderStack fills AM's browser/OS/manufacturer fields, MP's $browser and PostHog's
 * $browser/$os for web events from that library (AM through Amplitude's fork, which the AM
 * kind follows where it names things differently). Only the common browsers, systems and
 * vendors are recognised; anything else gives no name and the callers fall back to the event's
 * context (RudderStack's parser knows many more, see src/destinations/README.md, "User agents").
 */

export interface UserAgentInfo {
  browser: { name?: string; version?: string };
  os: { name?: string };
  device: { vendor?: string };
}

type Rule = {
  pattern: RegExp;
  /** A fixed name, or a function of the match; undefined takes capture group 1. */
  name?: string | ((m: RegExpExecArray) => string);
  /** Capture group holding the version (none: no version). */
  version?: number;
};

// ua-parser-js stops reading a user agent after this many characters.
const UA_MAX_LENGTH = 350;

/** First match wins, so the order matters: Edge and Opera carry "Chrome" in their agents too. */
const BROWSER_RULES: Rule[] = [
  { pattern: /\b(?:crmo|crios)\/([\w.]+)/i, name: "Chrome", version: 1 },
  { pattern: /edg(?:e|ios|a)?\/([\w.]+)/i, name: "Edge", version: 1 },
  { pattern: /(opera mini)\/([-\w.]+)/i, version: 2 },
  { pattern: /(opera)(?:.+version\/|[/ ]+)([\w.]+)/i, version: 2 },
  { pattern: /opios[/ ]+([\w.]+)/i, name: "Opera Mini", version: 1 },
  { pattern: /\bopr\/([\w.]+)/i, name: "Opera", version: 1 },
  { pattern: /(?:ms|\()(ie) ([\w.]+)/i, version: 2 },
  { pattern: /(vivaldi|brave|duckduckgo|silk|puffin|whale(?!.+naver))\/([-\w.]+)/i, version: 2 },
  { pattern: /(?:\buc? ?browser|(?:juc.+)ucweb)[/ ]?([\w.]+)/i, name: "UCBrowser", version: 1 },
  { pattern: /micromessenger\/([\w.]+)/i, name: "WeChat", version: 1 },
  { pattern: /trident.+rv[: ]([\w.]{1,9})\b.+like gecko/i, name: "IE", version: 1 },
  { pattern: /ya(?:search)?browser\/([\w.]+)/i, name: "Yandex", version: 1 },
  { pattern: /\bfocus\/([\w.]+)/i, name: "Firefox Focus", version: 1 },
  { pattern: /miuibrowser\/([\w.]+)/i, name: "MIUI Browser", version: 1 },
  { pattern: /fxios\/([-\w.]+)/i, name: "Firefox", version: 1 },
  { pattern: /(oculus|samsung|sailfish|huawei)browser\/([\w.]+)/i, name: (m) => `${m[1]} Browser`, version: 2 },
  { pattern: /(electron)\/([\w.]+) safari/i, version: 2 },
  { pattern: /((?:fban\/fbios|fb_iab\/fb4a)(?!.+fbav)|;fbav\/([\w.]+);)/i, name: "Facebook", version: 2 },
  { pattern: /(chromium|instagram|snapchat)[/ ]([-\w.]+)/i, version: 2 },
  { pattern: /\bgsa\/([\w.]+) .*safari\//i, name: "GSA", version: 1 },
  { pattern: /headlesschrome(?:\/([\w.]+)| )/i, name: "Chrome Headless", version: 1 },
  { pattern: / wv\).+(chrome)\/([\w.]+)/i, name: "Chrome WebView", version: 2 },
  { pattern: /droid.+ version\/([\w.]+)\b.+(?:mobile safari|safari)/i, name: "Android Browser", version: 1 },
  { pattern: /(chrome|omniweb|arora|[tizenoka]{5} ?browser)\/v?([\w.]+)/i, version: 2 },
  { pattern: /version\/([\w.,]+) .*mobile\/\w+ (safari)/i, name: "Mobile Safari", version: 1 },
  { pattern: /version\/([\w(.|,)]+) .*(mobile ?safari|safari)/i, name: (m) => m[2]!, version: 1 },
  { pattern: /mobile vr; rv:([\w.]+)\).+firefox/i, name: "Firefox Reality", version: 1 },
  { pattern: /(firefox)\/([\w.]+)/i, version: 2 },
];

const OS_RULES: Rule[] = [
  { pattern: /microsoft (windows) (vista|xp)/i },
  { pattern: /(windows) nt 6\.2; (arm)/i },
  { pattern: /(windows (?:phone(?: os)?|mobile))[/ ]?([\d.\w ]*)/i },
  { pattern: /(windows)[/ ]?([ntce\d. ]+\w)(?!.+xbox)/i },
  { pattern: /(win(?=3|9|n)|win 9x )([nt\d.]+)/i, name: "Windows" },
  { pattern: /ip[honead]{2,4}\b(?:.*os ([\w]+) like mac|; opera)/i, name: "iOS" },
  { pattern: /(?:ios;fbsv\/|iphone.+ios[/ ])([\d.]+)/i, name: "iOS" },
  { pattern: /cfnetwork\/.+darwin/i, name: "iOS" },
  { pattern: /(mac os x) ?([\w. ]*)/i, name: "Mac OS" },
  { pattern: /(macintosh|mac_powerpc\b)(?!.+haiku)/i, name: "Mac OS" },
  { pattern: /droid ([\w.]+)\b.+(android[- ]x86|harmonyos)/i, name: (m) => m[2]! },
  { pattern: /(android|webos|qnx|bada|rim tablet os|maemo|meego|sailfish)[-/ ]?([\w.]*)/i },
  { pattern: /(blackberry)\w*\/([\w.]*)/i },
  { pattern: /(tizen|kaios)[/ ]([\w.]+)/i },
  { pattern: /\(bb(10);/i, name: "BlackBerry" },
  { pattern: /watch(?: ?os[,/]|\d,\d\/)([\d.]+)/i, name: "watchOS" },
  { pattern: /crkey\/([\d.]+)/i, name: "Chromecast" },
  { pattern: /(cros) [\w]+(?:\)| ([\w.]+)\b)/i, name: "Chromium OS" },
  { pattern: /(xbox); +xbox ([^);]+)/i },
  {
    pattern:
      /([kxln]?ubuntu|debian|suse|opensuse|gentoo|arch(?= linux)|slackware|fedora|mandriva|centos|pclinuxos|red ?hat|zenwalk|linpus|raspbian|plan 9|minix|risc os|contiki|deepin|manjaro|elementary os|sabayon|linspire)(?: gnu\/linux)?(?: enterprise)?(?:[- ]linux)?(?:-gnu)?[-/ ]?(?!chrom|package)([-\w.]*)/i,
  },
  { pattern: /(hurd|linux) ?([\w.]*)/i },
  { pattern: /\b([-frentopcghs]{0,5}bsd|dragonfly)[/ ]?(?!amd|[ix346]{1,2}86)([\w.]*)/i },
];

// Only AM sends a vendor, and RudderStack's AM gives none for desktops (a Mac included).
const VENDOR_RULES: Rule[] = [
  { pattern: /\b(?:iPhone|iPad|iPod)\b/, name: "Apple" },
  { pattern: /\b(?:SM-[A-Z]|SAMSUNG|Samsung)/, name: "Samsung" },
  { pattern: /\bPixel\b/, name: "Google" },
  { pattern: /\bHUAWEI|Huawei\b/, name: "Huawei" },
  { pattern: /\b(?:Redmi|Xiaomi|MI \d)/, name: "Xiaomi" },
  { pattern: /\bONEPLUS|OnePlus\b/, name: "OnePlus" },
  { pattern: /\bmoto\b|Motorola/, name: "Motorola" },
];

function firstMatch(ua: string, rules: Rule[]): { name?: string; version?: string } | undefined {
  const text = ua.slice(0, UA_MAX_LENGTH);
  for (const rule of rules) {
    const m = rule.pattern.exec(text);
    if (!m) continue;
    const name = typeof rule.name === "function" ? rule.name(m) : (rule.name ?? m[1]);
    return { name, version: rule.version ? m[rule.version] : undefined };
  }
  return undefined;
}

export function parseUserAgent(ua: unknown): UserAgentInfo {
  if (typeof ua !== "string" || ua === "") return { browser: {}, os: {}, device: {} };
  return {
    browser: firstMatch(ua, BROWSER_RULES) ?? {},
    os: { name: firstMatch(ua, OS_RULES)?.name },
    device: { vendor: firstMatch(ua, VENDOR_RULES)?.name },
  };
}
