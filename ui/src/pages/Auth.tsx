// Sign in, register, password reset and accepting an invitation: the pages without a token.
import { useState, type FormEvent, type ReactNode } from "react";
import { Link, Navigate, useNavigate, useSearchParams } from "react-router";
import { api, unwrap } from "../api/client";
import { useAuth } from "../auth";
import { useAction } from "../lib/hooks";
import { safeNext } from "../lib/links";
import { ErrorBox, InputField, PageTitle, PasswordField } from "../components/ui";

function AuthFrame({ title, children }: { title: string; children: ReactNode }) {
  return (
    <main id="main" className="narrow auth">
      <p className="brand-large">Lector</p>
      <PageTitle>{title}</PageTitle>
      {children}
    </main>
  );
}

/** The form's error, if any, and its submit button, which says `busyLabel` while the request runs. */
function Submit({ error, busy, label, busyLabel = label }: { error: Error | null; busy: boolean; label: string; busyLabel?: string }) {
  return (
    <>
      <ErrorBox error={error} />
      <button type="submit" disabled={busy}>
        {busy ? busyLabel : label}
      </button>
    </>
  );
}

/** The server's answer once the form is sent, with where to go next; until then, the form. */
function AnswerOr({ answer, next, children }: { answer: string | null; next: ReactNode; children: ReactNode }) {
  if (!answer) return children;
  return (
    <div className="notice" role="status">
      <p>{answer}</p>
      <p>{next}</p>
    </div>
  );
}

/** A form's values, and for each field the change handler of its input. */
function useForm<T extends Record<string, string>>(initial: T) {
  const [form, setForm] = useState(initial);
  const set = (k: keyof T) => (e: { target: { value: string } }) => setForm({ ...form, [k]: e.target.value });
  return [form, set] as const;
}

type Setter<K extends string> = (k: K) => (e: { target: { value: string } }) => void;

/** The names of a new account's owner, asked at registration and when accepting an invitation. */
function NameFields({ form, set }: { form: { first_name: string; last_name: string }; set: Setter<"first_name" | "last_name"> }) {
  return (
    <>
      <InputField label="First name" autoComplete="given-name" value={form.first_name} onChange={set("first_name")} />
      <InputField label="Last name" autoComplete="family-name" value={form.last_name} onChange={set("last_name")} />
    </>
  );
}

/** Where to go after signing in: the `next` path when it is one of the app's. */
function useNext(): string {
  const [params] = useSearchParams();
  return safeNext(params.get("next"));
}

export function Login() {
  const { token, signIn, expired } = useAuth();
  const navigate = useNavigate();
  const next = useNext();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const { busy, error, run } = useAction();
  if (token) return <Navigate to={next} replace />;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const answer = await unwrap(api.POST("/auth/login", { body: { email, password } }));
      await signIn(answer.auth_token);
      navigate(next, { replace: true });
    });
  };
  return (
    <AuthFrame title="Sign in">
      {expired && <p className="notice">Your session ended; sign in again.</p>}
      <form onSubmit={submit} className="stack">
        <InputField label="E-mail" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} />
        <PasswordField label="Password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} />
        <Submit error={error} busy={busy} label="Sign in" busyLabel="Signing in…" />
      </form>
      <p className="links">
        <Link to="/register">Create an account</Link> · <Link to="/forgot-password">Forgot your password?</Link> ·{" "}
        <Link to="/accept-invitation">Accept an invitation</Link>
      </p>
    </AuthFrame>
  );
}

export function Register() {
  const { token, signIn } = useAuth();
  const navigate = useNavigate();
  const [form, set] = useForm({ email: "", password: "", first_name: "", last_name: "" });
  const { busy, error, run } = useAction();
  if (token) return <Navigate to="/" replace />;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const answer = await unwrap(api.POST("/auth/register", { body: form }));
      await signIn(answer.auth_token);
      navigate("/", { replace: true });
    });
  };
  return (
    <AuthFrame title="Create an account">
      <form onSubmit={submit} className="stack">
        <NameFields form={form} set={set} />
        <InputField label="E-mail" type="email" autoComplete="email" required value={form.email} onChange={set("email")} />
        <PasswordField label="Password" hint="At least 8 characters." autoComplete="new-password" value={form.password} onChange={set("password")} />
        <Submit error={error} busy={busy} label="Create account" busyLabel="Creating…" />
      </form>
      <p className="links">
        Have an account? <Link to="/login">Sign in</Link>
      </p>
    </AuthFrame>
  );
}

export function ForgotPassword() {
  const [email, setEmail] = useState("");
  const [sent, setSent] = useState<string | null>(null);
  const { busy, error, run } = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const answer = await unwrap(api.POST("/password/email", { body: { email } }));
      setSent(answer.message);
    });
  };
  return (
    <AuthFrame title="Reset your password">
      <AnswerOr
        answer={sent}
        next={
          <>
            The mail holds a token. <Link to="/reset-password">Set a new password with it</Link>.
          </>
        }
      >
        <form onSubmit={submit} className="stack">
          <InputField
            label="E-mail"
            hint="We send a one-time token to this address if it has an account."
            type="email"
            autoComplete="email"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
          <Submit error={error} busy={busy} label="Send reset mail" />
        </form>
      </AnswerOr>
      <p className="links">
        <Link to="/reset-password">I have a token</Link> · <Link to="/login">Back to sign in</Link>
      </p>
    </AuthFrame>
  );
}

export function ResetPassword() {
  const [params] = useSearchParams();
  const [token, setToken] = useState(params.get("token") ?? "");
  const [password, setPassword] = useState("");
  const [done, setDone] = useState<string | null>(null);
  const { busy, error, run } = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const answer = await unwrap(api.POST("/password/reset", { body: { reset_password_token: token.trim(), password } }));
      setDone(answer.message);
    });
  };
  return (
    <AuthFrame title="Set a new password">
      <AnswerOr answer={done} next={<Link to="/login">Sign in with the new password</Link>}>
        <form onSubmit={submit} className="stack">
          <InputField label="Token from the mail" required autoComplete="one-time-code" value={token} onChange={(e) => setToken(e.target.value)} />
          <PasswordField label="New password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} />
          <Submit error={error} busy={busy} label="Set password" />
        </form>
      </AnswerOr>
      <p className="links">
        <Link to="/login">Back to sign in</Link>
      </p>
    </AuthFrame>
  );
}

export function AcceptInvitation() {
  const { signIn } = useAuth();
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [form, set] = useForm({ token: params.get("token") ?? "", password: "", first_name: "", last_name: "" });
  const { busy, error, run } = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void run(async () => {
      const answer = await unwrap(api.POST("/organizations/users/invite/accept", { body: { ...form, token: form.token.trim() } }));
      await signIn(answer.auth_token);
      navigate("/", { replace: true });
    });
  };
  return (
    <AuthFrame title="Accept an invitation">
      <p>Paste the token from the invitation mail. If you already have an account, give its password.</p>
      <form onSubmit={submit} className="stack">
        <InputField label="Invitation token" required autoComplete="one-time-code" value={form.token} onChange={set("token")} />
        <NameFields form={form} set={set} />
        <PasswordField label="Password" autoComplete="new-password" value={form.password} onChange={set("password")} />
        <Submit error={error} busy={busy} label="Join the workspace" />
      </form>
      <p className="links">
        <Link to="/login">Back to sign in</Link>
      </p>
    </AuthFrame>
  );
}
