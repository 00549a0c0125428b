import { describe, expect, it } from "vitest";
import { atLeast, effectiveRole, grantable, NEEDS, READ_ONLY, roleNote } from "./roles";

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
  it("allow no change in a read-only workspace, and say so", () => {
    const role = effectiveRole("ADMIN", true);
    expect(role).toBe(READ_ONLY);
    expect(atLeast(role, NEEDS.tag)).toBe(false);
    expect(roleNote(role, NEEDS.tag, "Tagging")).toBe("Tagging is not possible: this workspace is read-only.");
    expect(effectiveRole("USER", false)).toBe("USER");
  });
  it("offer only the roles at or below one's own", () => {
    expect(grantable("MANAGER")).toEqual(["VIEWER", "ANNOTATOR", "USER", "MANAGER"]);
    expect(grantable("ADMIN")).toContain("ADMIN");
    expect(grantable(READ_ONLY)).toEqual([]);
  });
});
