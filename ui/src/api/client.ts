// The typed API client: openapi-fetch over the paths generated from the served OpenAPI
// document (schema.d.ts), the bearer token kept in localStorage, and problem+json answers turned
// into ApiError whose message is the problem's `detail` (and when to try again, after a 429).
import createClient, { type Middleware } from "openapi-fetch";
import { parseRetryAfter, tooManyRequests, waitInWords } from "../lib/retry";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];
export type Problem = Schemas["Problem"];

const TOKEN_KEY = "lector.token";

export function getToken(): string | null {
  return localStorage.getItem(TOKEN_KEY);
}

export function setToken(token: string | null): void {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
}

/**
 * An error answer of the API, or a failure to reach it. `message` is what the user reads;
 * `retryAfter` the seconds the answer's `Retry-After` asks to wait (null without one).
 */
export class ApiError extends Error {
  status: number;
  problem: Problem | null;
  retryAfter: number | null;
  constructor(status: number, message: string, problem: Problem | null, retryAfter: number | null = null) {
    super(message);
    this.status = status;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }
}

/** Listeners told when the API answers 401 (the token expired or was revoked). */
const unauthorizedListeners = new Set<() => void>();
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

/**
 * Tells the listeners when an answer is a 401 to a request that carried the token still kept:
 * one sent with a token replaced since (a password change revokes the old one and the account
 * page signs in anew) says nothing about the new one.
 */
function noticeUnauthorized(response: Response, sentToken: string | null): void {
  if (response.status === 401 && sentToken && sentToken === getToken()) unauthorizedListeners.forEach((l) => l());
}

/** The bearer token a request carries, if any. */
function bearerOf(request: Request): string | null {
  return /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1] ?? null;
}

const auth: Middleware = {
  onRequest({ request }) {
    const token = getToken();
    if (token && !request.headers.has("authorization")) {
      request.headers.set("authorization", `Bearer ${token}`);
    }
    return request;
  },
  onResponse({ request, response }) {
    noticeUnauthorized(response, bearerOf(request));
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: "" });
api.use(auth);

/**
 * Builds the error for a failed answer: the problem's `detail` when there is one; with a
 * `Retry-After`, when to try again (a 429 says only that: its detail adds nothing to act on).
 */
export function toApiError(response: Response, body: unknown): ApiError {
  const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
  let problem: Problem | null = null;
  let text = `${response.status} ${response.statusText || "error"}`;
  if (body && typeof body === "object" && "detail" in body) {
    problem = body as Problem;
    const fields = problem.errors?.map((e) => `${e.field}: ${e.message}`).join("; ");
    const detail = problem.detail || problem.title;
    text = fields && !detail.includes(fields) ? `${detail} (${fields})` : detail;
  }
  if (retryAfter !== null) {
    text = response.status === 429 ? tooManyRequests(retryAfter) : `${text}; try again in ${waitInWords(retryAfter)}`;
  }
  return new ApiError(response.status, text, problem, retryAfter);
}

/** Unwraps an openapi-fetch answer: its data, or a thrown ApiError. */
export async function unwrap<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  let answer;
  try {
    answer = await call;
  } catch (e) {
    if (e instanceof ApiError) throw e;
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    throw new ApiError(0, "The server could not be reached. Check your connection and try again.", null);
  }
  const { data, error, response } = answer;
  if (!response.ok) throw toApiError(response, error);
  return data as T;
}

/** Sends a multipart form to an API path (the uploads), answering the parsed JSON. */
export async function postForm<T>(path: string, form: FormData, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = {};
  const token = getToken();
  if (token) headers.authorization = `Bearer ${token}`;
  let response: Response;
  try {
    response = await fetch(path, { method: "POST", body: form, headers, signal });
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    throw new ApiError(0, "The server could not be reached. Check your connection and try again.", null);
  }
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) {
    noticeUnauthorized(response, token);
    throw toApiError(response, body);
  }
  return body as T;
}

/** Downloads an API path with the bearer token and hands the file to the browser. */
export async function download(path: string, fallbackName: string): Promise<void> {
  const headers: Record<string, string> = {};
  const token = getToken();
  if (token) headers.authorization = `Bearer ${token}`;
  let response: Response;
  try {
    response = await fetch(path, { headers });
  } catch {
    throw new ApiError(0, "The server could not be reached. Check your connection and try again.", null);
  }
  if (!response.ok) {
    noticeUnauthorized(response, token);
    let body: unknown = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    throw toApiError(response, body);
  }
  const blob = await response.blob();
  const disposition = response.headers.get("content-disposition") ?? "";
  const match = /filename="?([^";]+)"?/.exec(disposition);
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = match?.[1] ?? fallbackName;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
