// What the browser tests share: launching Debian's chromium through playwright-core, the
// server's address, axe-core, screenshots and a watch for CSP violations.
import { readFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

export const BASE = process.env.UI_BASE_URL ?? "https://127.0.0.1:8443";
export const DATA = process.env.UI_DATA_DIR ?? "";
/** The lector binary serving BASE, for what only its command line does (making a superuser). */
export const BINARY = process.env.UI_LECTOR_BINARY ?? "";
export const SHOTS = process.env.UI_SCREENSHOTS ?? path.resolve("test-results/screenshots");
mkdirSync(SHOTS, { recursive: true });

export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** A page at the given viewport whose console is watched for CSP violations and errors. */
export async function newPage(browser, { width = 1280, height = 900 } = {}) {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width, height } });
  context.setDefaultTimeout(Number(process.env.UI_STEP_TIMEOUT ?? 20_000));
  const page = await context.newPage();
  page.cspViolations = [];
  page.on("console", (msg) => {
    if (/Content Security Policy|Refused to (apply|load|execute)/i.test(msg.text())) page.cspViolations.push(msg.text());
  });
  page.on("pageerror", (e) => page.cspViolations.push(`page error: ${e.message}`));
  return page;
}

/** Runs axe-core in the page; fails on serious or critical violations, naming them. */
export async function checkA11y(page, name) {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")),
    }));
  });
  const bad = result.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad, [], `${name}: accessibility violations\n${JSON.stringify(bad, null, 2)}`);
  return result;
}

export async function shot(page, name) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

/** The page's token, to check through the API what the pages did. */
export async function apiGet(page, p) {
  const token = await page.evaluate(() => localStorage.getItem("lector.token"));
  const r = await page.request.get(BASE + p, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(r.status(), 200, `GET ${p}: ${r.status()} ${await r.text()}`);
  return r.json();
}

/** `method` on the API path `p` as the holder of `token`, with `data` as JSON; the answer's JSON, failing unless it is a success. */
export async function apiCall(page, token, method, p, data) {
  const r = await page.request.fetch(BASE + p, { method, data, headers: { authorization: `Bearer ${token}` } });
  const body = await r.json().catch(() => null);
  assert.ok(r.ok(), `${method} ${p}: ${r.status()} ${JSON.stringify(body)}`);
  return body;
}

export function csv(rows) {
  return rows.map((r) => r.map((c) => `"${String(c).replace(/"/g, '""')}"`).join(",")).join("\n") + "\n";
}

export const BILLING = [
  "I was charged twice for my subscription",
  "My invoice shows the wrong amount",
  "Please refund the extra payment",
  "The bill for March is too high",
  "Why did my card get charged again",
  "I need a copy of last month's invoice",
  "The price on my invoice does not match the offer",
  "You billed me after I cancelled",
  "My payment went through but the invoice says unpaid",
  "Can I get a refund for the annual plan",
  "The tax on the invoice is wrong",
  "I was billed in the wrong currency",
];
export const LOGIN = [
  "I cannot log in to my account",
  "The password reset link does not work",
  "My login code never arrives",
  "The app says my password is wrong",
  "I am locked out after three attempts",
  "Two factor authentication fails every time",
  "I forgot my username and cannot sign in",
  "The sign in page keeps reloading",
  "My account was locked without reason",
  "Login with my e-mail address fails",
  "I cannot reset my password from the phone",
  "The session ends right after I sign in",
];
