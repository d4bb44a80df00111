/**
 * A small user-agent reader for the fields RudderStack's AM and MP destinations take from
 * `context.userAgent` on web events (browser name and version, OS name, device vendor).
 * RudderStack uses ua-parser-js (Amplitude's fork for AM); this covers the browsers, systems
 * and vendors that make up nearly all web traffic and answers with the same names, so common
 * events carry the same values without adding a dependency. Anything it does not recognise
 * comes back undefined and the callers fall back to the event's own context fields.
 */

export interface UserAgentInfo {
  browser: { name?: string; version?: string };
  os: { name?: string; version?: string };
  device: { vendor?: string };
}

type Rule = [RegExp, string];

// Order matters: many browsers also claim to be Chrome or Safari, so the specific ones come first.
const BROWSERS: Rule[] = [
  [/\bEdg(?:e|A|iOS)?\/([\w.]+)/, "Edge"],
  [/\bOPR\/([\w.]+)/, "Opera"],
  [/\bOpera.+Version\/([\w.]+)/, "Opera"],
  [/\bSamsungBrowser\/([\w.]+)/, "Samsung Browser"],
  [/\bYaBrowser\/([\w.]+)/, "Yandex"],
  [/\bFBAV\/([\w.]+)/, "Facebook"],
  [/\bInstagram ([\w.]+)/, "Instagram"],
  [/; wv\).+?Chrome\/([\w.]+)/, "Chrome WebView"],
  [/\bHeadlessChrome\/([\w.]+)/, "Chrome Headless"],
  [/\bCriOS\/([\w.]+)/, "Chrome"],
  [/\bFxiOS\/([\w.-]+)/, "Firefox"],
  [/(?:Mobile|Tablet);.*Firefox\/([\w.-]+)/, "Mobile Firefox"],
  [/\bChrome\/([\w.]+)/, "Chrome"],
  [/Android.+Version\/([\w.]+)\s+(?:Mobile\s?Safari|Safari)/, "Android Browser"],
  [/Version\/([\w.]+).*Mobile\/\w+ Safari/, "Mobile Safari"],
  [/Version\/([\w.]+).*Safari/, "Safari"],
  [/\bFirefox\/([\w.-]+)/, "Firefox"],
  [/(?:MSIE |Trident\/.*rv:)([\w.]+)/, "IE"],
];

const WINDOWS_VERSIONS: Record<string, string> = {
  "10.0": "10",
  "6.3": "8.1",
  "6.2": "8",
  "6.1": "7",
  "6.0": "Vista",
  "5.2": "XP",
  "5.1": "XP",
};

function os(ua: string): UserAgentInfo["os"] {
  let m = /\bWindows NT ([\d.]+)/.exec(ua);
  if (m) return { name: "Windows", version: WINDOWS_VERSIONS[m[1]!] ?? m[1] };
  // iOS user agents also say "like Mac OS X", so they are checked before macOS.
  m = /\b(?:iPhone|iPad|iPod)\b.*? OS ([\d_]+)/.exec(ua);
  if (m) return { name: "iOS", version: m[1]!.replace(/_/g, ".") };
  m = /\bAndroid[ /]?([\d.]*)/.exec(ua);
  if (m) return { name: "Android", version: m[1] || undefined };
  m = /\bMac OS X ?([\d_.]*)/.exec(ua);
  // Amplitude's parser names macOS "Mac" (stock ua-parser-js says "Mac OS").
  if (m) return { name: "Mac", version: m[1] ? m[1].replace(/_/g, ".") : undefined };
  m = /\bCrOS \w+ ([\d.]+)/.exec(ua);
  if (m) return { name: "Chromium OS", version: m[1] };
  if (/\bUbuntu\b/.test(ua)) return { name: "Ubuntu" };
  if (/\bLinux\b/.test(ua)) return { name: "Linux" };
  return {};
}

const VENDORS: Rule[] = [
  [/\b(?:iPhone|iPad|iPod)\b/, "Apple"],
  [/\b(?:SM-[A-Z]|SAMSUNG|Samsung)/, "Samsung"],
  [/\bPixel\b/, "Google"],
  [/\bHUAWEI|Huawei\b/, "Huawei"],
  [/\b(?:Redmi|Xiaomi|MI \d)/, "Xiaomi"],
  [/\bONEPLUS|OnePlus\b/, "OnePlus"],
  [/\bmoto\b|Motorola/, "Motorola"],
];

export function parseUserAgent(ua: unknown): UserAgentInfo {
  if (typeof ua !== "string" || ua === "") return { browser: {}, os: {}, device: {} };
  let browser: UserAgentInfo["browser"] = {};
  for (const [re, name] of BROWSERS) {
    const m = re.exec(ua);
    if (m) {
      browser = { name, version: m[1] };
      break;
    }
  }
  const vendor = VENDORS.find(([re]) => re.test(ua))?.[1];
  return { browser, os: os(ua), device: { vendor } };
}
