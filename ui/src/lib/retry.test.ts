import { describe, expect, it } from "vitest";
import { parseRetryAfter, tooManyRequests, waitInWords } from "./retry";

describe("parseRetryAfter", () => {
  const now = new Date("2026-11-27T18:00:00Z");
  it("reads whole seconds", () => {
    expect(parseRetryAfter("3", now)).toBe(3);
    expect(parseRetryAfter(" 163 ", now)).toBe(163);
    expect(parseRetryAfter("0", now)).toBe(0);
  });
  it("reads an HTTP date as the seconds until it, at least 1", () => {
    expect(parseRetryAfter("Fri, 27 Nov 2026 18:00:10 GMT", now)).toBe(10);
    expect(parseRetryAfter("Fri, 27 Nov 2026 17:59:00 GMT", now)).toBe(1);
  });
  it("answers null when absent or unreadable", () => {
    expect(parseRetryAfter(null, now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
    expect(parseRetryAfter("", now)).toBeNull();
    expect(parseRetryAfter("-3", now)).toBeNull();
    expect(parseRetryAfter("3.5", now)).toBeNull();
    expect(parseRetryAfter("soon", now)).toBeNull();
  });
});

describe("waitInWords", () => {
  it("says seconds under a minute and a half, then minutes, then hours, rounded up", () => {
    expect(waitInWords(0)).toBe("1 s");
    expect(waitInWords(3)).toBe("3 s");
    expect(waitInWords(89)).toBe("89 s");
    expect(waitInWords(90)).toBe("2 min");
    expect(waitInWords(163)).toBe("3 min");
    expect(waitInWords(89 * 60)).toBe("89 min");
    expect(waitInWords(90 * 60)).toBe("2 h");
  });
});

describe("tooManyRequests", () => {
  it("says when to try again", () => {
    expect(tooManyRequests(3)).toBe("Too many requests; try again in 3 s");
  });
});
