import { describe, expect, it } from "vitest";
import { byType, displayName, exactPercent, heat, isFailed, isFinal, percent, readMetrics, tagKinds } from "./format";
import { chipIndex, chipKey, waitsForDocument } from "./keys";

describe("byType", () => {
  it("groups projects by type in the product's order, names sorted", () => {
    const groups = byType([
      { type: "LABEL", name: "b" },
      { type: "ABSA", name: "z" },
      { type: "CLASS", name: "y" },
      { type: "CLASS", name: "a" },
    ]);
    expect(groups.map(([t, l]) => [t, l.map((p) => p.name)])).toEqual([
      ["CLASS", ["a", "y"]],
      ["LABEL", ["b"]],
      ["ABSA", ["z"]],
    ]);
  });
});

describe("statuses", () => {
  it("knows which statuses are final", () => {
    expect(isFinal("DONE")).toBe(true);
    expect(isFinal("READY")).toBe(true);
    expect(isFinal("TRAINING")).toBe(false);
    expect(isFinal("QUEUED")).toBe(false);
    expect(isFinal("PROCESSING")).toBe(false);
    expect(isFailed("FAILED")).toBe(true);
    expect(isFailed("DONE")).toBe(false);
  });
});

describe("tagKinds", () => {
  it("tells what each project type tags with", () => {
    expect(tagKinds("CLASS")).toEqual({ classes: true, labels: false });
    expect(tagKinds("LABEL")).toEqual({ classes: false, labels: true });
    expect(tagKinds("ABSA")).toEqual({ classes: true, labels: true });
  });
});

describe("numbers", () => {
  it("formats shares", () => {
    expect(percent(0.256)).toBe("26 %");
    expect(percent(null)).toBe("–");
  });
  it("shows a threshold as it was entered, not rounded to a whole percent", () => {
    expect(exactPercent(0.999)).toBe("99.9 %");
    expect(exactPercent(0.8)).toBe("80 %");
    expect(exactPercent(0.9995)).toBe("99.95 %");
    expect(exactPercent(0.07)).toBe("7 %");
    expect(exactPercent(1)).toBe("100 %");
    expect(exactPercent(null)).toBe("–");
  });
  it("shades heat-map cells from white to blue", () => {
    expect(heat(0, 10)).toEqual({ fill: "rgb(255, 255, 255)", light: false });
    expect(heat(10, 10)).toEqual({ fill: "rgb(23, 70, 150)", light: true });
    expect(heat(3, 0).fill).toBe("rgb(255, 255, 255)");
  });
});

describe("readMetrics", () => {
  it("reads the training job's metrics", () => {
    const m = readMetrics({
      project_type: "LABEL",
      segments: 4,
      accuracy: 0.75,
      micro_f1: 0.75,
      macro_f1: 0.7,
      classes: [],
      labels: [{ name: "pos", precision: 1, recall: 0.5, f1: 0.667, support: 2 }],
      confusion: { names: ["neg", "pos"], matrix: [[2, 0], [1, 1]] },
      score: 0.7,
    });
    expect(m?.score).toBe(0.7);
    expect(m?.labels?.[0].f1).toBe(0.667);
    expect(m?.confusion?.matrix[1][0]).toBe(1);
  });
  it("answers null for a model without metrics", () => {
    expect(readMetrics({})).toBeNull();
    expect(readMetrics(null)).toBeNull();
  });
});

describe("chip keys", () => {
  it("maps number keys to chips and back", () => {
    expect(chipKey(0)).toBe("1");
    expect(chipKey(9)).toBe("0");
    expect(chipKey(10)).toBeNull();
    expect(chipIndex("Digit1")).toBe(0);
    expect(chipIndex("Numpad0")).toBe(9);
    expect(chipIndex("KeyA")).toBeNull();
  });
});

describe("keys typed ahead", () => {
  const k = (key: string, code = "") => ({ key, code });
  it("hold the keys that tag, mark or move for the document being loaded", () => {
    expect(waitsForDocument(k("2", "Digit2"), false)).toBe(true);
    expect(waitsForDocument(k("@", "Digit2"), false)).toBe(true);
    expect(waitsForDocument(k("Enter"), false)).toBe(true);
    expect(waitsForDocument(k("Backspace"), false)).toBe(true);
    expect(waitsForDocument(k("n"), false)).toBe(true);
  });
  it("let page keys through, and c only confirms in correction sessions", () => {
    expect(waitsForDocument(k("?"), false)).toBe(false);
    expect(waitsForDocument(k("Escape"), false)).toBe(false);
    expect(waitsForDocument(k("Tab"), false)).toBe(false);
    expect(waitsForDocument(k("c"), false)).toBe(false);
    expect(waitsForDocument(k("c"), true)).toBe(true);
  });
});

describe("displayName", () => {
  it("is the first and last name, else the e-mail address", () => {
    expect(displayName({ first_name: "Grace", last_name: "Hopper", email: "g@example.org" })).toBe("Grace Hopper");
    expect(displayName({ first_name: " ", last_name: "Hopper", email: "g@example.org" })).toBe("Hopper");
    expect(displayName({ first_name: "", last_name: "", email: "g@example.org" })).toBe("g@example.org");
  });
});
