import { describe, expect, it } from "vitest";
import { atLeast, NEEDS, roleNote } from "./roles";

describe("roles", () => {
  it("allow each role what the ones below it may do", () => {
    expect(atLeast("ADMIN", NEEDS.manage)).toBe(true);
    expect(atLeast("MANAGER", NEEDS.manage)).toBe(true);
    expect(atLeast("USER", NEEDS.manage)).toBe(false);
    expect(atLeast("USER", NEEDS.work)).toBe(true);
    expect(atLeast("ANNOTATOR", NEEDS.work)).toBe(false);
    expect(atLeast("ANNOTATOR", NEEDS.tag)).toBe(true);
    expect(atLeast("VIEWER", NEEDS.tag)).toBe(false);
  });
  it("give no rights to an unknown role or none", () => {
    expect(atLeast(undefined, NEEDS.tag)).toBe(false);
    expect(atLeast("OWNER", NEEDS.tag)).toBe(false);
  });
  it("say why a control is absent", () => {
    expect(roleNote("ANNOTATOR", NEEDS.work, "Training a model")).toBe(
      "Training a model needs the role user or higher in this workspace; you are annotator.",
    );
    expect(roleNote("MANAGER", NEEDS.work, "Training a model")).toBeNull();
  });
});
