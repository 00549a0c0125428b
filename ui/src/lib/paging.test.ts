import { describe, expect, it } from "vitest";
import { arrayPage, countItems, fromPaged, MAX_LIMIT, newestPage, pageRange, previousOffset, readAll } from "./paging";

/** A plain-array list of `n` items (0, 1, …), oldest first, that checks offset and limit as the API does and counts its requests. */
function list(n: number) {
  const items = Array.from({ length: n }, (_, i) => i);
  const calls: [number, number][] = [];
  const fetch = async (offset: number, limit: number) => {
    if (offset < 0 || limit < 1 || limit > MAX_LIMIT) throw new Error(`bad paging ${offset} ${limit}`);
    calls.push([offset, limit]);
    return items.slice(offset, offset + limit);
  };
  return { items, calls, fetch };
}

describe("arrayPage", () => {
  it("asks one item more than it shows, to know whether more follow", async () => {
    const l = list(250);
    const first = await arrayPage(l.fetch, 0, 100);
    expect(l.calls).toEqual([[0, 101]]);
    expect(first).toEqual({ items: l.items.slice(0, 100), offset: 0, hasMore: true });
    const last = await arrayPage(l.fetch, 200, 100);
    expect(last).toEqual({ items: l.items.slice(200), offset: 200, hasMore: false });
  });

  it("knows a page that ends exactly at the end of the list is the last", async () => {
    const l = list(200);
    expect((await arrayPage(l.fetch, 100, 100)).hasMore).toBe(false);
    expect((await arrayPage(l.fetch, 0, 100)).hasMore).toBe(true);
  });

  it("answers an empty page past the end", async () => {
    const l = list(3);
    expect(await arrayPage(l.fetch, 50, 50)).toEqual({ items: [], offset: 50, hasMore: false });
  });

  it("never asks more than the API's limit", async () => {
    const l = list(2000);
    const page = await arrayPage(l.fetch, 0, MAX_LIMIT);
    expect(l.calls).toEqual([[0, MAX_LIMIT]]);
    expect(page.items.length).toBe(MAX_LIMIT - 1);
    expect(page.hasMore).toBe(true);
  });
});

describe("fromPaged", () => {
  it("reads has_more and offset of a paged answer", () => {
    expect(fromPaged(["a"], { has_more: true, offset: 50 })).toEqual({ items: ["a"], offset: 50, hasMore: true });
  });
});

describe("readAll", () => {
  it("reads page after page until has_more is false", async () => {
    const l = list(2500);
    const all = await readAll(async (offset, limit) => {
      const items = await l.fetch(offset, limit);
      return { items, hasMore: offset + items.length < 2500 };
    });
    expect(all).toEqual(l.items);
    expect(l.calls).toEqual([
      [0, 1000],
      [1000, 1000],
      [2000, 1000],
    ]);
  });

  it("stops at an empty page even if has_more says otherwise", async () => {
    const all = await readAll(async () => ({ items: [] as number[], hasMore: true }));
    expect(all).toEqual([]);
  });
});

describe("countItems", () => {
  it("counts a list of fewer than 1000 items with one request, answering them", async () => {
    for (const n of [0, 1, 999]) {
      const l = list(n);
      const { total, head } = await countItems(l.fetch);
      expect(total).toBe(n);
      expect(head).toEqual(l.items);
      expect(l.calls.length).toBe(1);
    }
  });

  it("finds the end of longer lists exactly, with few requests", async () => {
    for (const n of [1000, 1001, 1999, 2000, 2001, 4095, 12345, 100000]) {
      const l = list(n);
      const { total } = await countItems(l.fetch);
      expect(total).toBe(n);
      expect(l.calls.length).toBeLessThan(2 + 2 * Math.log2(n));
    }
  });

  it("checks a count read before with one request when the list only grew", async () => {
    const l = list(5003);
    expect((await countItems(l.fetch, 5000)).total).toBe(5003);
    expect(l.calls).toEqual([[4999, 1000]]);
  });

  it("counts again when the hint is past the end (items were removed)", async () => {
    const l = list(1500);
    expect((await countItems(l.fetch, 1600)).total).toBe(1500);
  });
});

describe("newestPage", () => {
  it("shows the newest items first from a list that answers oldest first", async () => {
    const l = list(130);
    const page = await newestPage(l.fetch, 0, 50);
    expect(page.items).toEqual(l.items.slice(80).reverse());
    expect(page).toMatchObject({ offset: 0, hasMore: true, total: 130 });
    expect(l.calls.length).toBe(1);
    const last = await newestPage(l.fetch, 100, 50);
    expect(last.items).toEqual(l.items.slice(0, 30).reverse());
    expect(last.hasMore).toBe(false);
  });

  it("reaches the newest of more than 1000 items (which limit=1000 from the start never shows)", async () => {
    const l = list(2345);
    const page = await newestPage(l.fetch, 0, 50);
    expect(page.items[0]).toBe(2344);
    expect(page.items).toEqual(l.items.slice(2295).reverse());
    expect(page.total).toBe(2345);
    const oldest = await newestPage(l.fetch, 2300, 50, page.total);
    expect(oldest.items).toEqual(l.items.slice(0, 45).reverse());
    expect(oldest.hasMore).toBe(false);
  });

  it("answers an empty page for an empty list, and past the end", async () => {
    expect(await newestPage(list(0).fetch, 0, 50)).toEqual({ items: [], offset: 0, hasMore: false, total: 0 });
    expect((await newestPage(list(10).fetch, 50, 50)).items).toEqual([]);
  });
});

describe("pageRange and previousOffset", () => {
  it("tells the items shown", () => {
    expect(pageRange({ offset: 100, items: [1, 2, 3] })).toEqual({ first: 101, last: 103, total: undefined });
    expect(pageRange({ offset: 0, items: [], total: 0 })).toEqual({ first: 0, last: 0, total: 0 });
  });

  it("never goes before the first page", () => {
    expect(previousOffset(100, 50)).toBe(50);
    expect(previousOffset(30, 50)).toBe(0);
  });
});
