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

/** Whether `role` (as `/auth/status` names it; unknown or none: no rights) is `need` or higher. */
export function atLeast(role: string | null | undefined, need: Role): boolean {
  const have = ROLES.indexOf((role ?? "").toUpperCase() as Role);
  return have >= 0 && have >= ROLES.indexOf(need);
}

/** Why a control is absent, as the server would refuse it; null when the role may use it. */
export function roleNote(role: string | null | undefined, need: Role, what: string): string | null {
  if (atLeast(role, need)) return null;
  const yours = role ? `you are ${role.toLowerCase()}` : "you are not a member";
  return `${what} needs the role ${need.toLowerCase()} or higher in this workspace; ${yours}.`;
}
