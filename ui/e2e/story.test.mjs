// The story of a new user: sign up, create a project with two classes, import a CSV with a
// preview and a column picker, label 20 segments with the keyboard only, train a model, read
// its metrics, analyse a file and read the results. axe-core checks each main page.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { BASE, BILLING, LOGIN, apiGet, checkA11y, csv, launch, newPage, shot } from "./harness.mjs";

let browser;
let page;
let projectId;
const email = `ada-${process.pid}@example.org`;
const password = "correct horse battery";

before(async () => {
  browser = await launch();
  page = await newPage(browser);
});
after(async () => {
  await browser?.close();
});

test("sign-up through labeling, training and analysis", async (t) => {
  // Each step needs the ones before: after a failure the rest are skipped.
  let broken = false;
  const step = (name, fn) =>
    t.test(name, async (tt) => {
      if (broken) return tt.skip("an earlier step failed");
      try {
        await fn(tt);
      } catch (e) {
        broken = true;
        await shot(page, `failed-${name.replace(/\W+/g, "-")}`).catch(() => {});
        throw e;
      }
    });

  await step("register", async () => {
    await page.goto(`${BASE}/app/register`);
    await checkA11y(page, "register");
    await shot(page, "01-register");
    await page.getByLabel("First name").fill("Ada");
    await page.getByLabel("E-mail").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { level: 1, name: "Projects" }).waitFor();
    await checkA11y(page, "projects (empty)");
  });

  await step("create a project with two classes", async () => {
    await page.getByLabel("Name").fill("Tickets");
    await page.getByLabel("Type").selectOption("CLASS");
    await page.getByRole("button", { name: "Create project" }).click();
    await page.getByRole("heading", { level: 1, name: "Tickets" }).waitFor();
    for (const c of ["billing", "login"]) {
      await page.getByLabel("New class").fill(c);
      await page.getByRole("button", { name: "Add" }).first().click();
      await page.locator(".chip", { hasText: c }).waitFor();
    }
    // Deleting a class asks first: its tags in every session go with it.
    await page.getByLabel("New class").fill("spam");
    await page.getByRole("button", { name: "Add" }).first().click();
    await page.locator(".chip", { hasText: "spam" }).waitFor();
    let asked = "";
    page.once("dialog", (d) => {
      asked = d.message();
      void d.dismiss();
    });
    await page.getByRole("button", { name: "Delete class spam" }).click();
    await page.waitForTimeout(200);
    assert.match(asked, /^Delete the class spam\? Every tag of it/, "a confirmation");
    assert.equal(await page.locator(".chip", { hasText: "spam" }).count(), 1, "kept when the deletion is not confirmed");
    page.once("dialog", (d) => void d.accept());
    await page.getByRole("button", { name: "Delete class spam" }).click();
    await page.locator(".chip", { hasText: "spam" }).waitFor({ state: "detached" });
    await checkA11y(page, "project overview");
    await shot(page, "02-project");
    const classes = await apiGet(page, `/projects/${projectIdFromUrl(page)}/classes`);
    assert.deepEqual(classes.map((c) => c.name).sort(), ["billing", "login"]);
  });

  await step("import a CSV with a preview and a column picker", async () => {
    await page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Import" }).click();
    // A TXT file has no header row: its first line is a document, not a column name.
    const notes = "First line document.\nSecond line document.\n\nمرحبا بالعالم. هذا اختبار.\n";
    await page.getByLabel("File", { exact: true }).setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from(notes) });
    await page.getByRole("button", { name: "Upload and preview" }).click();
    const txtPreview = page.getByRole("table", { name: /Preview of notes.txt/ });
    await txtPreview.waitFor();
    assert.equal(await page.getByLabel("The first row holds the column names").isChecked(), false, "no header row for TXT");
    assert.equal(await txtPreview.getByRole("cell", { name: "First line document." }).count(), 1, "the first line is a document");
    const arabicCell = txtPreview.getByRole("cell", { name: /مرحبا/ });
    assert.equal(await arabicCell.evaluate((el) => getComputedStyle(el).direction), "rtl", "Arabic text reads right to left");
    await page.getByRole("button", { name: "Start over" }).click();
    const rows = [["id", "ticket", "channel"]];
    for (let i = 0; i < 12; i++) {
      rows.push([2 * i + 1, BILLING[i], "mail"]);
      rows.push([2 * i + 2, LOGIN[i], "phone"]);
    }
    await page.getByLabel("File", { exact: true }).setInputFiles({ name: "tickets.csv", mimeType: "text/csv", buffer: Buffer.from(csv(rows)) });
    await page.getByRole("button", { name: "Upload and preview" }).click();
    const table = page.getByRole("table", { name: /Preview of tickets.csv/ });
    await table.waitFor();
    // The picker guessed the column with the longest texts; pick it by its header anyway.
    await page.getByRole("radio", { name: "ticket" }).check();
    assert.equal(await page.getByRole("radio", { name: "ticket" }).isChecked(), true);
    assert.equal(await table.getByRole("cell", { name: BILLING[0] }).count(), 1);
    await checkA11y(page, "import");
    await shot(page, "03-import-preview");
    await page.getByRole("button", { name: "Import", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Importing documents" }).waitFor();
    await page.getByText("Done.").waitFor({ timeout: 120_000 });
    await shot(page, "04-import-done");
    const docs = await apiGet(page, `/projects/${projectIdFromUrl(page)}/documents?limit=100`);
    assert.equal(docs.count, 24, "24 documents imported");
    assert.ok(docs.documents.every((d) => BILLING.includes(d.text) || LOGIN.includes(d.text)), "the ticket column was imported");
  });

  await step("label 20 segments with the keyboard only", async () => {
    await page.getByRole("link", { name: "Start labeling" }).click();
    await page.getByRole("heading", { level: 1, name: "Labeling" }).waitFor();
    await page.getByLabel("New session name").fill("First pass");
    await page.getByRole("button", { name: "Start labeling" }).click();
    await page.getByRole("heading", { level: 1, name: "First pass" }).waitFor();
    await page.locator(".segment.current").waitFor();
    await checkA11y(page, "annotator");
    // From here on only the keyboard: a number key picks the class, Enter marks the segment
    // annotated, n goes to the next document.
    for (let i = 0; i < 20; i++) {
      await page.getByText(`Document ${i + 1} of 24`).waitFor();
      const text = (await page.locator(".segment.current .segment-text").innerText()).trim();
      const key = BILLING.includes(text) ? "1" : LOGIN.includes(text) ? "2" : null;
      assert.ok(key, `segment text ${JSON.stringify(text)} is one of the imported tickets`);
      await page.keyboard.press(key);
      if (i === 5) {
        await page.locator(".segment.current .tag").first().waitFor();
        // A part of a segment: s starts a selection at the first word, Shift+→ widens it.
        await page.keyboard.press("s");
        await page.keyboard.press("Shift+ArrowRight");
        await page.getByText(/Part selected:/).waitFor();
        await page.keyboard.press(key);
        await page.locator(".segment.current mark.part").waitFor();
        await shot(page, "05-annotator-part");
      }
      if (i === 8) {
        // p and n move between documents; the tags stay.
        await page.locator(".segment.current .tag").first().waitFor();
        await page.keyboard.press("p");
        await page.getByText(`Document ${i} of 24`).waitFor();
        await page.locator(".segment.current .badge", { hasText: "annotated" }).waitFor();
        await page.keyboard.press("n");
        await page.getByText(`Document ${i + 1} of 24`).waitFor();
        await page.locator(".segment.current .tag").first().waitFor();
      }
      if (i === 19) await shot(page, "06-annotator");
      // Enter marks the segment annotated (right after the number key: the page queues both);
      // after a document's last segment the next document opens.
      await page.keyboard.press("Enter");
    }
    await page.getByText("Document 21 of 24").waitFor();
    const pid = projectIdFromUrl(page);
    const sessions = await apiGet(page, `/projects/${pid}/annotations`);
    assert.equal(sessions.length, 1);
    assert.equal(sessions[0].annotated_count, 20, "20 segments marked annotated");
    const doc = await apiGet(page, `/projects/${pid}/annotations/${sessions[0].id}/documents?details=segments,tags&limit=100`);
    const tagged = doc.documents.flatMap((d) => d.segments).filter((s) => s.status === "ANNOTATED");
    assert.equal(tagged.length, 20);
    for (const s of tagged) {
      const want = BILLING.includes(s.text) ? "billing" : "login";
      assert.ok(s.tags.length >= 1 && s.tags.every((t) => t.class === want), `${s.text} tagged ${want}`);
    }
    assert.ok(tagged.some((s) => s.tags.some((t) => t.span && t.span[1] - t.span[0] < [...s.text].length)), "a part of a segment is tagged");
  });

  await step("train a model and read its metrics", async () => {
    await page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Models" }).click();
    await page.getByRole("button", { name: "Train a model" }).click();
    await page.getByRole("heading", { level: 1, name: "Tickets v1" }).waitFor();
    await page.locator(".badge", { hasText: /^READY$/ }).waitFor({ timeout: 300_000 });
    await page.getByRole("img", { name: "F1 per class" }).waitFor();
    const bars = await page.locator("svg[role=img] rect.bar").count();
    assert.equal(bars, 2, "one F1 bar per class");
    await checkA11y(page, "model");
    await shot(page, "07-model");
    projectId = projectIdFromUrl(page);
    const models = await apiGet(page, `/projects/${projectId}/models`);
    assert.equal(models[0].status, "READY");
  });

  await step("train a second version and compare the two", async () => {
    await page.getByRole("link", { name: "All models of Tickets" }).click();
    await page.getByRole("button", { name: "Train a model" }).click();
    await page.getByRole("heading", { level: 1, name: "Tickets v2" }).waitFor();
    await page.locator(".badge", { hasText: /^READY$/ }).waitFor({ timeout: 300_000 });
    await page.getByRole("link", { name: "All models of Tickets" }).click();
    await page.getByRole("checkbox", { name: "Compare Tickets v1" }).check();
    await page.getByRole("checkbox", { name: "Compare Tickets v2" }).check();
    await page.getByRole("heading", { name: "Comparison" }).waitFor();
    await page.getByRole("img", { name: "F1 per class, by model" }).waitFor();
    const bars = await page.locator("figure svg[role=img] rect.bar, figure svg[role=img] rect.bar-alt").count();
    assert.equal(bars, 4, "two classes, two models");
    await checkA11y(page, "models compared");
    await shot(page, "07b-models-compared");
    // The comparison is in the address: a reload (or a link) keeps it.
    await page.reload();
    await page.getByRole("img", { name: "F1 per class, by model" }).waitFor();
    assert.equal(await page.getByRole("checkbox", { name: "Compare Tickets v1" }).isChecked(), true);
    await page.getByRole("link", { name: "Tickets v1" }).click();
    await page.getByRole("heading", { level: 1, name: "Tickets v1" }).waitFor();
  });

  await step("analyse a file and read the results", async () => {
    await page.getByRole("link", { name: "Analyse with it" }).click();
    await page.getByRole("heading", { level: 1, name: "Analyses" }).waitFor();
    const rows = [["text"], ["I was charged twice this month"], ["I cannot log in since yesterday"], ["The invoice amount is wrong"]];
    await page.getByLabel("File to analyse").setInputFiles({ name: "march.csv", mimeType: "text/csv", buffer: Buffer.from(csv(rows)) });
    await page.getByRole("button", { name: "Upload and preview" }).click();
    await page.getByRole("table", { name: /Preview of march.csv/ }).waitFor();
    await page.getByLabel("Name of the analysis").fill("March");
    await checkA11y(page, "analyses");
    await page.getByRole("button", { name: "Start the analysis" }).click();
    await page.getByRole("heading", { level: 1, name: "March" }).waitFor();
    await page.getByRole("heading", { name: "Results" }).waitFor({ timeout: 300_000 });
    const results = page.locator("table.results tbody tr");
    await results.first().waitFor();
    assert.equal(await results.count(), 3, "a row per analysed segment");
    await page.getByRole("img", { name: "Segments per class" }).waitFor();
    await checkA11y(page, "analysis");
    await shot(page, "08-analysis");
    const [file] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download the results as csv" }).click()]);
    const exported = await readFile(await file.path(), "utf8");
    assert.match(exported, /I was charged twice this month/);
    assert.match(exported, /billing/);
    // Filter by class: every row left carries that class.
    await page.getByLabel("Class", { exact: true }).selectOption({ label: "billing" });
    await page.waitForFunction(() => document.querySelectorAll("table.results tbody tr").length < 3 || document.querySelector(".empty"));
    const left = await results.allInnerTexts();
    assert.ok(left.length >= 1 && left.every((r) => r.includes("billing")), `filtered rows: ${JSON.stringify(left)}`);
    // The filter is in the address: a reload keeps it, Back takes it off.
    await page.reload();
    await results.first().waitFor();
    assert.equal(await page.getByLabel("Class", { exact: true }).locator("option:checked").innerText(), "billing");
    assert.deepEqual(await results.allInnerTexts(), left);
    await page.goBack();
    await page.waitForFunction(() => document.querySelectorAll("table.results tbody tr").length === 3);
    assert.equal(await page.getByLabel("Class", { exact: true }).locator("option:checked").innerText(), "Any class");
  });

  await step("correct the model's suggestions", async () => {
    await page.goto(`${BASE}/app/projects/${projectId}/labeling`);
    await page.getByRole("heading", { level: 1, name: "Labeling" }).waitFor();
    await page.getByLabel("Model").selectOption({ label: "Tickets v1" });
    await page.getByLabel("Documents", { exact: true }).fill("4");
    await page.getByRole("button", { name: "Start correcting" }).click();
    await page.locator(".segment.current").waitFor();
    // The model's suggestion carries its confidence.
    const suggestion = page.locator(".segment.current .tag").first();
    await suggestion.waitFor();
    assert.match(await suggestion.innerText(), /(billing|login)\s*\d+ %/);
    await checkA11y(page, "correction");
    await shot(page, "13-correction");
    await page.keyboard.press("c");
    await page.keyboard.press("Enter");
    await page.getByText(/Predicted score after corrections/).waitFor();
    const corrections = await apiGet(page, `/projects/${projectId}/corrections`);
    assert.equal(corrections.length, 1);
    assert.equal(corrections[0].annotated_count, 1, "one segment corrected");
    // The correction session is listed among correction sessions only, and a labeling link to
    // it opens its correction view.
    await page.goto(`${BASE}/app/projects/${projectId}/labeling`);
    const labelingRows = page.locator('section[aria-labelledby="sessions-h"] tbody tr');
    await labelingRows.first().waitFor();
    assert.deepEqual(await labelingRows.locator("td:first-child a").allInnerTexts(), ["First pass"]);
    await page.goto(`${BASE}/app/projects/${projectId}/labeling/${corrections[0].id}`);
    await page.getByRole("button", { name: "Confirm suggestions (c)" }).waitFor();
    assert.match(page.url(), new RegExp(`/corrections/${corrections[0].id}`));
  });

  await step("clone the project and watch the copy fill", async () => {
    await page.goto(`${BASE}/app/projects/${projectId}`);
    await page.getByRole("heading", { level: 1, name: "Tickets" }).waitFor();
    await page.getByRole("button", { name: "Clone project" }).click();
    await page.getByRole("heading", { level: 1, name: "Cloning the project" }).waitFor();
    await page.getByText("Done.").waitFor({ timeout: 120_000 });
    await checkA11y(page, "task progress");
    await shot(page, "14-clone-done");
    await page.getByRole("link", { name: "Open the project" }).click();
    const copyId = projectIdFromUrl(page);
    assert.notEqual(copyId, projectId);
    const copy = await apiGet(page, `/projects/${copyId}`);
    assert.equal(copy.status, "CREATED");
    const docs = await apiGet(page, `/projects/${copyId}/documents?limit=100`);
    const source = await apiGet(page, `/projects/${projectId}/documents?limit=100`);
    assert.ok(docs.count >= 24, "the copy has the imported documents");
    assert.equal(docs.count, source.count, "the copy has as many documents as the project");
    await page.getByRole("heading", { name: "Documents" }).waitFor();
    assert.deepEqual((await page.locator(".chip").allInnerTexts()).sort(), ["billing", "login"]);
  });

  await step("the other main pages pass axe", async () => {
    for (const [name, url, heading] of [
      ["workspace", "/app/workspace", /^Workspace /],
      ["notifications", "/app/notifications", "Notifications"],
      ["projects", "/app/", "Projects"],
    ]) {
      await page.goto(BASE + url);
      await page.getByRole("heading", { level: 1, name: heading }).waitFor();
      await checkA11y(page, name);
      await shot(page, `09-${name}`);
    }
    const bell = page.getByRole("button", { name: /Notifications/ });
    await bell.click();
    await page.getByRole("region", { name: "Notifications" }).waitFor();
    // Training and analysis finished: the bell lists their notifications.
    assert.ok((await page.locator("#notifications-panel li").count()) >= 1, "notifications listed");
  });

  await t.test("no Content-Security-Policy violation on the way", () => {
    assert.deepEqual(page.cspViolations, []);
  });
});

function projectIdFromUrl(p) {
  const m = /\/app\/projects\/(\d+)/.exec(p.url());
  assert.ok(m, `a project page: ${p.url()}`);
  return Number(m[1]);
}
