// Names the app makes up for the user (who can change them): within the server's limits.

/** The most characters a name or display name may have (the server counts code points). */
export const MAX_NAME_CHARS = 120;

/** The length of `text` as the server counts it: in code points, not UTF-16 units. */
export function chars(text: string): number {
  return Array.from(text).length;
}

/**
 * The name of a project's `n`-th model, "Tickets v3". A project name too long to fit with the
 * version is cut (at a code point, trailing spaces dropped) and ends in "…", so that the whole
 * stays within `max` characters.
 */
export function versionName(project: string, n: number, max = MAX_NAME_CHARS): string {
  const suffix = ` v${n}`;
  const room = max - suffix.length;
  if (chars(project) <= room) return `${project}${suffix}`;
  const cut = Array.from(project)
    .slice(0, Math.max(room - 1, 0))
    .join("")
    .trimEnd();
  return `${cut}…${suffix}`;
}

/**
 * The name proposed for a new model of the project: the version after the models it has, or
 * the first one after that whose name no model of the project uses yet (one was deleted).
 */
export function nextVersionName(project: string, models: { name?: string; display_name: string }[], max = MAX_NAME_CHARS): string {
  const taken = new Set(models.flatMap((m) => [m.name, m.display_name]));
  let n = models.length + 1;
  while (taken.has(versionName(project, n, max))) n++;
  return versionName(project, n, max);
}
