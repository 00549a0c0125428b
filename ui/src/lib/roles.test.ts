import { describe, expect, it } from "vitest";
import { atLeast, effectiveRole, grantable, isPersonal, memberControls, NEEDS, onlyAdmin, READ_ONLY, roleIn, roleNote } from "./roles";

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
  it("allow what stores nothing in a read-only workspace to its users and above", () => {
    const archive = { id: 9, is_read_only: true };
    const as = (role: string) => ({ user: { is_superuser: false }, workspaces: [{ id: 9, role, is_read_only: true }] });
    const adHoc = "Analysing with this workspace's models";
    // An ad-hoc analysis (the server's Action::Use): a USER and above, read-only or not.
    for (const role of ["USER", "MANAGER", "ADMIN"]) {
      expect(roleIn(as(role), 9, archive, "use")).toBe(role);
      expect(roleNote(roleIn(as(role), 9, archive, "use"), NEEDS.work, adHoc)).toBeNull();
      // What stores its results (an analysis of a file) stays refused.
      expect(roleIn(as(role), 9, archive)).toBe(READ_ONLY);
      expect(roleNote(roleIn(as(role), 9, archive, "change"), NEEDS.work, "Analysing a file")).toBe(
        "Analysing a file is not possible: this workspace is read-only.",
      );
    }
    expect(roleNote(roleIn(as("ANNOTATOR"), 9, archive, "use"), NEEDS.work, adHoc)).toBe(
      `${adHoc} needs the role user or higher in this workspace; you are annotator.`,
    );
    expect(roleNote(roleIn(as("VIEWER"), 9, archive, "use"), NEEDS.work, adHoc)).not.toBeNull();
    // A superuser acts as ADMIN; a stranger has no rights; not known before the workspace is read.
    const superuser = { user: { is_superuser: true }, workspaces: [] };
    expect(roleIn(superuser, 9, archive, "use")).toBe("ADMIN");
    expect(roleIn(superuser, 9, undefined, "use")).toBeUndefined();
    expect(roleIn(as("USER"), 7, { id: 7, is_read_only: true }, "use")).toBeNull();
    // A writable workspace: the same role for both.
    const open = { id: 9, is_read_only: false };
    expect(roleIn(as("USER"), 9, open, "use")).toBe("USER");
    expect(roleIn(as("USER"), 9, open, "change")).toBe("USER");
  });
  it("know one's personal workspace by the owner the server names", () => {
    const user = { id: 7 };
    expect(isPersonal({ owner_id: 7 }, user)).toBe(true);
    // Someone else's personal workspace, and a workspace made or joined later (no owner).
    expect(isPersonal({ owner_id: 8 }, user)).toBe(false);
    expect(isPersonal({ owner_id: null }, user)).toBe(false);
    expect(isPersonal({}, user)).toBe(false);
  });
  it("know the only ADMIN from a members list shown whole", () => {
    const admin = { role: "ADMIN" };
    const whole = { offset: 0, hasMore: false, items: [admin, { role: "USER" }] };
    expect(onlyAdmin(whole, admin)).toBe(true);
    expect(onlyAdmin(whole, { role: "USER" })).toBe(false);
    expect(onlyAdmin({ ...whole, items: [admin, { role: "ADMIN" }] }, admin)).toBe(false);
    // A page of a longer list may leave other ADMINs out: not known, so not hidden.
    expect(onlyAdmin({ ...whole, hasMore: true }, admin)).toBe(false);
    expect(onlyAdmin({ ...whole, offset: 100 }, admin)).toBe(false);
  });
  it("offer Leave, Remove and roles only where the server allows them", () => {
    const member = { role: "ADMIN", own: false, owner: false, onlyAdmin: false };
    const all = ["VIEWER", "ANNOTATOR", "USER", "MANAGER", "ADMIN"];
    // One's own membership: Leave and any role, but not in one's personal workspace...
    expect(memberControls("ADMIN", { ...member, own: true }, false)).toEqual({ roles: all, changeRole: true, remove: true });
    expect(memberControls("ADMIN", { ...member, own: true, owner: true }, false)).toEqual({ roles: ["ADMIN"], changeRole: false, remove: false });
    // ...where a superuser may take a lower role, but not leave.
    expect(memberControls("ADMIN", { ...member, own: true, owner: true }, true)).toEqual({ roles: all, changeRole: true, remove: false });
    // Nor as its only ADMIN (no lower role either), whoever asks.
    expect(memberControls("ADMIN", { ...member, own: true, onlyAdmin: true }, false)).toEqual({ roles: ["ADMIN"], changeRole: false, remove: false });
    expect(memberControls("ADMIN", { ...member, onlyAdmin: true }, true)).toEqual({ roles: ["ADMIN"], changeRole: false, remove: false });
    // Leaving a read-only workspace, or one joined as a viewer, is allowed.
    expect(memberControls(READ_ONLY, { ...member, role: "VIEWER", own: true }, false)).toEqual({ roles: [], changeRole: false, remove: true });
    // Others: a manager up to their own role, nobody in a read-only workspace.
    expect(memberControls("MANAGER", { ...member, role: "ANNOTATOR" }, false)).toEqual({ roles: all.slice(0, 4), changeRole: true, remove: true });
    expect(memberControls("MANAGER", member, false)).toEqual({ roles: [], changeRole: false, remove: false });
    expect(memberControls(READ_ONLY, { ...member, role: "VIEWER" }, false)).toEqual({ roles: [], changeRole: false, remove: false });
    // The owner of someone else's personal workspace: never removed; a higher role only,
    // unless a superuser gives it.
    const owner = { ...member, role: "USER", owner: true };
    expect(memberControls("MANAGER", owner, false)).toEqual({ roles: ["USER", "MANAGER"], changeRole: true, remove: false });
    expect(memberControls("ADMIN", { ...owner, role: "ADMIN" }, false)).toEqual({ roles: ["ADMIN"], changeRole: false, remove: false });
    expect(memberControls("ADMIN", { ...owner, role: "ADMIN" }, true)).toEqual({ roles: all, changeRole: true, remove: false });
  });
});
