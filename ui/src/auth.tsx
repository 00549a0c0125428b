// Who is signed in, and which workspace the pages work in.
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from "react";
import { api, getToken, onUnauthorized, setToken, unwrap, type Schemas } from "./api/client";
import { useLoad } from "./lib/hooks";
import { roleIn, type Purpose } from "./lib/roles";

type Status = Schemas["AuthStatus"];
export type MyWorkspace = Schemas["MyWorkspaceDto"];

type Auth = {
  token: string | null;
  status: Status | null;
  /** The workspace the pages work in: the one picked, else the default, else the first. */
  workspace: MyWorkspace | null;
  chooseWorkspace: (id: number) => void;
  signIn: (token: string) => Promise<void>;
  signOut: () => Promise<void>;
  refresh: () => Promise<void>;
  error: Error | null;
  expired: boolean;
};

const AuthContext = createContext<Auth | null>(null);
const WORKSPACE_KEY = "lector.workspace";

export function AuthProvider({ children }: { children: ReactNode }) {
  const [token, setTok] = useState<string | null>(getToken());
  const [status, setStatus] = useState<Status | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [expired, setExpired] = useState(false);
  const [picked, setPicked] = useState<number | null>(() => {
    const v = localStorage.getItem(WORKSPACE_KEY);
    return v ? Number(v) : null;
  });

  const refresh = useCallback(async () => {
    if (!getToken()) {
      setStatus(null);
      return;
    }
    try {
      setStatus(await unwrap(api.GET("/auth/status")));
      setError(null);
    } catch (e) {
      setError(e as Error);
    }
  }, []);

  useEffect(() => {
    void refresh();
  }, [token, refresh]);

  useEffect(
    () =>
      onUnauthorized(() => {
        setToken(null);
        setTok(null);
        setStatus(null);
        setExpired(true);
      }),
    [],
  );

  const signIn = useCallback(async (t: string) => {
    setToken(t);
    setExpired(false);
    setTok(t);
    setStatus(await unwrap(api.GET("/auth/status")));
  }, []);

  const signOut = useCallback(async () => {
    try {
      await api.POST("/auth/logout");
    } catch {
      // Signing out locally is what matters; the token expires anyway.
    }
    setToken(null);
    setTok(null);
    setStatus(null);
    setExpired(false);
  }, []);

  const chooseWorkspace = useCallback((id: number) => {
    localStorage.setItem(WORKSPACE_KEY, String(id));
    setPicked(id);
  }, []);

  const workspace = useMemo(() => {
    const list = status?.workspaces ?? [];
    return (
      list.find((w) => w.id === picked) ??
      list.find((w) => w.is_default) ??
      list.find((w) => w.id === status?.default_workspace_id) ??
      list[0] ??
      null
    );
  }, [status, picked]);

  const value = { token, status, workspace, chooseWorkspace, signIn, signOut, refresh, error, expired };
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

/**
 * The user's role in a workspace (a superuser's is ADMIN everywhere); READ_ONLY in a read-only
 * workspace, where nobody may change anything, a superuser included; null when not a member.
 * The workspace is read afresh (`GET /organizations/{id}`): a workspace made read-only since
 * sign-in, and one a superuser is no member of (which `/auth/status` does not list), say so only
 * there. undefined while that is not known yet (see `roleIn`); null when it cannot be read.
 */
export function useRole(workspaceId: number | null | undefined): string | null | undefined {
  return useRoles(workspaceId).change;
}

/**
 * The user's role in a workspace for each purpose (`roleIn`), from one read of it: `change`
 * as `useRole` answers it, `use` for what stores nothing (an ad-hoc analysis), which a
 * read-only workspace allows its USERs and above.
 */
export function useRoles(workspaceId: number | null | undefined): Record<Purpose, string | null | undefined> {
  const { status } = useAuth();
  const workspace = useLoad(
    () =>
      workspaceId == null
        ? Promise.resolve(null)
        : unwrap(api.GET("/organizations/{organization}", { params: { path: { organization: String(workspaceId) } } })),
    [workspaceId],
  );
  const answer = (purpose: Purpose) => {
    const role = roleIn(status, workspaceId, workspace.data, purpose);
    return role === undefined && workspace.error ? null : role;
  };
  return { change: answer("change"), use: answer("use") };
}

export function useAuth(): Auth {
  const a = useContext(AuthContext);
  if (!a) throw new Error("useAuth outside AuthProvider");
  return a;
}
