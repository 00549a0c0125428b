// Which review configuration the Reviews page opens on when the address names none.

/** Whether a page of a configuration's reviews holds one still waiting for a person. */
export function hasPendingReview(reviews: { status: string }[]): boolean {
  return reviews.some((r) => r.status.toUpperCase() === "PENDING");
}

/**
 * The configuration to open: the first (in the given order) with a pending review, else the
 * first; null when there is none. Asks `hasPending` one configuration at a time and stops at the
 * first yes (the server lets one caller run only a few requests at once); one that cannot be
 * asked counts as having none, and its queue shows the error when opened.
 */
export async function configurationToOpen(ids: number[], hasPending: (id: number) => Promise<boolean>): Promise<number | null> {
  if (ids.length <= 1) return ids[0] ?? null;
  for (const id of ids) {
    if (await hasPending(id).catch(() => false)) return id;
  }
  return ids[0];
}
