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

/** What the role of the signed-in user in a workspace is decided from, as the API serves it. */
export type Signed = {
  user: { is_superuser: boolean };
  /** The user's workspaces (`/auth/status`), each with the user's role and its own fields. */
  workspaces: ReadonlyArray<{ id: number; role: string; is_read_only: boolean }>;
};

/**
 * The role that decides what the signed-in user may change in the workspace `id`: READ_ONLY
 * when the workspace is read-only, whoever asks (the server refuses every change there, a
 * superuser's too), else ADMIN for a superuser, else the user's role there (null when not a
 * member).
 *
 * Whether it is read-only is the workspace's own field: `workspace` as `GET
 * /organizations/{id}` served it, else the user's entry for it in `/auth/status` (the same
 * fields, as they were at sign-in). A superuser also reaches workspaces they are no member of,
 * which `/auth/status` does not list: until that workspace is read the answer is undefined
 * (not known yet), never ADMIN.
 */
export function roleIn(
  status: Signed | null | undefined,
  id: number | null | undefined,
  workspace?: { id: number; is_read_only: boolean } | null,
): string | null | undefined {
  if (!status || id == null) return null;
  const member = status.workspaces.find((w) => w.id === id);
  const superuser = status.user.is_superuser;
  const readOnly = workspace?.id === id ? workspace.is_read_only : member?.is_read_only;
  if (readOnly === undefined) return superuser ? undefined : null;
  return effectiveRole(superuser ? "ADMIN" : member?.role, readOnly);
}

/**
 * Whether `workspace` is `user`'s personal workspace, the one made with the account, which
 * its owner cannot leave (the server answers 409) nor take a lower role in.
 *
 * The API serves no flag for it. The server makes an account, its personal workspace and the
 * owner's membership in one transaction with one timestamp, so that workspace alone was created
 * at the very microsecond the user was (both served as the same RFC 3339 text, compared as
 * text: a Date would keep milliseconds only). A workspace the user makes or joins later was
 * created at another moment.
 */
export function isPersonal(workspace: { created: string }, user: { created: string }): boolean {
  return workspace.created !== "" && workspace.created === user.created;
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

/**
 * What the user may do to one membership of a workspace, as the server rules: change its role
 * when they may manage members and it is not above their own (`mine`, READ_ONLY in a read-only
 * workspace); take it out likewise, or, when it is their own, leave, a read-only workspace
 * too. The owner of a personal workspace neither leaves it nor takes a lower role in it (409;
 * a superuser may lower their own).
 */
export function memberControls(
  mine: string | null | undefined,
  member: { role: string; own: boolean },
  place: { personal: boolean; superuser: boolean },
): { changeRole: boolean; remove: boolean } {
  const changeRole =
    atLeast(mine, NEEDS.manage) && atLeast(mine, member.role as Role) && !(member.own && place.personal && !place.superuser);
  return { changeRole, remove: member.own ? !place.personal : changeRole };
}
