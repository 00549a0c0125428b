// Extraction and review through the pages: a LABEL project whose model (trained through the
// API on short labelled texts, as the server's own tests do) reads an invoice PDF uploaded on
// the Extract page; a live review configuration sends the unsure invoice to the review queue,
// where a person corrects a value and approves it.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { BASE, apiCall, checkA11y, launch, newPage, shot } from "./harness.mjs";
import { textPdf } from "./pdf.mjs";

const FIELDS = ["invoice_number", "date", "total", "iban", "vendor", "po_number"];
let browser;
let page;
let token;
let projectId;
let modelId;

const call = (method, p, data) => apiCall(page, token, method, p, data);

before(async () => {
  browser = await launch();
  page = await newPage(browser);
  const email = `ines-${process.pid}@example.org`;
  const reg = await page.request.post(`${BASE}/auth/register`, { data: { email, password: "invoice password 1", first_name: "Ines" } });
  token = (await reg.json()).auth_token;
  const project = await call("POST", "/projects", { name: "Invoices", type: "LABEL" });
  projectId = project.id;
  for (const name of FIELDS) await call("POST", `/projects/${projectId}/labels`, { name });
  const documents = Array.from({ length: 60 }, (_, n) => {
    const label = FIELDS[n % FIELDS.length];
    const text = {
      invoice_number: `Invoice number INV-${String(n).padStart(4, "0")}`,
      date: `Invoice date ${String(1 + (n % 28)).padStart(2, "0")}.03.2024`,
      total: `Total amount ${n},50 EUR`,
      iban: "Pay to IBAN DE89 3704 0044 0532 0130 00",
      vendor: `From Vendor${n} GmbH, Berlin`,
      po_number: `Your purchase order PO-${n}`,
    }[label];
    return { text, tags: [{ label }] };
  });
  await call("POST", `/projects/${projectId}/annotations`, { name: "Fields", documents });
  let model = await call("POST", `/projects/${projectId}/models`, { display_name: "Invoices v1" });
  for (let i = 0; i < 600 && !["READY", "FAILED"].includes(model.status); i++) {
    await new Promise((r) => setTimeout(r, 200));
    model = await call("GET", `/projects/${projectId}/models/${model.id}`);
  }
  assert.equal(model.status, "READY", JSON.stringify(model.failure));
  modelId = model.id;
  await page.goto(`${BASE}/app/login`);
  await page.evaluate((t) => localStorage.setItem("lector.token", t), token);
});
after(async () => {
  await browser?.close();
});

const invoice = () =>
  textPdf([
    [
      { x: 50, y: 80, size: 20, text: "Muster GmbH" },
      { x: 50, y: 140, size: 12, text: "Rechnung Nr. RE-2024-0017" },
      { x: 50, y: 160, size: 12, text: "Datum: 14.03.2024" },
      { x: 50, y: 300, size: 12, text: "Gesamtbetrag:" },
      { x: 400, y: 300, size: 12, text: "1.234,50 EUR" },
      { x: 50, y: 700, size: 10, text: "IBAN DE89 3704 0044 0532 0130 00" },
    ],
  ]);

test("the Extract page shows the page with its boxes and the fields with confidence", async () => {
  await page.goto(`${BASE}/app/projects/${projectId}/extract`);
  await page.getByRole("heading", { level: 1, name: "Extract fields" }).waitFor();
  await page.getByLabel("PDF or image").setInputFiles({ name: "invoice.pdf", mimeType: "application/pdf", buffer: invoice() });
  await page.getByRole("button", { name: "Extract" }).click();
  const img = page.getByRole("img", { name: /Page 1 of invoice.pdf/ });
  await img.waitFor({ timeout: 120_000 });
  assert.match(await img.getAttribute("src"), /^data:image\/png;base64,/);
  const fields = page.getByRole("table", { name: "Fields found" });
  const iban = fields.getByRole("row", { name: /iban/ });
  await iban.waitFor();
  assert.match(await iban.innerText(), /DE89/);
  assert.match(await iban.innerText(), /\d+ %/);
  assert.ok((await page.locator(".page-view rect.box").count()) >= 1, "boxes drawn over the page");
  await checkA11y(page, "extract");
  await shot(page, "15-extract");
  assert.deepEqual(page.cspViolations, []);
});

test("an unsure extraction waits in the review queue; the reviewer corrects and approves it", async () => {
  // A configuration made before, not live, gets no review: once the other has one waiting, the
  // page opens on that one instead of the first.
  await call("POST", `/projects/${projectId}/hitls`, { name: "Draft check", model_id: modelId, is_live: false });
  // The configuration, made on the Reviews page: the total is required and must be almost sure.
  await page.goto(`${BASE}/app/projects/${projectId}/reviews`);
  await page.getByRole("heading", { name: "New review configuration" }).waitFor();
  await page.getByLabel("Configuration name").fill("Invoice check");
  await page.getByRole("checkbox", { name: "total", exact: true }).check();
  await page.getByLabel("total is required").check();
  await page.getByLabel("Confidence threshold of total").fill("0.999");
  await page.getByLabel("Type of total").selectOption("amount");
  await checkA11y(page, "reviews with the configuration form");
  await page.getByRole("button", { name: "Create configuration" }).click();
  await page.getByLabel("Configuration", { exact: true }).locator("option", { hasText: "Invoice check" }).waitFor({ state: "attached" });
  await page.getByText("The queue is empty.").waitFor();
  const hitl = (await call("GET", `/projects/${projectId}/hitls`)).find((h) => h.name === "Invoice check");
  assert.equal(hitl.is_live, true);
  assert.deepEqual(hitl.labels.total, { required: true, confidence_threshold: 0.999, data_type: "amount" });
  await page.goto(`${BASE}/app/projects/${projectId}/extract`);
  await page.getByLabel("PDF or image").setInputFiles({ name: "unsure.pdf", mimeType: "application/pdf", buffer: invoice() });
  await page.getByRole("button", { name: "Extract" }).click();
  // The result says the extraction went to review (the total is below its threshold).
  await page.getByText(/review \d+ waits in/).waitFor({ timeout: 120_000 });
  await page.getByRole("navigation", { name: "Project" }).getByRole("link", { name: "Reviews" }).click();
  await page.getByRole("heading", { level: 1, name: "Reviews" }).waitFor();
  // The threshold as it was entered: 99.9 %, not a rounded 100 % that reads as never met.
  await page.getByRole("cell", { name: "total (threshold 99.9 %)" }).waitFor();
  assert.equal(await page.getByLabel("Configuration", { exact: true }).locator("option:checked").innerText(), "Invoice check (live)");
  // The choice is kept in the address, so a reload opens the same configuration.
  await page.waitForURL((url) => url.searchParams.get("config") === String(hitl.id));
  await page.getByRole("link", { name: "unsure.pdf" }).click();
  await page.getByRole("heading", { level: 1, name: "Review of unsure.pdf" }).waitFor();
  // The page beside the values, drawn from the words the review kept, the fields found boxed.
  const drawn = page.getByRole("img", { name: /Page 1 of unsure.pdf, drawn from its words/ });
  await drawn.waitFor();
  assert.match(await drawn.textContent(), /Invoice|Total|PO/i, "the page's words are drawn");
  assert.ok((await drawn.locator("rect.box").count()) >= 1, "a field found is boxed");
  const total = page.getByLabel("total", { exact: true });
  await total.fill("1234.50");
  await checkA11y(page, "review");
  await shot(page, "16-review");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByText("This review was submitted.").waitFor();
  const reviews = await call("GET", `/projects/${projectId}/hitls/${hitl.id}/reviews?with_full_data=true`);
  const review = reviews.find((r) => r.document_name === "unsure.pdf");
  assert.equal(review.status, "APPROVED");
  assert.equal(review.data.corrected.total, "1234.50");
  assert.deepEqual(page.cspViolations, []);
});

test("the LABEL model's page shows its confusion matrix as a heat map and downloads the model", async () => {
  await page.goto(`${BASE}/app/projects/${projectId}/models/${modelId}`);
  const heatmap = page.getByRole("img", { name: "Confusion matrix of labels" });
  await heatmap.waitFor();
  const cells = await heatmap.locator("rect").count();
  const model = await call("GET", `/projects/${projectId}/models/${modelId}`);
  const n = model.metrics.confusion.names.length;
  assert.ok(n >= 2);
  assert.equal(cells, n * n, "a cell per true and predicted label");
  const diagonal = model.metrics.confusion.matrix.reduce((s, row, i) => s + row[i], 0);
  assert.ok(diagonal > 0);
  await checkA11y(page, "label model");
  await shot(page, "18-label-model");
  const [file] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download" }).click()]);
  const bytes = await (await import("node:fs/promises")).readFile(await file.path());
  assert.ok(bytes.length > 100, "the model file has content");
  const upload = await page.request.post(`${BASE}/models/upload`, {
    headers: { authorization: `Bearer ${token}` },
    multipart: { file: { name: "invoices.lector-model", mimeType: "application/octet-stream", buffer: bytes }, display_name: "Copy" },
  });
  assert.equal(upload.status(), 200, "the downloaded file uploads again as a model");
});

test("a PDF imported on the Import page becomes a document whose page is a segment to label", async () => {
  await page.goto(`${BASE}/app/projects/${projectId}/import`);
  await page.getByLabel("File", { exact: true }).setInputFiles({ name: "scan-1.pdf", mimeType: "application/pdf", buffer: invoice() });
  await page.getByRole("button", { name: "Upload and preview" }).click();
  await page.getByLabel("Name of the document group").waitFor();
  assert.equal(await page.getByRole("table", { name: /Preview/ }).count(), 0, "a PDF has no columns to pick");
  await page.getByRole("button", { name: "Import", exact: true }).click();
  await page.getByText("Done.").waitFor({ timeout: 120_000 });
  const groups = await call("GET", `/projects/${projectId}/groups`);
  const group = groups.find((g) => g.name === "scan-1");
  assert.ok(group, `a group named after the file: ${JSON.stringify(groups.map((g) => g.name))}`);
  const docs = await call("GET", `/projects/${projectId}/groups/${group.id}/documents?details=segments`);
  assert.equal(docs.length, 1, "one document for the file");
  assert.match(docs[0].text, /RE-2024-0017/);
  assert.equal(docs[0].segments.length, 1, "a segment per page");
});
