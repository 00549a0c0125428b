// Pages outside the story: an error answer shown as its detail, the phone width, the pages
// without a token, and the server's fallback for client-side routes.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { BASE, checkA11y, launch, newPage, shot } from "./harness.mjs";

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test("a wrong password shows the API's detail", async () => {
  const page = await newPage(browser);
  const answer = await page.request.post(`${BASE}/auth/login`, {
    data: { email: "nobody@example.org", password: "wrong password" },
  });
  assert.equal(answer.status(), 401);
  const problem = await answer.json();
  assert.ok(problem.detail, "the API answers a problem with a detail");
  await page.goto(`${BASE}/app/login`);
  await checkA11y(page, "login");
  await page.getByLabel("E-mail").fill("nobody@example.org");
  await page.getByLabel("Password").fill("wrong password");
  await page.getByRole("button", { name: "Sign in" }).click();
  const alert = page.getByRole("alert");
  await alert.waitFor();
  assert.equal((await alert.innerText()).trim(), problem.detail);
  await shot(page, "10-login-error");
  assert.deepEqual(page.cspViolations, []);
});

test("a validation error names the field", async () => {
  const page = await newPage(browser);
  await page.goto(`${BASE}/app/reset-password?token=not-a-token`);
  assert.equal(await page.getByLabel("Token from the mail").inputValue(), "not-a-token");
  await page.getByLabel("New password").fill("another password");
  await page.getByRole("button", { name: "Set password" }).click();
  const alert = page.getByRole("alert");
  await alert.waitFor();
  const text = (await alert.innerText()).trim();
  const answer = await page.request.post(`${BASE}/password/reset`, {
    data: { reset_password_token: "not-a-token", password: "another password" },
  });
  const problem = await answer.json();
  assert.ok(text.startsWith(problem.detail), `shown ${JSON.stringify(text)}, detail ${JSON.stringify(problem.detail)}`);
});

test("the pages without a token pass axe", async () => {
  const page = await newPage(browser);
  for (const [url, heading] of [
    ["/app/forgot-password", "Reset your password"],
    ["/app/reset-password", "Set a new password"],
    ["/app/accept-invitation", "Accept an invitation"],
  ]) {
    await page.goto(BASE + url);
    await page.getByRole("heading", { level: 1, name: heading }).waitFor();
    await checkA11y(page, url);
  }
});

test("a deep link without a token goes to sign in and comes back", async () => {
  const page = await newPage(browser);
  await page.goto(`${BASE}/app/analyses`);
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
  assert.match(page.url(), /\/app\/login\?next=%2Fanalyses/);
});

test("at a phone's width the projects page fits and its menu opens", async () => {
  const page = await newPage(browser, { width: 390, height: 844 });
  const email = `phone-with-a-rather-long-address-${process.pid}@example.org`;
  const r = await page.request.post(`${BASE}/auth/register`, { data: { email, password: "correct horse battery" } });
  assert.equal(r.status(), 200);
  // A name as long as the server allows, without a space to break it at.
  const longName = "W".repeat(120);
  const made = await page.request.post(`${BASE}/projects`, {
    headers: { authorization: `Bearer ${(await r.json()).auth_token}` },
    data: { name: longName, type: "CLASS" },
  });
  assert.equal(made.status(), 201);
  await page.goto(`${BASE}/app/login`);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Projects" }).waitFor();
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  const wide = await page.evaluate(() =>
    [...document.querySelectorAll("body *")]
      .filter((e) => e.getBoundingClientRect().right > 390.5)
      .map((e) => `${e.tagName.toLowerCase()}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`)
      .slice(0, 8),
  );
  assert.ok(width <= 390, `no horizontal scrolling (page is ${width}px wide: ${wide.join(", ")})`);
  const nav = page.getByRole("navigation", { name: "Main" });
  assert.equal(await nav.isVisible(), false, "the menu starts closed");
  await page.getByRole("button", { name: "Menu" }).click();
  assert.equal(await nav.isVisible(), true);
  await checkA11y(page, "projects at 390 px");
  await shot(page, "11-phone-projects");
  // The notifications panel opens inside the screen.
  await page.getByRole("button", { name: /Notifications/ }).click();
  const panel = await page.getByRole("region", { name: "Notifications" }).boundingBox();
  assert.ok(panel.x >= 0 && panel.x + panel.width <= 390, `the notifications panel fits: x ${panel.x}, width ${panel.width}`);
  await page.keyboard.press("Escape");
  await page.getByRole("link", { name: "Analyses" }).click();
  await page.getByRole("heading", { level: 1, name: "Analyses" }).waitFor();
  assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 390);
  // The annotator at a phone's width: chips above the text, nothing wider than the screen.
  const token = await page.evaluate(() => localStorage.getItem("lector.token"));
  const headers = { authorization: `Bearer ${token}` };
  const project = await (await page.request.post(`${BASE}/projects`, { headers, data: { name: "Phone", type: "CLASS" } })).json();
  await page.request.post(`${BASE}/projects/${project.id}/upload-classes`, {
    headers,
    data: [{ name: "billing" }, { name: "login" }, { name: "L".repeat(100) }],
  });
  // Long words (a URL, a token) wrap like the rest.
  const url = `https://billing.example.com/invoices/download?id=8f14e45fceea167a5a36dedd4bea2543&token=${"eyJhbGciOiJIUzI1NiJ9".repeat(6)}`;
  await page.request.post(`${BASE}/projects/${project.id}/documents`, {
    headers,
    data: { text: `A rather long sentence about an invoice that was wrong, to see it wrap: ${url} gives an error. And a second one.` },
  });
  const session = await (await page.request.post(`${BASE}/projects/${project.id}/annotations`, { headers, data: { name: "Phone pass" } })).json();
  await page.goto(`${BASE}/app/projects/${project.id}/labeling/${session.id}`);
  await page.locator(".segment.current").waitFor();
  await page.getByRole("button", { name: /billing/ }).click();
  await page.locator(".segment.current .tag", { hasText: "billing" }).waitFor();
  const annotatorWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(annotatorWidth <= 390, `the annotator fits (${annotatorWidth}px)`);
  await checkA11y(page, "annotator at 390 px");
  await shot(page, "11b-phone-annotator");
  // A table wider than the screen scrolls sideways: its region takes focus, so keys reach it.
  await page.request.post(`${BASE}/projects/${project.id}/upload-documents`, { headers, data: [{ text: "Pasted on the phone." }] });
  await page.goto(`${BASE}/app/projects/${project.id}`);
  await page.getByRole("heading", { name: "Documents" }).waitFor();
  await page.locator(".table-wrap table").waitFor();
  await checkA11y(page, "project overview at 390 px");
  await shot(page, "11c-phone-project");
  assert.deepEqual(page.cspViolations, []);
});

test("the app is served under the strict Content-Security-Policy, and a violation is seen", async () => {
  const page = await newPage(browser);
  const answer = await page.goto(`${BASE}/app/projects/1`);
  const csp = answer.headers()["content-security-policy"] ?? "";
  assert.match(csp, /script-src 'self'/);
  assert.match(csp, /style-src 'self'/);
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
  assert.deepEqual(page.cspViolations, [], "the app itself violates nothing");
  // The watch the other tests rely on does see a violation: an inline style attribute.
  await page.evaluate(() => document.body.insertAdjacentHTML("beforeend", '<p style="color: red">x</p>'));
  await page.waitForFunction(() => true);
  for (let i = 0; i < 50 && page.cspViolations.length === 0; i++) await page.waitForTimeout(20);
  assert.ok(page.cspViolations.some((v) => /style/i.test(v)), `violations seen: ${JSON.stringify(page.cspViolations)}`);
});

test("the root opens the app, and an unknown app path shows the app's not-found page", async () => {
  const page = await newPage(browser);
  await page.goto(`${BASE}/`);
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
  assert.match(page.url(), /\/app\/login/);
  const email = `lost-${process.pid}@example.org`;
  const r = await page.request.post(`${BASE}/auth/register`, { data: { email, password: "correct horse battery" } });
  const { auth_token } = await r.json();
  await page.evaluate((t) => localStorage.setItem("lector.token", t), auth_token);
  const answer = await page.goto(`${BASE}/app/no/such/page`);
  assert.equal(answer.status(), 200, "the server answers index.html under /app/");
  await page.getByRole("heading", { level: 1, name: "Page not found" }).waitFor();
  await checkA11y(page, "not found");
  // A deep link whose id is not a number is a page that does not exist; nothing asks for NaN.
  const asked = [];
  page.on("request", (r) => asked.push(r.url()));
  for (const path of ["/app/projects/abc", "/app/projects/1x/models", "/app/analyses/NaN"]) {
    await page.goto(BASE + path);
    await page.getByRole("heading", { level: 1, name: "Page not found" }).waitFor();
  }
  assert.deepEqual(asked.filter((u) => /NaN|abc|1x/.test(u) && !u.includes("/app/")), [], "no API request with the bad id");
  // A `next` that leads off the app after signing in is ignored, without crashing the app.
  await page.goto(`${BASE}/app/login?next=${encodeURIComponent("/\\example.com")}`);
  await page.getByRole("heading", { level: 1, name: "Projects" }).waitFor();
  assert.deepEqual(page.cspViolations, [], "no page error");
});
