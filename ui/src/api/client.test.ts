import { afterEach, beforeEach, describe, expect, it, vi, type Mock } from "vitest";
import { ApiError, download, onUnauthorized, postForm, setToken, toApiError } from "./client";

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

  it("to a request sent with a token replaced since tells no one (a password change signs in anew)", async () => {
    setToken("old-token");
    fetchMock.mockImplementation(async () => {
      setToken("new-token");
      return problem401();
    });
    await expect(download("/models/1/download", "model.lector-model")).rejects.toBeInstanceOf(ApiError);
    expect(listener).not.toHaveBeenCalled();
  });
});

describe("a 429 answer", () => {
  afterEach(() => vi.unstubAllGlobals());
  const tooMany = (headers: Record<string, string>) =>
    new Response(JSON.stringify({ type: "urn:lector:problem:rate_limited", title: "Too many requests", status: 429, detail: "too many attempts; retry later", code: "rate_limited" }), {
      status: 429,
      headers: { "content-type": "application/problem+json", ...headers },
    });

  it("with Retry-After carries the delay and says when to try again", async () => {
    vi.stubGlobal("localStorage", memoryStorage());
    vi.stubGlobal("fetch", async () => tooMany({ "retry-after": "3" }));
    const error = (await postForm("/analyses/upload", new FormData()).catch((e: unknown) => e)) as ApiError;
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(429);
    expect(error.retryAfter).toBe(3);
    expect(error.message).toBe("Too many requests; try again in 3 s");
    expect(error.problem?.code).toBe("rate_limited");
  });

  it("without Retry-After shows the problem's detail, and no delay", async () => {
    const error = toApiError(tooMany({}), { detail: "too many attempts; retry later", title: "Too many requests" });
    expect(error.retryAfter).toBeNull();
    expect(error.message).toBe("too many attempts; retry later");
  });

  it("of another status with Retry-After adds when to try again to the detail", () => {
    const response = new Response("{}", { status: 503, headers: { "retry-after": "120" } });
    const error = toApiError(response, { detail: "the server is starting", title: "Unavailable" });
    expect(error.message).toBe("the server is starting; try again in 2 min");
    expect(error.retryAfter).toBe(120);
  });
});
