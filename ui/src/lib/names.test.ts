import { describe, expect, it } from "vitest";
import { chars, MAX_NAME_CHARS, nextVersionName, versionName } from "./names";

describe("versionName", () => {
  it("adds the version to a project name that fits", () => {
    expect(versionName("Tickets", 1)).toBe("Tickets v1");
    expect(versionName("x".repeat(117), 1)).toBe(`${"x".repeat(117)} v1`);
    expect(chars(versionName("x".repeat(117), 1))).toBe(MAX_NAME_CHARS);
  });

  it("cuts a project name too long for the version, ending it in …, within 120 characters", () => {
    for (const length of [118, 119, 120]) {
      for (const n of [1, 9, 10, 123]) {
        const name = versionName("p".repeat(length), n);
        expect(chars(name)).toBeLessThanOrEqual(MAX_NAME_CHARS);
        expect(name.endsWith(`… v${n}`)).toBe(true);
      }
    }
    expect(versionName("p".repeat(120), 2)).toBe(`${"p".repeat(116)}… v2`);
  });

  it("counts characters as the server does (code points) and never splits one", () => {
    const project = "😀".repeat(120); // 240 UTF-16 units
    const name = versionName(project, 3);
    expect(chars(name)).toBe(MAX_NAME_CHARS);
    expect(name).toBe(`${"😀".repeat(116)}… v3`);
  });

  it("drops the spaces left at the cut", () => {
    const project = `${"a".repeat(110)}      ${"b".repeat(10)}`;
    expect(versionName(project, 1)).toBe(`${"a".repeat(110)}… v1`);
  });
});

describe("nextVersionName", () => {
  it("proposes the version after the project's models", () => {
    expect(nextVersionName("Tickets", [])).toBe("Tickets v1");
    expect(nextVersionName("Tickets", [{ name: "Tickets v1", display_name: "Tickets v1" }])).toBe("Tickets v2");
  });

  it("skips a name a model already has (one was deleted, or renamed)", () => {
    const models = [
      { name: "Tickets v2", display_name: "Tickets v2" },
      { name: "custom", display_name: "Tickets v3" },
    ];
    expect(nextVersionName("Tickets", models)).toBe("Tickets v4");
  });

  it("stays within 120 characters for a long project name", () => {
    const long = "L".repeat(120);
    const name = nextVersionName(long, [{ name: versionName(long, 1), display_name: versionName(long, 1) }]);
    expect(name).toBe(versionName(long, 2));
    expect(chars(name)).toBeLessThanOrEqual(MAX_NAME_CHARS);
  });
});
