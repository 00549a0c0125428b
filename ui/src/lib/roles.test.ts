import { describe, expect, it } from "vitest";
import { atLeast, effectiveRole, grantable, isPersonal, memberControls, NEEDS, READ_ONLY, roleIn, roleNote } from "./roles";

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
  it("take read-only from the workspace itself, for a superuser who is no member too", () => {
    const archive = { id: 9, is_read_only: true };
    const superuser = { user: { is_superuser: true }, workspaces: [{ id: 1, role: "ADMIN", is_read_only: false }] };
    // Not a member: not known before the workspace is read, never ADMIN meanwhile.
    expect(roleIn(superuser, 9)).toBeUndefined();
    expect(roleIn(superuser, 9, archive)).toBe(READ_ONLY);
    expect(roleNote(roleIn(superuser, 9, archive), NEEDS.manage, "Cloning")).toBe("Cloning is not possible: this workspace is read-only.");
    expect(roleIn(superuser, 9, { ...archive, is_read_only: false })).toBe("ADMIN");
    // Another workspace's answer (still held while the next one loads) does not count.
    expect(roleIn(superuser, 9, { id: 1, is_read_only: false })).toBeUndefined();
    // A member: the entry of /auth/status until the workspace is read, then the workspace.
    const member = { user: { is_superuser: false }, workspaces: [{ id: 9, role: "MANAGER", is_read_only: false }] };
    expect(roleIn(member, 9)).toBe("MANAGER");
    expect(roleIn(member, 9, archive)).toBe(READ_ONLY);
    expect(roleIn({ ...superuser, workspaces: member.workspaces }, 9, archive)).toBe(READ_ONLY);
    // No rights without a membership, nor signed out.
    expect(roleIn(member, 7)).toBeNull();
    expect(roleIn(member, 7, { id: 7, is_read_only: false })).toBeNull();
    expect(roleIn(null, 9, archive)).toBeNull();
  });
  it("know one's personal workspace by its being created with the account", () => {
    const user = { created: "2025-03-01T10:00:00.123456Z" };
    expect(isPersonal({ created: "2025-03-01T10:00:00.123456Z" }, user)).toBe(true);
    // Made a microsecond later (another workspace of the user's), or before (one joined).
    expect(isPersonal({ created: "2025-03-01T10:00:00.123457Z" }, user)).toBe(false);
    expect(isPersonal({ created: "2024-12-24T08:00:00Z" }, user)).toBe(false);
    expect(isPersonal({ created: "" }, { created: "" })).toBe(false);
  });
  it("offer Leave anywhere but in one's personal workspace", () => {
    const mine = { role: "ADMIN", own: true };
    const elsewhere = { personal: false, superuser: false };
    const personal = { personal: true, superuser: false };
    expect(memberControls("ADMIN", mine, elsewhere)).toEqual({ changeRole: true, remove: true });
    expect(memberControls("ADMIN", mine, personal)).toEqual({ changeRole: false, remove: false });
    expect(memberControls("ADMIN", mine, { personal: true, superuser: true })).toEqual({ changeRole: true, remove: false });
    // Leaving a read-only workspace, or one joined as a viewer, is allowed.
    expect(memberControls(READ_ONLY, { role: "VIEWER", own: true }, elsewhere)).toEqual({ changeRole: false, remove: true });
    // Others: a manager up to their own role, nobody in a read-only workspace.
    expect(memberControls("MANAGER", { role: "ANNOTATOR", own: false }, personal)).toEqual({ changeRole: true, remove: true });
    expect(memberControls("MANAGER", { role: "ADMIN", own: false }, elsewhere)).toEqual({ changeRole: false, remove: false });
    expect(memberControls(READ_ONLY, { role: "VIEWER", own: false }, elsewhere)).toEqual({ changeRole: false, remove: false });
  });
});
