// Accounts through the pages: inviting a member who accepts with the token from the mail,
// changing the member's role, leaving a workspace (never one's personal one), resetting a
// password with the mailed token, the account page (name, product keys, password), a
// superuser in a read-only workspace they are no member of, a USER of a read-only workspace who
// analyses a text (which stores nothing) but no file, and what is never offered for the owner of
// a personal workspace (`owner_id`) or a workspace's only ADMIN.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { BASE, BILLING, BINARY, DATA, LOGIN, apiCall, apiGet, checkA11y, launch, newPage, shot } from "./harness.mjs";

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

/** The one-time token of the newest mail to `to` in the server's outbox (DATA/mail/*.eml). */
async function mailedToken(to, subject) {
  assert.ok(DATA, "UI_DATA_DIR names the server's data directory");
  const dir = path.join(DATA, "mail");
  for (let i = 0; i < 100; i++) {
    let files = [];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith(".eml"));
    } catch {
      files = [];
    }
    const mails = files
      .map((f) => readFileSync(path.join(dir, f), "utf8").replace(/=\r?\n/g, "").replace(/=3D/g, "="))
      .filter((m) => m.includes(`To: ${to}`) && subject.test(m));
    const token = mails.map((m) => /Token: (\S+)/.exec(m)?.[1]).filter(Boolean).pop();
    if (token) return token;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.fail(`no mail to ${to} matching ${subject} in ${dir}`);
}

async function signIn(page, email, password) {
  await page.goto(`${BASE}/app/login`);
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Projects" }).waitFor();
}

test("an invitation is accepted with the mailed token, then the member's role changes", async () => {
  const owner = await newPage(browser);
  const ownerEmail = `grace-${process.pid}@example.org`;
  const bobEmail = `bob-${process.pid}@example.org`;
  const reg = await owner.request.post(`${BASE}/auth/register`, { data: { email: ownerEmail, password: "owner password 1", first_name: "Grace" } });
  assert.equal(reg.status(), 200);
  await signIn(owner, ownerEmail, "owner password 1");
  await owner.getByRole("link", { name: "Members" }).click();
  await owner.getByRole("heading", { level: 1, name: /^Workspace / }).waitFor();
  await owner.getByLabel("E-mail addresses").fill(bobEmail);
  await owner.getByLabel("Role", { exact: true }).selectOption("ANNOTATOR");
  await owner.getByRole("button", { name: "Invite" }).click();
  await owner.getByRole("cell", { name: bobEmail }).waitFor();
  await checkA11y(owner, "members with an invitation");
  await shot(owner, "12-members");

  const token = await mailedToken(bobEmail, /invited you/);
  const bob = await newPage(browser);
  await bob.goto(`${BASE}/app/accept-invitation`);
  await bob.getByLabel("Invitation token").fill(token);
  await bob.getByLabel("First name").fill("Bob");
  await bob.getByLabel("Password").fill("bobs password 1");
  await bob.getByRole("button", { name: "Join the workspace" }).click();
  await bob.getByRole("heading", { level: 1, name: "Projects" }).waitFor();
  const options = await bob.getByLabel("Workspace").locator("option").allInnerTexts();
  assert.ok(
    options.some((o) => o.includes("(annotator)")),
    `Bob's workspaces include the one he joined as annotator: ${JSON.stringify(options)}`,
  );

  // As an annotator in Grace's workspace, Bob is offered only what he may do there.
  const ownerToken = await owner.evaluate(() => localStorage.getItem("lector.token"));
  const made = await owner.request.post(`${BASE}/projects`, {
    headers: { authorization: `Bearer ${ownerToken}` },
    data: { name: "Shared", type: "CLASS" },
  });
  assert.equal(made.status(), 201);
  const shared = await made.json();
  await bob.goto(`${BASE}/app/projects/${shared.id}`);
  await bob.getByRole("heading", { level: 1, name: "Shared" }).waitFor();
  await bob.getByText(/Changing the project.*needs the role manager or higher in this workspace; you are annotator/).waitFor();
  assert.equal(await bob.getByRole("button", { name: "Clone project" }).count(), 0, "no Clone for an annotator");
  assert.equal(await bob.getByRole("button", { name: "Delete" }).count(), 0, "no Delete for an annotator");
  assert.equal(await bob.getByLabel("New class").count(), 0, "no class form for an annotator");
  await bob.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Models" }).click();
  await bob.getByText(/Training a model needs the role user or higher/).waitFor();
  assert.equal(await bob.getByRole("button", { name: "Train a model" }).count(), 0, "no training for an annotator");
  await bob.getByLabel("Workspace").selectOption({ label: options.find((o) => o.includes("(annotator)")) });
  await bob.getByRole("link", { name: "Members" }).click();
  await bob.getByRole("heading", { level: 1, name: /^Workspace / }).waitFor();
  await bob.getByRole("cell", { name: bobEmail }).waitFor();
  assert.equal(await bob.getByRole("heading", { name: "Invitations" }).count(), 0, "no invitations list for an annotator");
  assert.equal(await bob.getByRole("alert").count(), 0, "no error on the members page");
  // Bob may leave Grace's workspace, but not his own personal one (the server answers 409 there).
  await bob.getByRole("row", { name: new RegExp(bobEmail) }).getByRole("button", { name: "Leave" }).waitFor();
  await checkA11y(bob, "project and members as an annotator");
  await bob.getByLabel("Workspace", { exact: true }).selectOption({ label: options.find((o) => o.includes("(admin)")) });
  await bob.goto(`${BASE}/app/workspace`);
  await bob.getByRole("cell", { name: bobEmail }).waitFor();
  assert.equal(await bob.getByRole("button", { name: "Leave" }).count(), 0, "no Leave in one's personal workspace");
  await bob.getByText("It is your personal workspace, which you cannot leave.").waitFor();
  assert.deepEqual(bob.cspViolations, []);

  await owner.reload();
  const role = owner.getByLabel(`Role of ${bobEmail}`);
  await role.waitFor();
  // Grace's workspace is her personal one: she may remove Bob, but neither leave nor lower
  // her own role.
  await owner.getByRole("row", { name: new RegExp(bobEmail) }).getByRole("button", { name: "Remove" }).waitFor();
  assert.equal(await owner.getByRole("button", { name: "Leave" }).count(), 0, "no Leave in one's personal workspace");
  assert.equal(await owner.getByLabel(`Role of ${ownerEmail}`).count(), 0, "no lower role for the owner of a personal workspace");
  await owner.getByText("It is your personal workspace, which you cannot leave.").waitFor();
  assert.equal(await role.inputValue(), "ANNOTATOR");
  await role.selectOption("USER");
  const status = await apiGet(owner, "/auth/status");
  const ws = status.workspaces.find((w) => w.is_default) ?? status.workspaces[0];
  for (let i = 0; i < 50; i++) {
    const members = await apiGet(owner, `/organizations/${encodeURIComponent(ws.name)}/permissions`);
    if (members.find((m) => m.user === bobEmail)?.role === "USER") return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail("Bob's role did not become USER");
});

test("a password is reset with the mailed token, then the account page changes the name, makes and deletes a product key and changes the password", async () => {
  const page = await newPage(browser);
  const email = `reset-${process.pid}@example.org`;
  const reg = await page.request.post(`${BASE}/auth/register`, { data: { email, password: "old password 1" } });
  assert.equal(reg.status(), 200);
  await page.goto(`${BASE}/app/forgot-password`);
  await page.getByLabel("E-mail").fill(email);
  await page.getByRole("button", { name: "Send reset mail" }).click();
  await page.getByRole("link", { name: "Set a new password with it" }).click();
  const token = await mailedToken(email, /[Rr]eset/);
  await page.getByLabel("Token from the mail").fill(token);
  await page.getByLabel("New password").fill("new password 2");
  await page.getByRole("button", { name: "Set password" }).click();
  await page.getByRole("link", { name: "Sign in with the new password" }).click();
  await signIn(page, email, "new password 2");

  // The account page, from the user's name in the top bar.
  await page.getByRole("link", { name: /your account/ }).click();
  await page.getByRole("heading", { level: 1, name: "Your account" }).waitFor();
  await page.getByRole("main").getByText(email, { exact: true }).waitFor();
  await page.getByLabel("First name").fill("Ada");
  await page.getByLabel("Last name").fill("Lovelace");
  await page.getByRole("button", { name: "Save name" }).click();
  await page.getByRole("link", { name: "Ada Lovelace (your account)" }).waitFor();

  // A product key: its token shown once, working against the API, never in the list.
  await page.getByLabel("Key name").fill("Nightly import");
  await page.getByRole("button", { name: "Create a product key" }).click();
  await page.getByText("Copy the key now: it will not be shown again.").waitFor();
  const key = await page.locator(".secret code").innerText();
  assert.match(key, /^lk_/);
  const keys = page.getByRole("table", { name: "Your product keys" });
  await keys.getByRole("row", { name: /Nightly import/ }).waitFor();
  assert.ok(!(await keys.innerText()).includes(key.slice(0, 8)), "the list of keys shows no token");
  const asKey = (k) => page.request.get(`${BASE}/auth/status`, { headers: { authorization: `Bearer ${k}` } });
  const withKey = await asKey(key);
  assert.equal(withKey.status(), 200, "the shown key is a working bearer token");
  assert.equal((await withKey.json()).user.email, email);
  await checkA11y(page, "account with a new key");
  await shot(page, "17-account");

  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole("link", { name: "Ada Lovelace (your account)" }).waitFor();
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the account page fits a phone (${width}px)`);
  await checkA11y(page, "account at 390 px");
  await shot(page, "17b-phone-account");
  await page.setViewportSize({ width: 1280, height: 900 });

  page.once("dialog", (dialog) => void dialog.accept());
  await keys.getByRole("button", { name: "Delete Nightly import" }).click();
  await page.getByText("No product keys yet.").waitFor();
  assert.equal((await asKey(key)).status(), 401, "a deleted key is refused");

  // The password: the two new ones must agree; a wrong current one shows the server's detail.
  await page.getByLabel("Current password").fill("not my password");
  await page.getByLabel("New password", { exact: true }).fill("third password 3");
  await page.getByLabel("Repeat the new password").fill("third password 4");
  await page.getByText("The two new passwords differ.").waitFor();
  assert.ok(await page.getByRole("button", { name: "Change password" }).isDisabled());
  await page.getByLabel("Repeat the new password").fill("third password 3");
  await page.getByRole("button", { name: "Change password" }).click();
  await page.getByRole("alert").filter({ hasText: "is not the account's password" }).waitFor();
  await page.getByLabel("Current password").fill("new password 2");
  await page.getByRole("button", { name: "Change password" }).click();
  await page.getByText(/^Password changed\./).waitFor();
  // Still signed in (the page signed in again with the new password), with a token that works.
  await page.reload();
  await page.getByRole("heading", { level: 1, name: "Your account" }).waitFor();
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  const old = await page.request.post(`${BASE}/auth/login`, { data: { email, password: "new password 2" } });
  assert.equal(old.status(), 401, "the old password is refused");
  await signIn(page, email, "third password 3");
  assert.deepEqual(page.cspViolations, []);
});

test("a superuser who is no member of a read-only workspace is offered no change in it", async () => {
  assert.ok(BINARY && DATA, "UI_LECTOR_BINARY and UI_DATA_DIR name the server's binary and data directory");
  const page = await newPage(browser);
  const ownerEmail = `archivist-${process.pid}@example.org`;
  const reg = await page.request.post(`${BASE}/auth/register`, { data: { email: ownerEmail, password: "owner password 1", first_name: "Ada" } });
  assert.equal(reg.status(), 200);
  const ownerToken = (await reg.json()).auth_token;
  const ws = await apiCall(page, ownerToken, "POST", "/organizations", { name: `Archive ${process.pid}` });
  const project = await apiCall(page, ownerToken, "POST", "/projects", { name: "Archived", type: "CLASS", organization_id: ws.id });

  const rootEmail = `root-${process.pid}@example.org`;
  execFileSync(BINARY, ["--data-dir", DATA, "user", "create", "--email", rootEmail, "--password-stdin", "--superuser"], {
    input: "root password 1\n",
    stdio: ["pipe", "ignore", "inherit"],
  });
  await signIn(page, rootEmail, "root password 1");
  const rootToken = await page.evaluate(() => localStorage.getItem("lector.token"));
  await page.goto(`${BASE}/app/projects/${project.id}`);
  await page.getByRole("heading", { level: 1, name: "Archived" }).waitFor();
  // While the workspace may be changed, the superuser is offered what an ADMIN is.
  await page.getByRole("button", { name: "Clone project" }).waitFor();

  await apiCall(page, ownerToken, "PUT", `/organizations/${ws.id}`, { name: ws.name, is_read_only: true });
  // Read-only, it refuses the superuser's changes too...
  const refused = await page.request.post(`${BASE}/projects/${project.id}/classes`, {
    headers: { authorization: `Bearer ${rootToken}` },
    data: { name: "Late" },
  });
  assert.equal(refused.status(), 403);
  assert.equal((await refused.json()).code, "workspace_read_only");
  // ...and the pages offer none, though the superuser's /auth/status does not list it.
  const status = await apiGet(page, "/auth/status");
  assert.ok(status.user.is_superuser && !status.workspaces.some((w) => w.id === ws.id), "a superuser who is no member");
  await page.reload();
  await page.getByText("Changing the project, its classes and labels is not possible: this workspace is read-only.").waitFor();
  assert.equal(await page.getByRole("button", { name: "Clone project" }).count(), 0, "no Clone in a read-only workspace");
  assert.equal(await page.getByRole("button", { name: "Delete" }).count(), 0, "no Delete in a read-only workspace");
  assert.equal(await page.getByLabel("New class").count(), 0, "no class form in a read-only workspace");
  await checkA11y(page, "a read-only project as a superuser");
  await shot(page, "13-read-only-superuser");
  const tabs = page.getByRole("navigation", { name: "Project" });
  await tabs.getByRole("link", { name: "Import" }).click();
  await page.getByText("Importing documents is not possible: this workspace is read-only.").waitFor();
  await tabs.getByRole("link", { name: "Labeling" }).click();
  await page.getByText("Starting a labeling or correction session is not possible: this workspace is read-only.").waitFor();
  await tabs.getByRole("link", { name: "Models" }).click();
  await page.getByText("Training a model is not possible: this workspace is read-only.").waitFor();
  assert.equal(await page.getByRole("button", { name: "Train a model" }).count(), 0, "no training in a read-only workspace");
  assert.deepEqual(page.cspViolations, []);
});

test("a user of a read-only workspace analyses a text with its model, but no file", async () => {
  const page = await newPage(browser);
  const register = async (email, first_name) => {
    const r = await page.request.post(`${BASE}/auth/register`, { data: { email, password: "some password 1", first_name } });
    assert.equal(r.status(), 200);
    return r.json();
  };
  const owner = await register(`olga-${process.pid}@example.org`, "Olga");
  const call = (method, p, data) => apiCall(page, owner.auth_token, method, p, data);
  const ws = await call("POST", "/organizations", { name: `Closed ${process.pid}` });
  const umaEmail = `uma-${process.pid}@example.org`;
  await call("POST", `/organizations/${ws.id}/users/invite`, { role: "USER", emails: [umaEmail] });
  const accepted = await page.request.post(`${BASE}/organizations/users/invite/accept`, {
    data: { token: await mailedToken(umaEmail, /invited you/), password: "some password 1", first_name: "Uma" },
  });
  assert.equal(accepted.status(), 200, await accepted.text());
  const project = await call("POST", "/projects", { name: "Old tickets", type: "CLASS", organization_id: ws.id });
  for (const name of ["billing", "login"]) await call("POST", `/projects/${project.id}/classes`, { name });
  const documents = [
    ...BILLING.map((text) => ({ text, tags: [{ class: "billing" }] })),
    ...LOGIN.map((text) => ({ text, tags: [{ class: "login" }] })),
  ];
  await call("POST", `/projects/${project.id}/annotations`, { name: "Labelled", documents });
  let model = await call("POST", `/projects/${project.id}/models`, { display_name: "Old tickets v1" });
  for (let i = 0; i < 600 && !["READY", "FAILED"].includes(model.status); i++) {
    await new Promise((r) => setTimeout(r, 200));
    model = await call("GET", `/projects/${project.id}/models/${model.id}`);
  }
  assert.equal(model.status, "READY", JSON.stringify(model.failure));
  await call("PUT", `/organizations/${ws.id}`, { name: ws.name, is_read_only: true });

  await signIn(page, umaEmail, "some password 1");
  await page.getByLabel("Workspace", { exact: true }).selectOption(String(ws.id));
  // The model's page offers to analyse with it, though the workspace is read-only.
  await page.goto(`${BASE}/app/projects/${project.id}/models/${model.id}`);
  await page.getByRole("heading", { level: 1, name: "Old tickets v1" }).waitFor();
  await page.getByRole("link", { name: "Analyse with it" }).click();
  await page.getByRole("heading", { level: 1, name: "Analyses" }).waitFor();
  // No file is offered: its analysis stores its results.
  await page.getByText("Analysing a file, which stores its results, is not possible: this workspace is read-only.").waitFor();
  assert.equal(await page.getByLabel("File to analyse").count(), 0, "no file analysis in a read-only workspace");
  // A text is analysed (answered within the request, stored nowhere).
  assert.equal(await page.getByLabel("Model").inputValue(), String(model.id), "the model linked from its page is chosen");
  await page.getByLabel("Text to analyse").fill("I was charged twice for the same invoice");
  await page.getByRole("button", { name: "Analyse text" }).click();
  const result = page.getByRole("list", { name: "Result" });
  await result.waitFor();
  assert.match(await result.innerText(), /charged twice.*(billing|login) \(\d+ %\)/);
  await checkA11y(page, "ad-hoc analysis in a read-only workspace");
  await shot(page, "13b-read-only-analysis");
  const analyses = await apiGet(page, "/analyses");
  assert.deepEqual(analyses, [], "nothing stored");
  assert.deepEqual(page.cspViolations, []);
});

test("nobody is offered to remove the owner of a personal workspace, nor to lower them, nor the only admin to leave", async () => {
  assert.ok(BINARY && DATA, "UI_LECTOR_BINARY and UI_DATA_DIR name the server's binary and data directory");
  const ada = await newPage(browser);
  const adaEmail = `ada-owner-${process.pid}@example.org`;
  const bobEmail = `bob-admin-${process.pid}@example.org`;
  const rootEmail = `root-owner-${process.pid}@example.org`;
  const register = async (email, first_name) => {
    const r = await ada.request.post(`${BASE}/auth/register`, { data: { email, password: "some password 1", first_name } });
    assert.equal(r.status(), 200);
    return r.json();
  };
  const adaReg = await register(adaEmail, "Ada");
  const bobReg = await register(bobEmail, "Bob");
  const adaToken = adaReg.auth_token;
  const personal = (await apiCall(ada, adaToken, "GET", "/auth/status")).default_workspace_id;
  const team = await apiCall(ada, adaToken, "POST", "/organizations", { name: `Team ${process.pid}` });
  const membershipOf = async (token, ws, email) =>
    (await apiCall(ada, token, "GET", `/organizations/${ws}/permissions`)).find((m) => m.user === email);
  const row = (page, email) => page.getByRole("row", { name: new RegExp(email) });
  const openMembers = async (page, ws, email) => {
    await page.getByLabel("Workspace", { exact: true }).selectOption(String(ws));
    await page.getByRole("link", { name: "Members" }).click();
    await page.getByRole("heading", { level: 1, name: /^Workspace / }).waitFor();
    await row(page, email).waitFor();
  };

  // Ada is the only ADMIN of the team she made: no Leave, no lower role (the server answers 409).
  const adaInTeam = await membershipOf(adaToken, team.id, adaEmail);
  const leave = await ada.request.delete(`${BASE}/organizations/${team.id}/permissions/${adaInTeam.id}`, {
    headers: { authorization: `Bearer ${adaToken}` },
  });
  assert.equal(leave.status(), 409, "the only ADMIN cannot leave");
  await signIn(ada, adaEmail, "some password 1");
  await openMembers(ada, team.id, adaEmail);
  await ada.getByText("You are its only admin: make another member admin before you leave it.").waitFor();
  assert.equal(await row(ada, adaEmail).getByRole("button", { name: "Leave" }).count(), 0, "no Leave for the only ADMIN");
  assert.equal(await ada.getByLabel(`Role of ${adaEmail}`).count(), 0, "no lower role for the only ADMIN");

  // A superuser makes Bob an ADMIN of the team and of Ada's personal workspace, and joins that too.
  execFileSync(BINARY, ["--data-dir", DATA, "user", "create", "--email", rootEmail, "--password-stdin", "--superuser"], {
    input: "root password 1\n",
    stdio: ["pipe", "ignore", "inherit"],
  });
  const login = await ada.request.post(`${BASE}/auth/login`, { data: { email: rootEmail, password: "root password 1" } });
  assert.equal(login.status(), 200);
  const root = await login.json();
  for (const [ws, user] of [[team.id, bobReg.user_id], [personal, bobReg.user_id], [personal, root.user_id]]) {
    await apiCall(ada, root.auth_token, "POST", `/organizations/${ws}/permissions`, { user_id: user, role: "ADMIN" });
  }
  // With another ADMIN, Ada may leave the team and change her role there.
  await ada.reload();
  await row(ada, adaEmail).getByRole("button", { name: "Leave" }).waitFor();
  await ada.getByLabel(`Role of ${adaEmail}`).waitFor();
  assert.equal(await ada.getByText(/You are its only admin/).count(), 0);
  assert.deepEqual(ada.cspViolations, []);

  // Bob, an ADMIN of Ada's personal workspace, may neither remove her nor lower her role (409).
  const adaInPersonal = await membershipOf(root.auth_token, personal, adaEmail);
  const path = `/organizations/${personal}/permissions/${adaInPersonal.id}`;
  const asBob = { authorization: `Bearer ${bobReg.auth_token}` };
  assert.equal((await ada.request.delete(BASE + path, { headers: asBob })).status(), 409);
  assert.equal((await ada.request.put(BASE + path, { headers: asBob, data: { role: "USER" } })).status(), 409);
  const bob = await newPage(browser);
  await signIn(bob, bobEmail, "some password 1");
  await openMembers(bob, personal, adaEmail);
  assert.equal(await row(bob, adaEmail).getByRole("button").count(), 0, "no Remove for the owner of a personal workspace");
  assert.equal(await bob.getByLabel(`Role of ${adaEmail}`).count(), 0, "no lower role for the owner of a personal workspace");
  await row(bob, bobEmail).getByRole("button", { name: "Leave" }).waitFor();
  await row(bob, rootEmail).getByRole("button", { name: "Remove" }).waitFor();
  await checkA11y(bob, "members of another's personal workspace");
  assert.deepEqual(bob.cspViolations, []);

  // A superuser may lower her role there, but not remove her either.
  const rootPage = await newPage(browser);
  await signIn(rootPage, rootEmail, "root password 1");
  await openMembers(rootPage, personal, adaEmail);
  const adaRole = rootPage.getByLabel(`Role of ${adaEmail}`);
  await adaRole.waitFor();
  assert.deepEqual(await adaRole.locator("option").allInnerTexts(), ["VIEWER", "ANNOTATOR", "USER", "MANAGER", "ADMIN"]);
  assert.equal(await row(rootPage, adaEmail).getByRole("button").count(), 0, "no Remove for the owner, a superuser asking");
  await row(rootPage, bobEmail).getByRole("button", { name: "Remove" }).waitFor();
  assert.deepEqual(rootPage.cspViolations, []);
});
