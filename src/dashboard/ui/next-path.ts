/**
 * A path of this origin to return to after signing in (`/login?next=`); anything else goes home.
 * URL parsers drop tabs and newlines and read a backslash as "/", so "/<tab>/evil.example" becomes
 * "//evil.example", another site: a single "/" not followed by "/" or a backslash, and no
 * whitespace or control character anywhere.
 */
export function safeNext(raw: string | null, origin: string): string {
  if (!raw || !/^\/(?![/\\])[^\s\x00-\x1f\x7f]*$/.test(raw)) return "/";
  // Belt and braces: whatever the browser makes of it must stay on this origin.
  try {
    return new URL(raw, origin).origin === origin ? raw : "/";
  } catch {
    return "/";
  }
}
