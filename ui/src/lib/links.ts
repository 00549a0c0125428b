// What the app takes from its own address: where to go after signing in, and the ids in a path.

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
