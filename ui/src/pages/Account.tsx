// The signed-in user's own account: name, password and product keys (API tokens for programs).
import { useId, useRef, useState, type FormEvent } from "react";
import { api, unwrap, type Schemas } from "../api/client";
import { useAuth } from "../auth";
import { when } from "../lib/format";
import { useAction, useLoad } from "../lib/hooks";
import { Empty, ErrorBox, InputField, Loading, PageTitle, PasswordField, Table } from "../components/ui";

type User = Schemas["UserDto"];
type ProductKey = Schemas["ProductKeyDto"];

export function AccountPage() {
  const { status } = useAuth();
  // RequireAuth shows no page before the status is in.
  const user = status!.user;
  return (
    <>
      <PageTitle>Your account</PageTitle>
      <NameForm user={user} />
      <PasswordForm user={user} />
      <ProductKeys userId={user.id} />
    </>
  );
}

/** A line saying an action went through, read out by screen readers. */
function Done({ children }: { children: string | null }) {
  return (
    <p className="notice" role="status" hidden={!children}>
      {children}
    </p>
  );
}

function NameForm({ user }: { user: User }) {
  const { refresh } = useAuth();
  const [first, setFirst] = useState(user.first_name);
  const [last, setLast] = useState(user.last_name);
  const [saved, setSaved] = useState<string | null>(null);
  const action = useAction();
  const save = (e: FormEvent) => {
    e.preventDefault();
    setSaved(null);
    void action.run(async () => {
      const path = { params: { path: { user_id: user.id } } };
      await unwrap(api.PUT("/users/{user_id}", { ...path, body: { first_name: first.trim(), last_name: last.trim() } }));
      await refresh();
      setSaved("Name saved.");
    });
  };
  return (
    <section className="panel" aria-labelledby="name-h">
      <h2 id="name-h">Name</h2>
      <p>
        E-mail: <strong dir="auto">{user.email}</strong>
      </p>
      <form onSubmit={save} className="inline-form">
        <InputField label="First name" dir="auto" autoComplete="given-name" value={first} onChange={(e) => setFirst(e.target.value)} />
        <InputField label="Last name" dir="auto" autoComplete="family-name" value={last} onChange={(e) => setLast(e.target.value)} />
        <button type="submit" disabled={action.busy}>
          Save name
        </button>
      </form>
      <ErrorBox error={action.error} />
      <Done>{saved}</Done>
    </section>
  );
}

/**
 * A new password, sent with the present one (the API asks for it). The change revokes every
 * earlier token, this page's too: it signs in again with the new password at once.
 */
function PasswordForm({ user }: { user: User }) {
  const { signIn } = useAuth();
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [repeated, setRepeated] = useState("");
  const [changed, setChanged] = useState<string | null>(null);
  const action = useAction();
  const mismatchId = useId();
  const mismatch = repeated !== "" && next !== repeated;
  const change = (e: FormEvent) => {
    e.preventDefault();
    setChanged(null);
    if (next !== repeated) return;
    void action.run(async () => {
      const path = { params: { path: { user_id: user.id } } };
      await unwrap(api.PUT("/users/{user_id}", { ...path, body: { password: next, current_password: current } }));
      try {
        const answer = await unwrap(api.POST("/auth/login", { body: { email: user.email, password: next } }));
        await signIn(answer.auth_token);
      } catch (e) {
        // The password did change, and the old token is refused from now on: say so (the next
        // request the app makes signs out).
        setCurrent("");
        setNext("");
        setRepeated("");
        const reason = e instanceof Error ? e.message : "no answer";
        throw new Error(`Your password was changed, but signing in with it failed (${reason}). Sign out, then sign in with the new password.`);
      }
      setCurrent("");
      setNext("");
      setRepeated("");
      setChanged("Password changed. Your other sessions were signed out; product keys stay valid.");
    });
  };
  return (
    <section className="panel" aria-labelledby="password-h">
      <h2 id="password-h">Password</h2>
      <form onSubmit={change} className="stack narrow-form">
        <PasswordField label="Current password" autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.target.value)} />
        <PasswordField
          label="New password"
          hint="At least 8 characters."
          autoComplete="new-password"
          value={next}
          onChange={(e) => setNext(e.target.value)}
        />
        <PasswordField
          label="Repeat the new password"
          autoComplete="new-password"
          aria-invalid={mismatch}
          aria-describedby={mismatch ? mismatchId : undefined}
          value={repeated}
          onChange={(e) => setRepeated(e.target.value)}
        />
        {mismatch && (
          <p className="error-list" id={mismatchId}>
            The two new passwords differ.
          </p>
        )}
        <ErrorBox error={action.error} />
        <Done>{changed}</Done>
        <button type="submit" disabled={action.busy || mismatch}>
          Change password
        </button>
      </form>
    </section>
  );
}

/**
 * The user's product keys: long-lived tokens a program sends as `Authorization: Bearer …`.
 * The list names them; a key's token is shown once, when it is created.
 */
function ProductKeys({ userId }: { userId: number }) {
  const path = { params: { path: { user_id: userId } } };
  const keys = useLoad(() => unwrap(api.GET("/users/{user_id}/keys", path)), [userId]);
  const [name, setName] = useState("");
  const [created, setCreated] = useState<ProductKey | null>(null);
  const action = useAction();
  const create = (e: FormEvent) => {
    e.preventDefault();
    setCreated(null);
    void action.run(async () => {
      const key = await unwrap(api.POST("/users/{user_id}/keys", { ...path, body: { name: name.trim() || null } }));
      setCreated(key);
      setName("");
      keys.reload();
    });
  };
  const remove = (key: ProductKey) => {
    if (!window.confirm(`Delete the product key ${key.name}? Programs that use it are refused from then on.`)) return;
    void action.run(async () => {
      const path = { params: { path: { user_id: userId, key_id: key.id } } };
      keys.setData(await unwrap(api.DELETE("/users/{user_id}/keys/{key_id}", path)));
      if (created?.id === key.id) setCreated(null);
    });
  };
  return (
    <section className="panel" aria-labelledby="keys-h">
      <h2 id="keys-h">Product keys</h2>
      <p className="muted">
        A product key lets a program use the API as you, without your password: it sends the key as <code>Authorization: Bearer …</code>. A key
        stays valid when your password changes, until you delete it.
      </p>
      <ErrorBox error={keys.error} onRetry={keys.reload} />
      {keys.loading && !keys.data && <Loading />}
      {keys.data && keys.data.length === 0 && <Empty>No product keys yet.</Empty>}
      {keys.data && keys.data.length > 0 && (
        <Table head={["Name", "Created", "Actions"]} caption="Your product keys">
          {keys.data.map((k) => (
            <tr key={k.id}>
              <td dir="auto">{k.name}</td>
              <td>{when(k.created)}</td>
              <td className="row-actions">
                <button type="button" className="link danger" disabled={action.busy} onClick={() => remove(k)}>
                  Delete<span className="sr-only"> {k.name}</span>
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      {created && <NewKey productKey={created} onDone={() => setCreated(null)} />}
      <form onSubmit={create} className="inline-form">
        <InputField label="Key name" hint="Optional: what uses it." dir="auto" value={name} onChange={(e) => setName(e.target.value)} />
        <button type="submit" disabled={action.busy}>
          Create a product key
        </button>
      </form>
      <ErrorBox error={action.error} />
    </section>
  );
}

/** A key just created: its whole token, shown this once, and a way to copy it. */
function NewKey({ productKey, onDone }: { productKey: ProductKey; onDone: () => void }) {
  const token = useRef<HTMLElement>(null);
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(productKey.token);
      setCopied("Copied.");
    } catch {
      // The browser may refuse the clipboard (no permission, page not focused): select the
      // token instead, for the keyboard's copy.
      if (token.current) window.getSelection()?.selectAllChildren(token.current);
      setCopied("The browser refused to copy: the key is selected, copy it with Ctrl+C.");
    }
  };
  return (
    <div className="new-key" role="region" aria-labelledby="new-key-h">
      <h3 id="new-key-h">
        New key <span dir="auto">{productKey.name}</span>
      </h3>
      <p>Copy the key now: it will not be shown again.</p>
      <p className="secret">
        <code ref={token}>{productKey.token}</code>
      </p>
      <div className="row">
        <button type="button" onClick={() => void copy()}>
          Copy the key
        </button>
        <button type="button" className="secondary" onClick={onDone}>
          Done
        </button>
        <span role="status">{copied}</span>
      </div>
    </div>
  );
}
