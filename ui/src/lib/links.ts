// What the app takes from its own address: where to go after signing in, the ids in a path, and
// the values a page keeps in its query (an offset, a filter, models compared).

/**
 * Where to go after signing in: `next` when it is a path of the app, else the projects. A path
 * starts with one "/"; "//host" and "/\host" (which browsers read as "//host") lead elsewhere,
 * and so do control characters, which browsers drop ("/\t/host").
 */
export function safeNext(next: string | null | undefined): string {
  if (!next || !next.startsWith("/") || /^\/[/\\]/.test(next) || /[\\\u0000-\u001f\u007f]/.test(next)) return "/";
  const base = "https://app.invalid";
  try {
    if (new URL(next, base).origin !== base) return "/";
  } catch {
    return "/";
  }
  return next;
}

/** Whether a path segment is an id (digits, within what a JavaScript number holds exactly). */
export function isId(s: string | undefined): boolean {
  return s !== undefined && /^\d{1,15}$/.test(s);
}

/** Whether every `…Id` parameter of a route (projectId, sessionId, …) is an id. */
export function idsValid(params: Record<string, string | undefined>): boolean {
  return Object.entries(params).every(([k, v]) => !k.endsWith("Id") || isId(v));
}

/** An offset from a query value: a whole number from 0, else 0 (`?doc=-5`, `?offset=x`). */
export function readOffset(value: string | null | undefined): number {
  const n = Math.floor(Number(value ?? 0));
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** The ids a query value lists (`?compare=3,5`): each once, in order; anything else is left out. */
export function readIds(value: string | null | undefined): number[] {
  const ids = (value ?? "").split(",").filter(isId).map(Number);
  return [...new Set(ids)];
}

/**
 * A query string with `patch` applied: a value set, or taken out when it is null, "" or 0 (the
 * default of every value kept there), the others kept.
 */
export function patchQuery(query: URLSearchParams, patch: Record<string, string | number | null>): URLSearchParams {
  const next = new URLSearchParams(query);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === "" || v === 0) next.delete(k);
    else next.set(k, String(v));
  }
  return next;
}
