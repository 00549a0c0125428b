// The current workspace: members with roles, pending invitations, inviting, and new workspaces.
import { useState, type FormEvent } from "react";
import { api, unwrap, type Schemas } from "../api/client";
import { useAuth, useRole } from "../auth";
import { when } from "../lib/format";
import { useAction, useLoad, useOffset } from "../lib/hooks";
import { arrayPage } from "../lib/paging";
import { atLeast, grantable, isPersonal, memberControls, NEEDS, onlyAdmin, READ_ONLY } from "../lib/roles";
import { Empty, ErrorBox, Field, Loading, PageTitle, Pager, Table } from "../components/ui";

/** Members a page shows (the list's default limit), oldest membership first. */
const MEMBERS_PAGE = 100;

export function WorkspacePage() {
  const { workspace, refresh, chooseWorkspace, status } = useAuth();
  const name = workspace?.name ?? "";
  const org = { params: { path: { organization: name } } };
  const [memberOffset, setMemberOffset] = useOffset(name);
  const members = useLoad(
    () =>
      arrayPage(
        (offset, limit) => unwrap(api.GET("/organizations/{organization}/permissions", { params: { path: { organization: name }, query: { offset, limit } } })),
        memberOffset,
        MEMBERS_PAGE,
      ),
    [name, memberOffset],
  );
  // Invitations are a manager's business: the others are not shown them (the server refuses).
  const canManage = atLeast(status?.user.is_superuser ? "ADMIN" : workspace?.role, NEEDS.manage);
  // What the user may change: nothing in a read-only workspace (as the workspace itself says),
  // and no role above their own (given, or of a member whose role they change or who they
  // remove), as the server rules; nor what it refuses of the owner of a personal workspace
  // (`owner_id`) and of the only ADMIN (known when the list is shown whole).
  const mine = useRole(workspace?.id);
  const readOnly = mine === READ_ONLY;
  const canChange = atLeast(mine, NEEDS.manage);
  const offered = grantable(mine);
  const personal = !!workspace && !!status && isPersonal(workspace, status.user);
  const own = (m: Schemas["MembershipDto"]) => m.user_id === status?.user.id;
  const last = (m: Schemas["MembershipDto"]) => !!members.data && onlyAdmin(members.data, m);
  const controls = (m: Schemas["MembershipDto"]) =>
    memberControls(
      mine,
      { role: m.role, own: own(m), owner: m.user_id === workspace?.owner_id, onlyAdmin: last(m) },
      !!status?.user.is_superuser,
    );
  const lastAdmin = !personal && !!members.data?.items.some((m) => own(m) && last(m));
  const invites = useLoad(
    () => (canManage ? unwrap(api.GET("/organizations/{organization}/users/invites", org)) : Promise.resolve([])),
    [name, canManage],
  );
  const action = useAction();
  const [emails, setEmails] = useState("");
  const [role, setRole] = useState("ANNOTATOR");
  const [notInvited, setNotInvited] = useState<Schemas["NotInvited"][]>([]);
  const [newName, setNewName] = useState("");
  const [newDescription, setNewDescription] = useState("");

  if (!workspace) return <Empty>You have no workspace yet.</Empty>;

  const invite = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      const list = emails
        .split(/[\s,;]+/)
        .map((s) => s.trim())
        .filter(Boolean);
      const answer = await unwrap(api.POST("/organizations/{organization}/users/invite", { ...org, body: { emails: list, role } }));
      setNotInvited(answer.not_invited);
      setEmails("");
      invites.reload();
    });
  };
  /** Sends one change, then reloads the list it changed (and, when it was the user's own
   * membership, what the whole app knows of the user's roles). */
  const change = (request: () => Promise<unknown>, list: { reload: () => void }, own = false) =>
    void action.run(async () => {
      await request();
      list.reload();
      if (own) await refresh();
    });
  const membership = (m: Schemas["MembershipDto"]) => ({ params: { path: { organization: name, permission_id: m.id } } });
  const invitation = (i: Schemas["InvitationDto"]) => ({ params: { path: { organization: name, invitation_id: i.id } } });
  const changeRole = (m: Schemas["MembershipDto"], newRole: string) =>
    change(
      () => unwrap(api.PUT("/organizations/{organization}/permissions/{permission_id}", { ...membership(m), body: { role: newRole } })),
      members,
      own(m),
    );
  const remove = (m: Schemas["MembershipDto"]) => {
    if (!window.confirm(own(m) ? `Leave ${name}?` : `Remove ${m.user} from ${name}?`)) return;
    change(() => unwrap(api.DELETE("/organizations/{organization}/permissions/{permission_id}", membership(m))), members, own(m));
  };
  const cancel = (i: Schemas["InvitationDto"]) =>
    change(() => unwrap(api.DELETE("/organizations/{organization}/invitation/{invitation_id}", invitation(i))), invites);
  const resend = (i: Schemas["InvitationDto"]) =>
    change(() => unwrap(api.POST("/organizations/{organization}/invitation/{invitation_id}/resend", invitation(i))), invites);
  const makeDefault = () =>
    void action.run(async () => {
      await unwrap(api.POST("/organizations/{organization}/default", { ...org, body: { default: true } }));
      await refresh();
    });
  const create = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      const w = await unwrap(api.POST("/organizations", { body: { name: newName, description: newDescription } }));
      setNewName("");
      setNewDescription("");
      await refresh();
      chooseWorkspace(w.id);
    });
  };

  return (
    <>
      <PageTitle
        actions={
          !workspace.is_default && (
            <button type="button" className="secondary" onClick={makeDefault}>
              Make default
            </button>
          )
        }
      >
        {`Workspace ${name}`}
      </PageTitle>
      <p className="muted">
        {workspace.description || "No description."} You are {workspace.role.toLowerCase()}
        {workspace.is_default ? "; this is your default workspace." : "."}
        {personal && " It is your personal workspace, which you cannot leave."}
        {lastAdmin && " You are its only admin: make another member admin before you leave it."}
      </p>
      {readOnly && (
        <p className="notice">This workspace is read-only: its projects, members and invitations cannot be changed.</p>
      )}
      <ErrorBox error={action.error} />

      <section aria-labelledby="members-h">
        <h2 id="members-h">Members</h2>
        <ErrorBox error={members.error} onRetry={members.reload} />
        {members.loading && !members.data && <Loading />}
        {members.data && (
          <Table head={["Member", "Role", "Since", "Actions"]} label="Members">
            {members.data.items.map((m) => (
              <tr key={m.id}>
                <td>{m.user}</td>
                <td>
                  {controls(m).changeRole ? (
                    <select
                      aria-label={`Role of ${m.user}`}
                      value={m.role}
                      onChange={(e) => changeRole(m, e.target.value)}
                    >
                      {controls(m).roles.map((r) => (
                        <option key={r}>{r}</option>
                      ))}
                    </select>
                  ) : (
                    m.role
                  )}
                </td>
                <td>{when(m.created)}</td>
                <td>
                  {controls(m).remove && (
                    <button type="button" className="link danger" onClick={() => remove(m)}>
                      {own(m) ? "Leave" : "Remove"}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </Table>
        )}
        {members.data && <Pager page={members.data} size={MEMBERS_PAGE} what="Members" onChange={setMemberOffset} />}
      </section>

      {canManage && (
        <section aria-labelledby="invites-h">
          <h2 id="invites-h">Invitations</h2>
          <ErrorBox error={invites.error} onRetry={invites.reload} />
          {invites.data && invites.data.length === 0 && <Empty>No pending invitations.</Empty>}
          {invites.data && invites.data.length > 0 && (
            <Table head={["E-mail", "Role", "Expires", "Actions"]} label="Pending invitations">
              {invites.data.map((i) => (
                <tr key={i.id}>
                  <td>{i.email}</td>
                  <td>{i.role}</td>
                  <td>{when(i.expires)}</td>
                  <td className="row-actions">
                    {canChange && (
                      <>
                        <button type="button" className="link" onClick={() => resend(i)}>
                          Resend
                        </button>
                        <button type="button" className="link danger" onClick={() => cancel(i)}>
                          Cancel
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </Table>
          )}
          {canChange && (
          <form onSubmit={invite} className="inline-form">
            <Field label="E-mail addresses" hint="Separate several with commas or spaces.">
              {(id, hint) => (
                <input id={id} required aria-describedby={hint} value={emails} onChange={(e) => setEmails(e.target.value)} />
              )}
            </Field>
            <Field label="Role">
              {(id) => (
                <select id={id} value={role} onChange={(e) => setRole(e.target.value)}>
                  {offered.map((r) => (
                    <option key={r}>{r}</option>
                  ))}
                </select>
              )}
            </Field>
            <button type="submit" disabled={action.busy}>
              Invite
            </button>
          </form>
          )}
          {notInvited.length > 0 && (
            <ul className="error-list" aria-label="Not invited">
              {notInvited.map((n) => (
                <li key={n.email}>
                  {n.email}: {n.reason}
                </li>
              ))}
            </ul>
          )}
        </section>
      )}

      <section aria-labelledby="new-ws-h">
        <h2 id="new-ws-h">New workspace</h2>
        <form onSubmit={create} className="inline-form">
          <Field label="Name">
            {(id) => <input id={id} required value={newName} onChange={(e) => setNewName(e.target.value)} />}
          </Field>
          <Field label="Description">
            {(id) => <input id={id} value={newDescription} onChange={(e) => setNewDescription(e.target.value)} />}
          </Field>
          <button type="submit" disabled={action.busy}>
            Create workspace
          </button>
        </form>
      </section>
    </>
  );
}
