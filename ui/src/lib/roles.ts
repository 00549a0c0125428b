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

/**
 * What a role is asked for: to `change` something (stored; refused to everyone in a read-only
 * workspace, so the role is READ_ONLY there), or to `use` the workspace's models without storing
 * anything (an ad-hoc analysis of a text, the server's `Action::Use`), which a read-only
 * workspace allows its USERs and above: the role there is the member's own.
 */
export type Purpose = "change" | "use";

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
 * member). For `purpose` "use" (what stores nothing) a read-only workspace does not count: the
 * answer is ADMIN for a superuser, else the user's role there.
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
  purpose: Purpose = "change",
): string | null | undefined {
  if (!status || id == null) return null;
  const member = status.workspaces.find((w) => w.id === id);
  const superuser = status.user.is_superuser;
  const readOnly = workspace?.id === id ? workspace.is_read_only : member?.is_read_only;
  if (readOnly === undefined) return superuser ? undefined : null;
  return effectiveRole(superuser ? "ADMIN" : member?.role, purpose === "change" && readOnly);
}

/**
 * Whether `workspace` is `user`'s personal workspace, the one made with the account, which
 * its owner cannot leave (the server answers 409) nor take a lower role in: the workspace's
 * `owner_id` (the user whose personal workspace it is; null for any other) is the user's id.
 */
export function isPersonal(workspace: { owner_id?: number | null }, user: { id: number }): boolean {
  return workspace.owner_id === user.id;
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
 * Whether `member` is known to be the only ADMIN of the workspace whose members `list` shows
 * (the server answers 409 to removing it, its leaving, and a lower role for it: "a workspace
 * keeps at least one ADMIN"). Known only from a list shown whole, its first page with none
 * after it: a part of the list may leave other ADMINs out, and then it is not known.
 */
export function onlyAdmin(
  list: { offset: number; hasMore: boolean; items: ReadonlyArray<{ role: string }> },
  member: { role: string },
): boolean {
  const whole = list.offset === 0 && !list.hasMore;
  return whole && member.role === "ADMIN" && list.items.filter((m) => m.role === "ADMIN").length === 1;
}

/**
 * What the user may do to one membership of a workspace, as the server rules it.
 *
 * `roles`: the roles its select offers (its own among them; no select unless there are
 * others): those the user may give when they may manage members and its role is not above
 * their own (`mine`, READ_ONLY in a read-only workspace); none below its role for the `owner`
 * of the workspace (whose personal workspace it is), unless a superuser asks; none but ADMIN
 * for the workspace's `onlyAdmin`.
 *
 * `remove`: Remove (or, when `own`, Leave: a read-only workspace too) when the user may
 * manage it or it is their own, never for the owner (nobody leaves their own personal
 * workspace, nor is removed from it, not even by a superuser) nor for the only ADMIN.
 */
export function memberControls(
  mine: string | null | undefined,
  member: { role: string; own: boolean; owner: boolean; onlyAdmin: boolean },
  superuser: boolean,
): { roles: Role[]; changeRole: boolean; remove: boolean } {
  const manage = atLeast(mine, NEEDS.manage) && atLeast(mine, member.role as Role);
  const lower = (r: Role) => !atLeast(r, member.role as Role);
  const roles = (manage ? grantable(mine) : []).filter(
    (r) => !(member.owner && !superuser && lower(r)) && !(member.onlyAdmin && r !== "ADMIN"),
  );
  const remove = !member.owner && !member.onlyAdmin && (member.own || manage);
  return { roles, changeRole: roles.length > 1, remove };
}
