// The annotator beyond the story: a pair project (ABSA: an aspect class, then its sentiment
// label with Shift and a number), a part chosen with the mouse, the shortcut list, and a
// label project where number keys pick labels and a second one changes the first.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { BASE, apiCall, checkA11y, launch, newPage, shot } from "./harness.mjs";

let browser;
let page;
let token;

const call = (method, p, data) => apiCall(page, token, method, p, data);

/** A project of `type` with classes and labels, documents, and a session over them. */
let made = 0;
async function projectWithSession(type, classes, labels, texts) {
  made += 1;
  const project = await call("POST", "/projects", { name: `${type} ${made}`, type });
  if (classes.length) await call("POST", `/projects/${project.id}/upload-classes`, classes.map((name) => ({ name })));
  for (const name of labels) await call("POST", `/projects/${project.id}/labels`, { name });
  for (const text of texts) await call("POST", `/projects/${project.id}/documents`, { text });
  const session = await call("POST", `/projects/${project.id}/annotations`, { name: "Pass" });
  return { project: project.id, session: session.id };
}

async function segmentTags(s) {
  const page1 = await call("GET", `/projects/${s.project}/annotations/${s.session}/documents?details=segments,tags&limit=10`);
  return page1.documents.flatMap((d) => d.segments);
}

before(async () => {
  browser = await launch();
  page = await newPage(browser);
  const r = await page.request.post(`${BASE}/auth/register`, {
    data: { email: `lin-${process.pid}@example.org`, password: "labeling password 1" },
  });
  token = (await r.json()).auth_token;
  await page.goto(`${BASE}/app/login`);
  await page.evaluate((t) => localStorage.setItem("lector.token", t), token);
});
after(async () => {
  await browser?.close();
});

test("ABSA: a number picks the aspect, Shift and a number its sentiment", async () => {
  const s = await projectWithSession("ABSA", ["food", "service"], [], ["The soup was cold but the waiter was kind."]);
  await page.goto(`${BASE}/app/projects/${s.project}/labeling/${s.session}`);
  await page.locator(".segment.current").waitFor();
  const labels = await page.locator(".chip-button.label").allInnerTexts();
  const negative = labels.findIndex((l) => l.includes("negative"));
  assert.ok(negative >= 0, `the sentiment labels are offered: ${JSON.stringify(labels)}`);
  await page.keyboard.press("1");
  await page.locator(".chip-button.pending", { hasText: "food" }).waitFor();
  assert.equal(await page.getByRole("button", { name: /food/ }).getAttribute("aria-pressed"), "true");
  await page.keyboard.press(`Shift+Digit${negative + 1}`);
  await page.locator(".segment.current .tag", { hasText: "food · negative" }).waitFor();
  await page.keyboard.press("?");
  await page.getByRole("region", { name: "Keyboard shortcuts" }).waitFor();
  await checkA11y(page, "annotator (pairs, shortcuts shown)");
  await shot(page, "17-annotator-absa");
  const segs = await segmentTags(s);
  assert.deepEqual(
    segs[0].tags.map((t) => [t.class, t.label]),
    [["food", "negative"]],
  );
});

test("a part chosen with the mouse is tagged by its number key", async () => {
  const s = await projectWithSession("CLASS", ["billing", "login"], [], ["My invoice is wrong and I cannot log in."]);
  await page.goto(`${BASE}/app/projects/${s.project}/labeling/${s.session}`);
  const text = page.locator(".segment.current .segment-text");
  await text.waitFor();
  // Select the word "invoice" as a mouse would.
  await text.evaluate((el) => {
    const node = el.querySelector("span").firstChild;
    const at = node.textContent.indexOf("invoice");
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + "invoice".length);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  });
  await page.keyboard.press("1");
  await page.locator(".segment.current mark.part", { hasText: "invoice" }).waitFor();
  const segs = await segmentTags(s);
  const tag = segs[0].tags[0];
  assert.equal(tag.class, "billing");
  assert.equal(tag.text, "invoice");
  assert.deepEqual(tag.span, [3, 10], "code points of the document");
  // A chip clicked with the mouse, then Enter: the segment is marked, the chip's tag stays.
  await page.getByRole("button", { name: /login/ }).click();
  await page.locator(".segment.current .tag", { hasText: "login" }).waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".segment .badge", { hasText: "annotated" }).waitFor();
  const after = (await segmentTags(s))[0];
  assert.equal(after.status, "ANNOTATED");
  assert.deepEqual(after.tags.map((t) => t.class).sort(), ["billing", "login"]);
});

test("LABEL: number keys pick labels, another number changes the label", async () => {
  const s = await projectWithSession("LABEL", [], ["positive", "negative"], ["Great service, thank you."]);
  await page.goto(`${BASE}/app/projects/${s.project}/labeling/${s.session}`);
  await page.locator(".segment.current").waitFor();
  await page.keyboard.press("1");
  await page.locator(".segment.current .tag", { hasText: "positive" }).waitFor();
  await page.keyboard.press("2");
  await page.locator(".segment.current .tag", { hasText: "negative" }).waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".segment.current .badge", { hasText: "annotated" }).waitFor();
  const segs = await segmentTags(s);
  assert.deepEqual(segs[0].tags.map((t) => t.label), ["negative"]);
  assert.equal(segs[0].status, "ANNOTATED");
  // A document past the session's end (an old bookmark) opens its last one.
  await page.goto(`${BASE}/app/projects/${s.project}/labeling/${s.session}?doc=9999`);
  await page.getByText("Document 1 of 1").waitFor();
  await page.locator(".segment.current").waitFor();
  assert.match(page.url(), /\?doc=0$/);
  // A session that does not exist says so, without a progress bar or a document loading forever.
  await page.goto(`${BASE}/app/projects/${s.project}/labeling/999999`);
  await page.getByRole("alert").waitFor();
  await page.waitForTimeout(100);
  assert.equal(await page.getByText("Loading document…").count(), 0, "no document is loading");
  assert.equal(await page.getByRole("progressbar").count(), 0, "no progress of a session that is not there");
  assert.deepEqual(page.cspViolations, []);
});

test("keys typed while the next document loads apply to it, in order", async () => {
  const want = {
    "My invoice is wrong.": "billing",
    "I cannot log in.": "login",
    "Refund my payment.": "billing",
    "الخدمة ممتازة جدا.": "login",
  };
  const s = await projectWithSession("CLASS", ["billing", "login"], [], Object.keys(want));
  const order = (await call("GET", `/projects/${s.project}/annotations/${s.session}/documents?limit=10`)).documents.map((d) => d.text);
  const key = (i) => (want[order[i]] === "billing" ? "1" : "2");
  // A slow network: each document takes 700 ms to arrive.
  const slow = (url) => /\/annotations\/\d+\/documents\?/.test(url.href);
  await page.route(slow, async (route) => {
    await new Promise((r) => setTimeout(r, 700));
    await route.continue();
  });
  try {
    await page.goto(`${BASE}/app/projects/${s.project}/labeling/${s.session}`);
    await page.getByText("Document 1 of 4").waitFor();
    await page.keyboard.press(key(0));
    await page.keyboard.press("Enter");
    // The class key while document 2 loads, Enter once it shows.
    await page.getByText("Loading document…").waitFor();
    await page.keyboard.press(key(1));
    await page.getByText("Document 2 of 4").waitFor();
    await page.keyboard.press("Enter");
    // Documents 3 and 4 typed ahead while they load.
    await page.getByText("Loading document…").waitFor();
    for (const k of [key(2), "Enter", key(3), "Enter"]) await page.keyboard.press(k);
    await page.getByText("Document 4 of 4").waitFor();
    await page.locator(".segment.current .badge", { hasText: "annotated" }).waitFor();
    // The Arabic document reads right to left.
    const arabic = page.locator(".segment-text", { hasText: "الخدمة" });
    assert.equal(await arabic.evaluate((el) => getComputedStyle(el).direction), "rtl");
  } finally {
    await page.unroute(slow);
  }
  const segs = await segmentTags(s);
  assert.deepEqual(
    segs.map((x) => [x.text, x.status, x.tags.map((t) => t.class)]),
    order.map((text) => [text, "ANNOTATED", [want[text]]]),
    "each document annotated with the class typed for it, none without",
  );
});

test("a session's download imports again as a new session through the column mapping", async () => {
  const s = await projectWithSession("LABEL", [], ["positive", "negative"], ["Great service.", "Awful food."]);
  const segs = await segmentTags(s);
  for (const [seg, label] of [
    [segs[0], "positive"],
    [segs[1], "negative"],
  ]) {
    const doc = (await call("GET", `/projects/${s.project}/annotations/${s.session}/documents?details=segments&limit=10`)).documents.find((d) =>
      d.segments.some((x) => x.id === seg.id),
    );
    await call("POST", `/projects/${s.project}/annotations/${s.session}/documents/${doc.id}/segments/${seg.id}/tags`, { label });
    await call("POST", `/projects/${s.project}/annotations/${s.session}/documents/${doc.id}/segments/${seg.id}/statuses`, { name: "ANNOTATED" });
  }
  const csvFile = await page.request.get(`${BASE}/projects/${s.project}/annotations/${s.session}/download?format=csv`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(csvFile.status(), 200);
  await page.goto(`${BASE}/app/projects/${s.project}/labeling`);
  await page.getByLabel("Labeled file").setInputFiles({ name: "labels.csv", mimeType: "text/csv", buffer: await csvFile.body() });
  await page.getByRole("button", { name: "Upload and preview" }).click();
  await page.getByRole("table", { name: "Preview of labels.csv" }).waitFor();
  assert.equal(await page.getByLabel("Text column").inputValue(), "text", "the text column is found by its name");
  assert.equal(await page.getByLabel("Label column").inputValue(), "label", "the label column is found by its name");
  assert.equal(await page.getByLabel("Annotated column").inputValue(), "annotated");
  await page.getByLabel("Session name", { exact: true }).fill("Imported");
  await checkA11y(page, "labeled import");
  await page.getByRole("button", { name: "Import as a session" }).click();
  await page.getByText("Done.").waitFor({ timeout: 120_000 });
  const sessions = await call("GET", `/projects/${s.project}/annotations`);
  const imported = sessions.find((x) => x.name === "Imported");
  assert.ok(imported, JSON.stringify(sessions.map((x) => x.name)));
  const docs = await call("GET", `/projects/${s.project}/annotations/${imported.id}/documents?details=segments,tags&limit=10`);
  const labels = docs.documents.flatMap((d) => d.segments.flatMap((x) => x.tags.map((t) => `${x.text}=${t.label}`))).sort();
  assert.deepEqual(labels, ["Awful food.=negative", "Great service.=positive"]);
  assert.equal(imported.annotated_count, 2, "the annotated column carries the marks over");
  assert.equal(imported.document_count, 2, "the document column keeps the documents apart");
});
