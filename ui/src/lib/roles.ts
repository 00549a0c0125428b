// What a workspace role may do (the server's policy: each refusal names the role it needs), so
// that pages offer only the controls the user's role can use and say why the others are absent.

/** The workspace roles, each allowed what the ones before it are. */
export const ROLES = ["VIEWER", "ANNOTATOR", "USER", "MANAGER", "ADMIN"] as const;
export type Role = (typeof ROLES)[number];

/** The role each kind of change needs. */
export const NEEDS = {
  /** Tag segments, mark them annotated, correct suggestions, submit reviews. */
  tag: "ANNOTATOR",
  /** Import documents, start sessions and analyses, extract, train models. */
  work: "USER",
  /** Create, change, clone and delete projects; classes and labels; review configurations; delete models; invite. */
  manage: "MANAGER",
} as const satisfies Record<string, Role>;

/**
 * What `useRole` answers for a read-only workspace, whatever the user's role there: the server
 * refuses every change in it (403 workspace_read_only), a superuser's too.
 */
export const READ_ONLY = "READ_ONLY";

/** The role that decides what a user may change in a workspace: READ_ONLY when it is read-only. */
export function effectiveRole(role: string | null | undefined, isReadOnly: boolean | null | undefined): string | null {
  if (isReadOnly) return READ_ONLY;
  return role ?? null;
}

/** Whether `role` (as `/auth/status` names it; unknown or none: no rights) is `need` or higher. */
export function atLeast(role: string | null | undefined, need: Role): boolean {
  const have = ROLES.indexOf((role ?? "").toUpperCase() as Role);
  return have >= 0 && have >= ROLES.indexOf(need);
}

/** Why a control is absent, as the server would refuse it; null when the role may use it. */
export function roleNote(role: string | null | undefined, need: Role, what: string): string | null {
  if (role === READ_ONLY) return `${what} is not possible: this workspace is read-only.`;
  if (atLeast(role, need)) return null;
  const yours = role ? `you are ${role.toLowerCase()}` : "you are not a member";
  return `${what} needs the role ${need.toLowerCase()} or higher in this workspace; ${yours}.`;
}

/** The roles a user of `role` may give or take (the server's rule: none above one's own). */
export function grantable(role: string | null | undefined): Role[] {
  return ROLES.filter((r) => atLeast(role, r));
}
