import { describe, expect, it } from "vitest";
import { idsValid, isId, patchQuery, readIds, readOffset, safeNext } from "./links";

describe("safeNext", () => {
  it("keeps a path of the app", () => {
    expect(safeNext("/projects/1?doc=3")).toBe("/projects/1?doc=3");
    expect(safeNext("/analyses")).toBe("/analyses");
  });
  it("goes to the projects for anything that leaves the app", () => {
    for (const bad of [null, "", "https://example.com/x", "//example.com/x", "/\\example.com", "/\\/example.com", "\\\\example.com", "javascript:alert(1)", "/\t/example.com", "/\n/example.com", "projects/1"]) {
      expect(safeNext(bad)).toBe("/");
    }
  });
});

describe("ids in paths", () => {
  it("are digits only", () => {
    expect(isId("12")).toBe(true);
    expect(isId("abc")).toBe(false);
    expect(isId("1e3")).toBe(false);
    expect(isId("-1")).toBe(false);
    expect(isId("")).toBe(false);
    expect(isId("1234567890123456")).toBe(false);
  });
  it("are checked for every …Id parameter of a route", () => {
    expect(idsValid({ projectId: "3", sessionId: "7" })).toBe(true);
    expect(idsValid({ projectId: "abc" })).toBe(false);
    expect(idsValid({ projectId: "3", modelId: "NaN" })).toBe(false);
    expect(idsValid({ "*": "no/such/page" })).toBe(true);
  });
});

describe("values kept in the query", () => {
  it("read an offset, 0 for anything that is not one", () => {
    expect(readOffset("50")).toBe(50);
    expect(readOffset("2.7")).toBe(2);
    for (const bad of [null, "", "-5", "abc", "Infinity"]) expect(readOffset(bad)).toBe(0);
  });
  it("read a list of ids, each once", () => {
    expect(readIds("3,5")).toEqual([3, 5]);
    expect(readIds("5,x,5,,7")).toEqual([5, 7]);
    expect(readIds(null)).toEqual([]);
  });
  it("set and take out values, keeping the others", () => {
    const q = new URLSearchParams("offset=50&class=3&other=x");
    expect(patchQuery(q, { class: 4, offset: 0 }).toString()).toBe("class=4&other=x");
    expect(patchQuery(q, { label: "", compare: "1,2" }).toString()).toBe("offset=50&class=3&other=x&compare=1%2C2");
    expect(q.toString()).toBe("offset=50&class=3&other=x");
  });
});
