import { describe, expect, it } from "vitest";
import { codePointToUnit, codePoints, partSpan, pieces, unitToCodePoint, words } from "./text";

describe("code points", () => {
  it("counts astral characters once", () => {
    expect(codePoints("a😀b")).toBe(3);
    expect("a😀b".length).toBe(4);
  });
  it("converts offsets both ways", () => {
    const s = "x😀yz";
    expect(unitToCodePoint(s, 3)).toBe(2);
    expect(codePointToUnit(s, 2)).toBe(3);
    expect(codePointToUnit(s, 4)).toBe(s.length);
  });
});

describe("partSpan", () => {
  it("answers the document span of a part, trimmed", () => {
    // Segment "I was 😀 charged twice." starting at code point 10 of the document.
    const seg = "I was 😀 charged twice.";
    const from = seg.indexOf(" charged");
    const to = seg.indexOf(" twice");
    expect(partSpan(seg, 10, from, to)).toEqual({ span: [10 + 8, 10 + 15], text: "charged" });
  });
  it("accepts a backwards selection and refuses an empty one", () => {
    expect(partSpan("abc def", 0, 7, 4)).toEqual({ span: [4, 7], text: "def" });
    expect(partSpan("abc def", 0, 3, 4)).toBeNull();
  });
});

describe("words", () => {
  it("finds the words of a text", () => {
    expect(words(" My invoice  is wrong.")).toEqual([
      [1, 3],
      [4, 11],
      [13, 15],
      [16, 22],
    ]);
  });
});

describe("pieces", () => {
  it("splits a segment around tagged parts", () => {
    expect(pieces("My invoice is wrong.", 5, [[8, 15]])).toEqual([
      { text: "My ", tag: -1 },
      { text: "invoice", tag: 0 },
      { text: " is wrong.", tag: -1 },
    ]);
  });
  it("ignores parts outside the segment", () => {
    expect(pieces("abc", 10, [[0, 5]])).toEqual([{ text: "abc", tag: -1 }]);
  });
});
