// When to try again after a 429: the `Retry-After` header read (seconds, or an HTTP date) and
// said in words.

/**
 * The seconds to wait that a `Retry-After` value asks for: a whole number of seconds, or an
 * HTTP date (then the time from `now` until it, at least 1 s); null when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: Date = new Date()): number | null {
  const text = (value ?? "").trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Number(text);
  // A date names a weekday and a month (RFC 9110); Date.parse alone would take "3.5" as a year.
  if (!/[a-z]{3}/i.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(1, Math.ceil((at - now.getTime()) / 1000));
}

/** A wait in words: "3 s" under a minute and a half, then whole minutes or hours, rounded up. */
export function waitInWords(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  if (s < 90) return `${s} s`;
  const minutes = Math.ceil(s / 60);
  if (minutes < 90) return `${minutes} min`;
  return `${Math.ceil(minutes / 60)} h`;
}

/**
 * What a 429 answer tells the user: too many requests, and when to try again. ("At once" would
 * be wrong for the sign-in limits, which count attempts over minutes.)
 */
export function tooManyRequests(seconds: number): string {
  return `Too many requests; try again in ${waitInWords(seconds)}`;
}
