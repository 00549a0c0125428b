import { useEffect, useRef, useState } from "react";
import { Link, NavLink, Navigate, Outlet, useLocation, useNavigate, useParams } from "react-router";
import { api, unwrap, type Schemas } from "../api/client";
import { useAuth } from "../auth";
import { displayName, when } from "../lib/format";
import { idsValid } from "../lib/links";
import { NotFound } from "../pages/NotFound";
import { ErrorBox, Loading } from "./ui";

/** Pages that need a signed-in user; others are sent to sign in and come back. */
export function RequireAuth() {
  const { token, status, error, signOut, refresh } = useAuth();
  const location = useLocation();
  if (!token) {
    const next = location.pathname + location.search;
    return <Navigate to={`/login?next=${encodeURIComponent(next)}`} replace />;
  }
  if (!status) {
    return (
      <main className="narrow" id="main">
        {error ? (
          <>
            <ErrorBox error={error} onRetry={() => void refresh()} />
            <button type="button" className="secondary" onClick={() => void signOut()}>
              Sign out
            </button>
          </>
        ) : (
          <Loading label="Signing in" onCancel={() => void signOut()} />
        )}
      </main>
    );
  }
  return <Layout />;
}

function WorkspaceSwitcher() {
  const { status, workspace, chooseWorkspace } = useAuth();
  const navigate = useNavigate();
  if (!status) return null;
  return (
    <div className="switcher">
      <label htmlFor="workspace-switcher">Workspace</label>
      <select
        id="workspace-switcher"
        value={workspace?.id ?? ""}
        onChange={(e) => {
          chooseWorkspace(Number(e.target.value));
          navigate("/");
        }}
      >
        {status.workspaces.map((w) => (
          <option key={w.id} value={w.id}>
            {w.name} ({w.role.toLowerCase()})
          </option>
        ))}
      </select>
    </div>
  );
}

const UNREAD_PAGE = 100;

function NotificationsBell() {
  const [open, setOpen] = useState(false);
  const [items, setItems] = useState<Schemas["NotificationDto"][]>([]);
  const [error, setError] = useState<Error | null>(null);
  const panel = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  const location = useLocation();

  // The unread ones only, newest first: what the bell counts and lists. At most a page of them
  // is fetched; past it the count shows "99+".
  const load = () =>
    unwrap(api.GET("/notifications", { params: { query: { read: false, limit: UNREAD_PAGE } } }))
      .then((n) => {
        setItems(n);
        setError(null);
      })
      .catch((e: Error) => setError(e));

  useEffect(() => {
    void load();
    const t = setInterval(load, 30_000);
    return () => clearInterval(t);
  }, [location.pathname]);

  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        setOpen(false);
        button.current?.focus();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [open]);

  const unread = items.length;
  const count = unread >= UNREAD_PAGE ? "99+" : String(unread);
  const markRead = async (n: Schemas["NotificationDto"]) => {
    try {
      await unwrap(
        api.PUT("/notifications/{notification_id}", {
          params: { path: { notification_id: n.id } },
          body: { read: new Date().toISOString() },
        }),
      );
      await load();
    } catch (e) {
      setError(e as Error);
    }
  };

  return (
    <div className="bell">
      <button
        ref={button}
        type="button"
        aria-expanded={open}
        aria-controls="notifications-panel"
        onClick={() => setOpen(!open)}
        className="icon-button"
      >
        <svg width="18" height="18" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
          <path
            d="M12 22a2.5 2.5 0 0 0 2.5-2.5h-5A2.5 2.5 0 0 0 12 22zm7-6V11a7 7 0 0 0-5.5-6.84V3a1.5 1.5 0 0 0-3 0v1.16A7 7 0 0 0 5 11v5l-2 2v1h18v-1z"
            fill="currentColor"
          />
        </svg>
        <span className="sr-only">Notifications</span>
        {unread > 0 && <span className="count">{count}</span>}
        {unread > 0 && <span className="sr-only"> ({count} unread)</span>}
      </button>
      {open && (
        <div id="notifications-panel" className="popover" ref={panel} role="region" aria-label="Notifications">
          <ErrorBox error={error} />
          {items.length === 0 && <p className="empty">No unread notifications.</p>}
          <ul>
            {items.slice(0, 20).map((n) => (
              <li key={n.id} className={!n.read ? "unread" : ""}>
                <strong dir="auto">{n.title}</strong>
                <p dir="auto">{n.text}</p>
                <small>{when(n.created)}</small>
                {!n.read && (
                  <button type="button" className="link" onClick={() => void markRead(n)}>
                    Mark read
                  </button>
                )}
              </li>
            ))}
          </ul>
          <Link to="/notifications" onClick={() => setOpen(false)}>
            All notifications
          </Link>
        </div>
      )}
    </div>
  );
}

export function Layout() {
  const { status, signOut } = useAuth();
  const [menu, setMenu] = useState(false);
  const location = useLocation();
  // The route's params, its children's included: a path whose id is not a number is no page.
  const known = idsValid(useParams());
  const first = useRef(true);
  useEffect(() => {
    setMenu(false);
    // After a navigation, focus goes to the new page's heading (screen readers announce it);
    // not on the first load, where the browser's own focus order applies.
    if (first.current) {
      first.current = false;
      return;
    }
    const t = setTimeout(() => document.querySelector<HTMLElement>("main h1")?.focus(), 0);
    return () => clearTimeout(t);
  }, [location.pathname]);
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/" className="brand">
          Lector
        </Link>
        <button
          type="button"
          className="menu-toggle"
          aria-expanded={menu}
          aria-controls="main-nav"
          onClick={() => setMenu(!menu)}
        >
          Menu
        </button>
        <nav id="main-nav" aria-label="Main" className={menu ? "open" : ""}>
          <NavLink to="/" end>
            Projects
          </NavLink>
          <NavLink to="/analyses">Analyses</NavLink>
          <NavLink to="/workspace">Members</NavLink>
          <a href="/docs" target="_blank" rel="noreferrer">
            API docs
          </a>
        </nav>
        <div className="topbar-end">
          <WorkspaceSwitcher />
          <NotificationsBell />
          {status && (
            <NavLink to="/account" className="who" title={`Your account (${status.user.email})`}>
              <span dir="auto">{displayName(status.user)}</span>
              <span className="sr-only"> (your account)</span>
            </NavLink>
          )}
          <button type="button" className="secondary" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {known ? <Outlet /> : <NotFound />}
      </main>
    </>
  );
}
