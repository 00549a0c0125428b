import { afterEach, beforeEach, describe, expect, it, vi, type Mock } from "vitest";
import { ApiError, download, onUnauthorized, postForm, setToken } from "./client";

/** A localStorage of the test's own (Vitest runs under Node, which has none). */
function memoryStorage(): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    clear: () => items.clear(),
    getItem: (k) => items.get(k) ?? null,
    key: (i) => [...items.keys()][i] ?? null,
    removeItem: (k) => void items.delete(k),
    setItem: (k, v) => void items.set(k, String(v)),
  };
}

const problem401 = () =>
  new Response(JSON.stringify({ type: "about:blank", title: "Unauthorized", status: 401, detail: "The token expired." }), {
    status: 401,
    headers: { "content-type": "application/problem+json" },
  });

describe("a 401 answer", () => {
  let fetchMock: Mock<(path: string, init?: RequestInit) => Promise<Response>>;
  let listener: Mock<() => void>;
  let unsubscribe: () => void;
  beforeEach(() => {
    vi.stubGlobal("localStorage", memoryStorage());
    fetchMock = vi.fn(async (_path: string, _init?: RequestInit) => problem401());
    vi.stubGlobal("fetch", fetchMock);
    listener = vi.fn<() => void>();
    unsubscribe = onUnauthorized(listener);
  });
  afterEach(() => {
    unsubscribe();
    vi.unstubAllGlobals();
  });

  it("to a download tells the onUnauthorized listeners, and throws the problem's detail", async () => {
    setToken("expired-token");
    const error = await download("/models/1/download", "model.lector-model").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(401);
    expect((error as ApiError).message).toBe("The token expired.");
    expect(listener).toHaveBeenCalledTimes(1);
    const [path, init] = fetchMock.mock.calls[0];
    expect(path).toBe("/models/1/download");
    expect((init?.headers as Record<string, string>).authorization).toBe("Bearer expired-token");
  });

  it("to a download without a token tells no one (nobody was signed in)", async () => {
    await expect(download("/models/1/download", "model.lector-model")).rejects.toBeInstanceOf(ApiError);
    expect(listener).not.toHaveBeenCalled();
  });

  it("to a download that is not a 401 tells no one", async () => {
    setToken("token");
    fetchMock.mockImplementation(async () => new Response(JSON.stringify({ title: "Forbidden", status: 403, detail: "Not yours." }), { status: 403 }));
    await expect(download("/models/1/download", "model.lector-model")).rejects.toThrow("Not yours.");
    expect(listener).not.toHaveBeenCalled();
  });

  it("to an upload tells the listeners too", async () => {
    setToken("expired-token");
    await expect(postForm("/analyses/upload", new FormData())).rejects.toBeInstanceOf(ApiError);
    expect(listener).toHaveBeenCalledTimes(1);
  });
});
