import { describe, expect, it } from "vitest";
import { idsValid, isId, safeNext } from "./links";

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
