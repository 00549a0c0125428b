// Paging over the API's lists. Every list takes `offset` (>= 0) and `limit` (1..=1000); some
// answer `{<items>, has_more, offset, limit, count}`, others a plain array with no count. These
// helpers turn both into one Page the pages show with the same controls (`Pager`).

/** The most a list answers at once (`limit` 1..=1000). */
export const MAX_LIMIT = 1000;

/** One page of a list: its items, where it starts, and whether more follow. */
export type Page<T> = {
  items: T[];
  /** The position of the first item in the list (in the order the page shows). */
  offset: number;
  /** Whether items follow this page. */
  hasMore: boolean;
  /** How many items the list has, when known. */
  total?: number;
};

/** Reads `limit` items from `offset` of a list that answers a plain array. */
export type FetchSlice<T> = (offset: number, limit: number) => Promise<T[]>;

/** A page of a paged answer `{has_more, offset, count}` with its items. */
export function fromPaged<T>(items: T[], answer: { has_more: boolean; offset: number }): Page<T> {
  return { items, offset: answer.offset, hasMore: answer.has_more };
}

/**
 * A page of `size` items from `offset` of a list that answers a plain array: it asks for one
 * item more than it shows, so that whether more follow is known without a count.
 */
export async function arrayPage<T>(fetch: FetchSlice<T>, offset: number, size: number): Promise<Page<T>> {
  const limit = Math.min(size + 1, MAX_LIMIT);
  const shown = limit - 1;
  const got = await fetch(offset, limit);
  return { items: got.slice(0, shown), offset, hasMore: got.length > shown };
}

/**
 * Every item of a paged list, page after page of MAX_LIMIT until `has_more` is false (for a
 * picker, which cannot page). Stops, too, at an empty page.
 */
export async function readAll<T>(fetch: (offset: number, limit: number) => Promise<{ items: T[]; hasMore: boolean }>): Promise<T[]> {
  const all: T[] = [];
  for (;;) {
    const page = await fetch(all.length, MAX_LIMIT);
    all.push(...page.items);
    if (!page.hasMore || page.items.length === 0) return all;
  }
}

/**
 * How many items a plain-array list has (it gives no count). `hint`, a count read before, is
 * checked first: the items from its last one on tell the count in one request while nothing
 * was removed. Otherwise the first MAX_LIMIT items tell it when there are fewer; beyond that,
 * requests of one item find the end (offsets doubling, then halving the gap).
 */
export async function countItems<T>(fetch: FetchSlice<T>, hint = 0): Promise<{ total: number; head?: T[] }> {
  if (hint > 0) {
    const tail = await fetch(hint - 1, MAX_LIMIT);
    if (tail.length > 0 && tail.length < MAX_LIMIT) return { total: hint - 1 + tail.length };
  }
  const head = await fetch(0, MAX_LIMIT);
  if (head.length < MAX_LIMIT) return { total: head.length, head };
  const exists = async (index: number) => (await fetch(index, 1)).length > 0;
  // At least `low` items; fewer than `high` once an index past the end is found.
  let low = MAX_LIMIT;
  let high = 2 * MAX_LIMIT;
  while (await exists(high - 1)) {
    low = high;
    high *= 2;
  }
  high -= 1; // at most high items
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (await exists(mid - 1)) low = mid;
    else high = mid - 1;
  }
  return { total: low };
}

/**
 * A page of a plain-array list that answers oldest first, shown newest first: the `size` items
 * after the newest `offset`, newest first. `hint` is a total read before (see countItems).
 */
export async function newestPage<T>(fetch: FetchSlice<T>, offset: number, size: number, hint = 0): Promise<Page<T> & { total: number }> {
  const { total, head } = await countItems(fetch, hint);
  const end = Math.max(0, total - offset);
  const start = Math.max(0, end - size);
  let items: T[] = [];
  if (end > start) items = head ? head.slice(start, end) : await fetch(start, end - start);
  return { items: [...items].reverse(), offset, hasMore: start > 0, total };
}

/** The first item shown, the last, and the total (when known), for "Members 101–200 of 250". */
export function pageRange(page: { offset: number; items: unknown[]; total?: number }): { first: number; last: number; total?: number } {
  const count = page.items.length;
  return { first: count === 0 ? 0 : page.offset + 1, last: page.offset + count, total: page.total };
}

/** The offset of the page before (never below 0) and of the page after. */
export function previousOffset(offset: number, size: number): number {
  return Math.max(0, offset - size);
}
