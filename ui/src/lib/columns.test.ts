import { describe, expect, it } from "vitest";
import { guessColumn, guessMapping, headerFirstFor } from "./columns";

describe("guessColumn", () => {
  it("takes a column named like text", () => {
    expect(guessColumn([["id", "Text", "channel"], ["1", "short", "a much longer channel name"]], true)).toBe(1);
  });
  it("else takes the column with the longest cells", () => {
    const rows = [
      ["id", "ticket", "channel"],
      ["1", "I was charged twice", "mail"],
      ["2", "I cannot log in", "phone"],
    ];
    expect(guessColumn(rows, true)).toBe(1);
  });
  it("counts the first row as data without a header", () => {
    expect(guessColumn([["a", "a long first row"], ["bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "x"]], false)).toBe(0);
  });
  it("answers 0 for an empty preview", () => {
    expect(guessColumn([], true)).toBe(0);
  });
});

describe("guessMapping", () => {
  it("maps a session's download by its column names", () => {
    const header = ["document", "segment", "text", "class", "label", "part", "annotated", "page", "boxes"];
    expect(guessMapping(header)).toEqual({
      text: "text",
      class: "class",
      label: "label",
      document: "document",
      part: "part",
      annotated: "annotated",
    });
  });
  it("falls back to the first column for the text and leaves the rest unmapped", () => {
    expect(guessMapping(["Review", "Sentiment"])).toEqual({
      text: "Review",
      class: "",
      label: "Sentiment",
      document: "",
      part: "",
      annotated: "",
    });
  });
});

describe("headerFirstFor", () => {
  it("takes the first row of a table file for its column names", () => {
    for (const f of ["tickets.csv", "a.TSV", "rows.json", "rows.jsonl", "book.xlsx"]) expect(headerFirstFor(f)).toBe(true);
  });
  it("reads every line of a TXT file as a document: it has no header row", () => {
    expect(headerFirstFor("notes.txt")).toBe(false);
    expect(headerFirstFor("NOTES.TXT")).toBe(false);
    expect(headerFirstFor("my.notes.txt")).toBe(false);
  });
});
