// Extraction and human review: a PDF or image read by a LABEL model, its pages with the boxes
// of what was found, the fields with their confidence; the review queue of HITL configurations
// with editable values.
import { useEffect, useRef, useState, type FormEvent } from "react";
import { Link, useParams } from "react-router";
import { api, postForm, unwrap, type Schemas } from "../api/client";
import { useAuth } from "../auth";
import { exactPercent, percent, when } from "../lib/format";
import { useAction, useLoad, useOffset, useQuery } from "../lib/hooks";
import { isId } from "../lib/links";
import { arrayPage } from "../lib/paging";
import { configurationToOpen, hasPendingReview } from "../lib/reviews";
import { atLeast, NEEDS, roleNote } from "../lib/roles";
import { Empty, ErrorBox, Field, Loading, ModelOptions, PageTitle, Pager, StatusBadge, Table } from "../components/ui";
import { CancelButton } from "../components/upload";
import { useProject } from "./Project";

type Result = Schemas["ExtractionResultDto"];
type Match = Schemas["MatchDto"];
type Box = Schemas["BoxDto"];

/** A page image with the boxes of the matches drawn over it (corners relative to the page). */
export function PageWithBoxes({ src, boxes, alt }: { src: string; boxes: Box[][]; alt: string }) {
  return (
    <div className="page-view">
      <img src={src} alt={alt} />
      <svg viewBox="0 0 1000 1000" preserveAspectRatio="none" aria-hidden="true">
        {boxes.flat().map((b, i) => {
          const x = Math.min(b.TLx, b.BLx) * 1000;
          const y = Math.min(b.TLy, b.TRy) * 1000;
          const w = (Math.max(b.TRx, b.BRx) - Math.min(b.TLx, b.BLx)) * 1000;
          const h = (Math.max(b.BLy, b.BRy) - Math.min(b.TLy, b.TRy)) * 1000;
          return (
            <rect key={i} className={`box${b.confidence < 0.5 ? " low" : ""}`} x={x} y={y} width={Math.max(w, 1)} height={Math.max(h, 1)}>
              <title>
                {b.label ?? ""}: {b.text} ({percent(b.confidence)})
              </title>
            </rect>
          );
        })}
      </svg>
    </div>
  );
}

/** A page as the review keeps it: its size and its lines of words, each word with its box. */
type ReadPage = {
  number: number;
  width: number;
  height: number;
  lines: { words: { text: string; quad: Record<"tl" | "tr" | "br" | "bl", { x: number; y: number }>; confidence: number }[] }[];
};

/**
 * A page drawn from its words, for a review (whose page image is not kept): each word at its
 * place and size, the fields found boxed, so the reviewer sees where each value stands.
 */
export function PageFromWords({ page, boxes, label }: { page: ReadPage; boxes: Box[][]; label: string }) {
  const width = 1000;
  const height = Math.round((width * page.height) / Math.max(page.width, 1));
  const words = page.lines.flatMap((line) => line.words);
  return (
    <svg className="page-words" viewBox={`0 0 ${width} ${height}`} role="img" aria-label={label}>
      <rect className="paper" x={0} y={0} width={width} height={height} />
      {words.map((word, i) => {
        const q = word.quad;
        const left = Math.min(q.tl.x, q.bl.x) * width;
        const right = Math.max(q.tr.x, q.br.x) * width;
        const top = Math.min(q.tl.y, q.tr.y) * height;
        const bottom = Math.max(q.bl.y, q.br.y) * height;
        const size = Math.max(bottom - top, 1);
        return (
          <text key={i} x={left} y={bottom - size * 0.2} fontSize={size * 0.9} textLength={Math.max(right - left, 1)} lengthAdjust="spacingAndGlyphs">
            {word.text}
          </text>
        );
      })}
      {boxes.flat().map((b, i) => (
        <rect
          key={`box-${i}`}
          className={`box${b.confidence < 0.5 ? " low" : ""}`}
          x={Math.min(b.TLx, b.BLx) * width}
          y={Math.min(b.TLy, b.TRy) * height}
          width={Math.max((Math.max(b.TRx, b.BRx) - Math.min(b.TLx, b.BLx)) * width, 1)}
          height={Math.max((Math.max(b.BLy, b.BRy) - Math.min(b.TLy, b.TRy)) * height, 1)}
        >
          <title>
            {b.label ?? ""}: {b.text} ({percent(b.confidence)})
          </title>
        </rect>
      ))}
    </svg>
  );
}

function MatchesTable({ matches, missing }: { matches: Match[]; missing: string[] }) {
  return (
    <Table head={["Field", "Value", { figures: "Confidence" }, "Page"]} caption="Fields found">
      {matches.map((m, i) => (
        <tr key={i}>
          <th scope="row">
            {m.label}
            {m.required && <span className="muted"> (required)</span>}
          </th>
          <td dir="auto">
            {m.value ?? m.text}
            {m.conversion_error && <div className="error">{m.conversion_error}</div>}
          </td>
          <td className={`num${m.threshold_met ? "" : " confidence-low"}`}>
            {percent(m.confidence)}
            {!m.threshold_met && <span className="sr-only"> below the threshold {exactPercent(m.confidence_threshold)}</span>}
            {!m.threshold_met && <span aria-hidden="true"> ▼</span>}
          </td>
          <td>{m.page}</td>
        </tr>
      ))}
      {missing.map((f) => (
        <tr key={`missing-${f}`}>
          <th scope="row">{f}</th>
          <td colSpan={3} className="confidence-low">
            not found
          </td>
        </tr>
      ))}
    </Table>
  );
}

export function ExtractPage() {
  const { project, role } = useProject();
  const note = roleNote(role, NEEDS.work, "Extracting fields");
  const models = useLoad(() => unwrap(api.GET("/projects/{project_id}/models", { params: { path: { project_id: project.id } } })), [project.id]);
  const ready = (models.data ?? []).filter((m) => ["READY", "ACTIVE", "PUBLISHED"].includes(m.status));
  const [modelId, setModelId] = useState<number | "">("");
  const [result, setResult] = useState<Result | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const abort = useRef<AbortController | null>(null);
  const action = useAction();
  const chosen = modelId === "" ? ready[0]?.id : modelId;

  const extract = (e: FormEvent) => {
    e.preventDefault();
    const file = fileInput.current?.files?.[0];
    if (!file || !chosen) return;
    abort.current = new AbortController();
    setResult(null);
    void action.run(async () => {
      const form = new FormData();
      form.append("file", file);
      // The project's own workspace (by id), whichever one the top bar has picked.
      setResult(
        await postForm<Result>(
          `/organizations/${project.organization_id}/projects/${project.id}/models/${chosen}/extract?return_bboxes=true&return_annotated_pages=true`,
          form,
          abort.current!.signal,
        ),
      );
    });
  };

  return (
    <>
      <PageTitle>Extract fields</PageTitle>
      {project.type !== "LABEL" && <p className="notice">Extraction reads fields with a LABEL project's model; this project is {project.type}.</p>}
      <ErrorBox error={models.error} onRetry={models.reload} />
      {models.data && ready.length === 0 && (
        <p className="muted">
          No trained model in this project yet. Import PDFs, tag their fields in a <Link to={`/projects/${project.id}/labeling`}>labeling session</Link>, then{" "}
          <Link to={`/projects/${project.id}/models`}>train</Link>.
        </p>
      )}
      {note && <p className="notice">{note}</p>}
      {ready.length > 0 && !note && (
        <form onSubmit={extract} className="inline-form">
          <Field label="Model">
            {(fid) => (
              <select id={fid} value={chosen} onChange={(e) => setModelId(Number(e.target.value))}>
                <ModelOptions models={ready} />
              </select>
            )}
          </Field>
          <Field label="PDF or image">
            {(fid) => <input id={fid} ref={fileInput} type="file" required accept=".pdf,.png,.jpg,.jpeg,.tif,.tiff,.webp" />}
          </Field>
          <button type="submit" disabled={action.busy}>
            {action.busy ? "Reading…" : "Extract"}
          </button>
          <CancelButton busy={action.busy} abort={abort} />
        </form>
      )}
      <ErrorBox error={action.error} />
      {result &&
        result.documents.map((d, i) => (
          <section key={i} className="panel" aria-label={`Result for ${d.name}`}>
            <h2>{d.name}</h2>
            <p className="row">
              {d.all_required_fields_found ? <span className="badge badge-good">all required fields found</span> : <span className="badge badge-bad">required fields missing</span>}
              {d.all_confidence_thresholds_met ? (
                <span className="badge badge-good">confident</span>
              ) : (
                <span className="badge badge-busy">some fields below their threshold</span>
              )}
              {d.hitl && (
                <span>
                  Review: <StatusBadge status={d.hitl.status} />
                  {d.hitl.review_id && <> (review {d.hitl.review_id} waits in <Link to={`/projects/${project.id}/reviews`}>Reviews</Link>)</>}
                </span>
              )}
            </p>
            <div className="side-by-side">
              <div>
                {(d.annotated_pages ?? []).map((src, p) => (
                  <PageWithBoxes key={p} src={src} boxes={d.bboxes?.[p] ?? []} alt={`Page ${p + 1} of ${d.name} with the fields found boxed`} />
                ))}
                {(d.annotated_pages ?? []).length === 0 && <p className="muted">No page images (more than 20 pages).</p>}
              </div>
              <MatchesTable matches={d.matches} missing={d.missing_fields} />
            </div>
          </section>
        ))}
    </>
  );
}

const DATA_TYPES = ["text", "number", "amount", "date", "id", "email", "iban", "phone"];

type FieldSetting = { on: boolean; required: boolean; threshold: string; type: string };

/** A new review configuration: the model, live or not, and per field its threshold and type. */
function NewHitl({ projectId, onCreated }: { projectId: number; onCreated: () => void }) {
  const path = { params: { path: { project_id: projectId } } };
  const models = useLoad(() => unwrap(api.GET("/projects/{project_id}/models", path)), [projectId]);
  const labels = useLoad(() => unwrap(api.GET("/projects/{project_id}/labels", path)), [projectId]);
  const ready = (models.data ?? []).filter((m) => ["READY", "ACTIVE", "PUBLISHED"].includes(m.status));
  const [name, setName] = useState("");
  const [modelId, setModelId] = useState<number | "">("");
  const [live, setLive] = useState(true);
  const [fields, setFields] = useState<Record<string, FieldSetting>>({});
  const action = useAction();
  const setting = (label: string): FieldSetting => fields[label] ?? { on: false, required: false, threshold: "0.8", type: "text" };
  const change = (label: string, patch: Partial<FieldSetting>) => setFields({ ...fields, [label]: { ...setting(label), ...patch } });
  const create = (e: FormEvent) => {
    e.preventDefault();
    const chosen = modelId === "" ? ready[0]?.id : modelId;
    void action.run(async () => {
      const settings: Record<string, unknown> = {};
      for (const [label, f] of Object.entries(fields)) {
        if (f.on) settings[label] = { required: f.required, confidence_threshold: Number(f.threshold), data_type: f.type };
      }
      await unwrap(api.POST("/projects/{project_id}/hitls", { ...path, body: { name, model_id: chosen, is_live: live, labels: settings as never } }));
      setName("");
      setFields({});
      onCreated();
    });
  };
  if (models.data && ready.length === 0) return <p className="muted">Train a model first: a review configuration sends its unsure extractions to a person.</p>;
  return (
    <section className="panel" aria-labelledby="new-hitl-h">
      <h2 id="new-hitl-h">New review configuration</h2>
      <ErrorBox error={models.error ?? labels.error} />
      <form onSubmit={create} className="stack">
        <div className="inline-form">
          <Field label="Configuration name">{(fid) => <input id={fid} required value={name} onChange={(e) => setName(e.target.value)} />}</Field>
          <Field label="Extraction model">
            {(fid) => (
              <select id={fid} value={modelId === "" ? (ready[0]?.id ?? "") : modelId} onChange={(e) => setModelId(Number(e.target.value))}>
                <ModelOptions models={ready} />
              </select>
            )}
          </Field>
          <label className="check">
            <input type="checkbox" checked={live} onChange={(e) => setLive(e.target.checked)} /> Live (extractions create reviews)
          </label>
        </div>
        {(labels.data ?? []).length > 0 && (
          <Table head={["Field", "Required", "Confidence at least", "Type"]} caption="Fields to check">
            {labels.data!.map((l) => {
              const f = setting(l.name);
              return (
                <tr key={l.id}>
                  <th scope="row">
                    <label className="check">
                      <input type="checkbox" checked={f.on} onChange={(e) => change(l.name, { on: e.target.checked })} /> <span dir="auto">{l.name}</span>
                    </label>
                  </th>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`${l.name} is required`}
                      disabled={!f.on}
                      checked={f.required}
                      onChange={(e) => change(l.name, { required: e.target.checked })}
                    />
                  </td>
                  <td>
                    <input
                      type="number"
                      min={0}
                      max={1}
                      step={0.001}
                      aria-label={`Confidence threshold of ${l.name}`}
                      disabled={!f.on}
                      value={f.threshold}
                      onChange={(e) => change(l.name, { threshold: e.target.value })}
                    />
                  </td>
                  <td>
                    <select aria-label={`Type of ${l.name}`} disabled={!f.on} value={f.type} onChange={(e) => change(l.name, { type: e.target.value })}>
                      {DATA_TYPES.map((t) => (
                        <option key={t}>{t}</option>
                      ))}
                    </select>
                  </td>
                </tr>
              );
            })}
          </Table>
        )}
        <ErrorBox error={action.error} />
        <button type="submit" disabled={action.busy}>
          Create configuration
        </button>
      </form>
    </section>
  );
}

/** Reviews a page of the queue shows, newest first. */
const REVIEWS_PAGE = 50;

export function ReviewsPage() {
  const { project, role } = useProject();
  const configNote = roleNote(role, NEEDS.manage, "Making a review configuration");
  const path = { params: { path: { project_id: project.id } } };
  const hitls = useLoad(() => unwrap(api.GET("/projects/{project_id}/hitls", path)), [project.id]);
  const [query, setQuery] = useQuery();
  const inAddress = query.get("config") ?? undefined;
  const asked = isId(inAddress) && hitls.data?.some((h) => h.id === Number(inAddress)) ? Number(inAddress) : null;
  // With none in the address, the page opens where a person is needed: see configurationToOpen.
  const opening = useLoad(
    () =>
      asked !== null || !hitls.data
        ? Promise.resolve(null)
        : configurationToOpen(
            hitls.data.map((h) => h.id),
            async (hitlId) =>
              hasPendingReview(
                await unwrap(
                  api.GET("/projects/{project_id}/hitls/{hitl_id}/reviews", {
                    params: { path: { project_id: project.id, hitl_id: hitlId }, query: { status: "PENDING", limit: 1 } },
                  }),
                ),
              ),
          ),
    [project.id, asked, hitls.data],
  );
  const chosen = asked ?? opening.data ?? undefined;
  // The choice goes into the address (replacing this entry), so a reload or a link keeps it.
  useEffect(() => {
    if (asked === null && opening.data != null) setQuery({ config: opening.data }, true);
  }, [asked, opening.data, setQuery]);
  const [reviewOffset, setReviewOffset] = useOffset(`${project.id}/${chosen ?? ""}`);
  const reviews = useLoad(
    () =>
      chosen
        ? arrayPage(
            (offset, limit) =>
              unwrap(api.GET("/projects/{project_id}/hitls/{hitl_id}/reviews", { params: { path: { project_id: project.id, hitl_id: chosen }, query: { offset, limit } } })),
            reviewOffset,
            REVIEWS_PAGE,
          )
        : Promise.resolve(null),
    [project.id, chosen, reviewOffset],
  );
  return (
    <>
      <PageTitle>Reviews</PageTitle>
      <ErrorBox error={hitls.error} onRetry={hitls.reload} />
      {hitls.loading && !hitls.data && <Loading />}
      {hitls.data && hitls.data.length === 0 && (
        <Empty>No review configuration in this project yet.</Empty>
      )}
      {hitls.data && hitls.data.length > 0 && (
        <>
          <Field label="Configuration">
            {(fid) => (
              <select id={fid} value={chosen ?? ""} disabled={chosen === undefined} onChange={(e) => setQuery({ config: Number(e.target.value) })}>
                {hitls.data!.map((h) => (
                  <option key={h.id} value={h.id}>
                    {h.name} {h.is_live ? "(live)" : ""}
                  </option>
                ))}
              </select>
            )}
          </Field>
          {chosen === undefined && <Loading label="Looking for pending reviews" />}
          <ErrorBox error={reviews.error} onRetry={reviews.reload} />
          {reviews.data && reviews.data.items.length === 0 && reviews.data.offset === 0 && <Empty>The queue is empty.</Empty>}
          {reviews.data && reviews.data.items.length > 0 && (
            <Table head={["Document", "First field to check", "Status", "Created"]} label="Review queue">
              {reviews.data.items.map((r) => (
                <tr key={r.review_id}>
                  <td>
                    <Link to={`/projects/${project.id}/reviews/${r.hitl_id}/${r.review_id}`} dir="auto">
                      {r.document_name}
                    </Link>{" "}
                    (page {r.page_num})
                  </td>
                  <td>
                    {r.label ?? "–"}
                    {r.confidence_threshold != null && ` (threshold ${exactPercent(r.confidence_threshold)})`}
                  </td>
                  <td>
                    <StatusBadge status={r.status} />
                  </td>
                  <td>{when(r.created)}</td>
                </tr>
              ))}
            </Table>
          )}
          {reviews.data && <Pager page={reviews.data} size={REVIEWS_PAGE} what="Reviews" onChange={setReviewOffset} />}
        </>
      )}
      {configNote ? <p className="notice">{configNote}</p> : <NewHitl projectId={project.id} onCreated={hitls.reload} />}
    </>
  );
}

export function ReviewPage() {
  const { project, role } = useProject();
  const { status: me } = useAuth();
  const params = useParams();
  const hitlId = Number(params.hitlId);
  const reviewId = Number(params.reviewId);
  const review = useLoad(
    () =>
      unwrap(
        api.GET("/projects/{project_id}/hitls/{hitl_id}/reviews/{review_id}", {
          params: { path: { project_id: project.id, hitl_id: hitlId, review_id: reviewId } },
        }),
      ),
    [project.id, hitlId, reviewId],
  );
  const [values, setValues] = useState<Record<string, string> | null>(null);
  const action = useAction();
  const r = review.data;
  const data = (r?.data ?? {}) as {
    extracted?: { matches?: Match[]; missing_fields?: string[]; bboxes?: Box[][][] };
    corrected?: Record<string, string> | null;
    pages?: ReadPage[] | null;
  };
  const pages = data.pages ?? [];
  const matches = data.extracted?.matches ?? [];
  const missing = data.extracted?.missing_fields ?? [];
  const initial: Record<string, string> = {};
  for (const m of matches) initial[m.label] ??= m.value ?? m.text;
  for (const f of missing) initial[f] ??= "";
  Object.assign(initial, data.corrected ?? {});
  const current = values ?? initial;
  const submit = (status: "APPROVED" | "REJECTED") => (e?: FormEvent) => {
    e?.preventDefault();
    void action.run(async () => {
      await unwrap(
        api.PUT("/projects/{project_id}/hitls/{hitl_id}/reviews/{review_id}", {
          params: { path: { project_id: project.id, hitl_id: hitlId, review_id: reviewId } },
          body: { status, values: current },
        }),
      );
      review.reload();
      setValues(null);
    });
  };
  const pending = r?.status === "PENDING";
  // A review that waits for someone is theirs or a manager's to submit (the server refuses others).
  const waitsForAnother = r?.user_id != null && r.user_id !== me?.user.id && !atLeast(role, NEEDS.manage);
  const submitNote =
    roleNote(role, NEEDS.tag, "Submitting a review") ??
    (waitsForAnother ? `This review waits for its assignee (user ${r?.user_id}); only they or a manager may submit it.` : null);
  return (
    <>
      <p className="crumbs">
        <Link to={`/projects/${project.id}/reviews`}>Review queue</Link>
      </p>
      <PageTitle>{r ? `Review of ${r.document_name}` : "Review"}</PageTitle>
      <ErrorBox error={review.error} onRetry={review.reload} />
      {!r && !review.error && <Loading />}
      {r && (
        <div className="side-by-side">
          <section className="panel" aria-label="What was extracted">
            <p>
              <StatusBadge status={r.status} /> page {r.page_num} · {when(r.created)}
            </p>
            {pages.map((page, p) => (
              <PageFromWords
                key={p}
                page={page}
                boxes={data.extracted?.bboxes?.[p] ?? []}
                label={`Page ${page.number} of ${r.document_name}, drawn from its words, with the fields found boxed`}
              />
            ))}
            <MatchesTable matches={matches} missing={missing} />
          </section>
          <section className="panel" aria-labelledby="values-h">
            <h2 id="values-h">Values</h2>
            <form onSubmit={submit("APPROVED")} className="stack">
              {Object.keys(current).length === 0 && <Empty>No fields.</Empty>}
              {Object.entries(current).map(([k, v]) => (
                <Field key={k} label={k}>
                  {(fid) => (
                    <input id={fid} dir="auto" value={v} disabled={!pending || !!submitNote} onChange={(e) => setValues({ ...current, [k]: e.target.value })} />
                  )}
                </Field>
              ))}
              <ErrorBox error={action.error} />
              {pending && submitNote ? (
                <p className="notice">{submitNote}</p>
              ) : pending ? (
                <div className="row">
                  <button type="submit" disabled={action.busy}>
                    Approve
                  </button>
                  <button type="button" className="secondary danger" disabled={action.busy} onClick={submit("REJECTED")}>
                    Reject
                  </button>
                </div>
              ) : (
                <p className="muted">This review was submitted.</p>
              )}
            </form>
          </section>
        </div>
      )}
    </>
  );
}

/** Notifications a page shows, newest first. */
const NOTIFICATIONS_PAGE = 50;

export function NotificationsPage() {
  const [offset, setOffset] = useOffset("notifications");
  const list = useLoad(
    () => arrayPage((o, limit) => unwrap(api.GET("/notifications", { params: { query: { offset: o, limit } } })), offset, NOTIFICATIONS_PAGE),
    [offset],
  );
  const action = useAction();
  const setRead = (n: Schemas["NotificationDto"], read: boolean) =>
    void action.run(async () => {
      await unwrap(
        api.PUT("/notifications/{notification_id}", { params: { path: { notification_id: n.id } }, body: { read: read ? new Date().toISOString() : "" } }),
      );
      list.reload();
    });
  return (
    <>
      <PageTitle>Notifications</PageTitle>
      <ErrorBox error={list.error} onRetry={list.reload} />
      <ErrorBox error={action.error} />
      {list.loading && !list.data && <Loading />}
      {list.data && list.data.items.length === 0 && list.data.offset === 0 && <Empty>No notifications.</Empty>}
      <ul className="plain">
        {(list.data?.items ?? []).map((n) => (
          <li key={n.id} className="panel">
            <h2>
              {n.title} {!n.read && <span className="badge badge-busy">unread</span>}
            </h2>
            <p dir="auto">{n.text}</p>
            <p className="muted">
              {when(n.created)} ·{" "}
              <button type="button" className="link" onClick={() => setRead(n, !n.read)}>
                {n.read ? "Mark unread" : "Mark read"}
              </button>
            </p>
          </li>
        ))}
      </ul>
      {list.data && <Pager page={list.data} size={NOTIFICATIONS_PAGE} what="Notifications" onChange={setOffset} />}
    </>
  );
}
