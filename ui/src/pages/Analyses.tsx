// Analyses: a file read by a model as a job, with progress; the tagged documents filtered by
// class and label; the distribution of classes and labels as charts; export. Also quick
// ad-hoc analysis of pasted text.
import { useMemo, useRef, useState, type FormEvent } from "react";
import { Link, useNavigate, useParams, useSearchParams } from "react-router";
import { api, download, postForm, unwrap, type Schemas } from "../api/client";
import { useAuth } from "../auth";
import { isFailed, isFinal, percent, tally, when } from "../lib/format";
import { useAction, useLoad, usePoll } from "../lib/hooks";
import { BarChart } from "../components/charts";
import { Empty, ErrorBox, Field, Loading, PageTitle, Progress, StatusBadge } from "../components/ui";
import { PreviewTable } from "./Import";
import { guessColumn } from "../lib/columns";

type Analysis = Schemas["AnalysisDto"];
const RUNNING = (a: Analysis) => !isFinal(a.status);

function useReadyModels() {
  const { workspace } = useAuth();
  return useLoad(async () => {
    const page = await unwrap(api.GET("/models", { params: { query: { limit: 1000 } } }));
    return page.models.filter(
      (m) => ["READY", "ACTIVE", "PUBLISHED"].includes(m.status) && m.type !== "BASE" && (!workspace || m.organization_id === workspace.id),
    );
  }, [workspace?.id]);
}

export function AnalysesPage() {
  const [search] = useSearchParams();
  const navigate = useNavigate();
  const models = useReadyModels();
  const analyses = usePoll(
    () => unwrap(api.GET("/analyses", { params: { query: { limit: 1000 } } })),
    (list) => !!list?.some(RUNNING),
    [],
    2000,
  );
  const [modelId, setModelId] = useState<number | "">(search.get("model") ? Number(search.get("model")) : "");
  const [uploaded, setUploaded] = useState<Schemas["UploadedFileDto"] | null>(null);
  const [fileName, setFileName] = useState("");
  const [headerFirst, setHeaderFirst] = useState(true);
  const [column, setColumn] = useState<number | null>(null);
  const [name, setName] = useState("");
  const fileInput = useRef<HTMLInputElement>(null);
  const abort = useRef<AbortController | null>(null);
  const action = useAction();
  const [text, setText] = useState("");
  const [adhoc, setAdhoc] = useState<Schemas["AdHocAnalysis"] | null>(null);

  const upload = (e: FormEvent) => {
    e.preventDefault();
    const file = fileInput.current?.files?.[0];
    if (!file) return;
    abort.current = new AbortController();
    void action.run(async () => {
      const form = new FormData();
      form.append("file", file);
      const answer = await postForm<Schemas["UploadedFileDto"]>("/analyses/upload", form, abort.current!.signal);
      setUploaded(answer);
      setFileName(file.name);
      setName(file.name.replace(/\.[^.]+$/, ""));
      setColumn(guessColumn(answer.preview, true));
    });
  };
  const start = (e: FormEvent) => {
    e.preventDefault();
    if (!uploaded || modelId === "") return;
    void action.run(async () => {
      const a = await unwrap(
        api.POST("/analyses", {
          body: { model_id: modelId, file_id: uploaded.id, column: column ?? 0, header_first: headerFirst, name },
        }),
      );
      navigate(`/analyses/${a.id}`);
    });
  };
  const analyse = (e: FormEvent) => {
    e.preventDefault();
    if (modelId === "") return;
    void action.run(async () => {
      setAdhoc(await unwrap(api.POST("/analyze", { body: { model_id: modelId, documents: [{ text }] } })));
    });
  };
  const list = [...(analyses.data ?? [])].sort((a, b) => b.id - a.id);

  return (
    <>
      <PageTitle>Analyses</PageTitle>
      <ErrorBox error={analyses.error} onRetry={analyses.reload} />
      {analyses.loading && !analyses.data && <Loading />}
      {analyses.data && list.length === 0 && <Empty>No analyses yet.</Empty>}
      {list.length > 0 && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Analysis</th>
                <th scope="col">Documents</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {list.map((a) => (
                <tr key={a.id}>
                  <td>
                    <Link to={`/analyses/${a.id}`}>{a.name || `Analysis ${a.id}`}</Link>
                  </td>
                  <td>{a.document_count}</td>
                  <td>
                    <StatusBadge status={a.status} />
                    {RUNNING(a) && <Progress value={a.progress} label={`Progress of ${a.name}`} />}
                  </td>
                  <td>{when(a.created)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <section className="panel" aria-labelledby="new-analysis-h">
        <h2 id="new-analysis-h">Analyse a file</h2>
        <ErrorBox error={models.error} onRetry={models.reload} />
        {models.data && models.data.length === 0 && (
          <p className="muted">No trained model in this workspace yet: train one in a project first.</p>
        )}
        {models.data && models.data.length > 0 && (
          <>
            <Field label="Model">
              {(fid) => (
                <select id={fid} value={modelId} onChange={(e) => setModelId(e.target.value ? Number(e.target.value) : "")}>
                  <option value="">Choose a model</option>
                  {models.data!.map((m) => (
                    <option key={m.id} value={m.id}>
                      {m.display_name} ({m.type})
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <form onSubmit={upload} className="inline-form">
              <Field label="File to analyse">
                {(fid) => (
                  <input id={fid} ref={fileInput} type="file" required accept=".csv,.tsv,.txt,.json,.jsonl,.xlsx" onChange={() => setUploaded(null)} />
                )}
              </Field>
              <button type="submit" disabled={action.busy}>
                Upload and preview
              </button>
              {action.busy && (
                <button type="button" className="secondary" onClick={() => abort.current?.abort()}>
                  Cancel
                </button>
              )}
            </form>
            {uploaded && (
              <form onSubmit={start} className="stack">
                <label className="check">
                  <input
                    type="checkbox"
                    checked={headerFirst}
                    onChange={(e) => {
                      setHeaderFirst(e.target.checked);
                      setColumn(guessColumn(uploaded.preview, e.target.checked));
                    }}
                  />
                  The first row holds the column names
                </label>
                <fieldset>
                  <legend>Pick the column with the text</legend>
                  <PreviewTable preview={uploaded.preview} headerFirst={headerFirst} column={column} onPick={setColumn} caption={`Preview of ${fileName}`} />
                </fieldset>
                <Field label="Name of the analysis">
                  {(fid) => <input id={fid} required value={name} onChange={(e) => setName(e.target.value)} />}
                </Field>
                <div className="row">
                  <button type="submit" disabled={action.busy || modelId === ""}>
                    Start the analysis
                  </button>
                  <button type="button" className="secondary" onClick={() => setUploaded(null)}>
                    Start over
                  </button>
                </div>
                {modelId === "" && <p className="muted">Choose a model above first.</p>}
              </form>
            )}
            <h3>Or try a text</h3>
            <form onSubmit={analyse} className="stack">
              <Field label="Text to analyse">
                {(fid) => <textarea id={fid} rows={3} value={text} onChange={(e) => setText(e.target.value)} />}
              </Field>
              <button type="submit" disabled={action.busy || !text.trim() || modelId === ""}>
                Analyse text
              </button>
            </form>
            {adhoc && (
              <ul className="plain" aria-label="Result">
                {adhoc.documents.flatMap((d, i) =>
                  d.segments.map((s, j) => (
                    <li key={`${i}-${j}`}>
                      “{s.text}” → {s.tags.map((t) => `${[t.class, t.label].filter(Boolean).join(" · ")} (${percent(t.confidence)})`).join(", ") || "no tag"}
                    </li>
                  )),
                )}
              </ul>
            )}
          </>
        )}
        <ErrorBox error={action.error} />
      </section>
    </>
  );
}

const PAGE = 50;

export function AnalysisPage() {
  const id = Number(useParams().analysisId);
  const navigate = useNavigate();
  const analysis = usePoll(
    () => unwrap(api.GET("/analyses/{analysis_id}", { params: { path: { analysis_id: id } } })),
    (a) => !a || RUNNING(a),
    [id],
    1500,
  );
  const a = analysis.data;
  const finished = !!a && isFinal(a.status) && !isFailed(a.status);
  const [cls, setCls] = useState<number | "">("");
  const [lab, setLab] = useState<number | "">("");
  const [offset, setOffset] = useState(0);
  const action = useAction();
  const docs = useLoad(
    () =>
      finished
        ? unwrap(
            api.GET("/analyses/{analysis_id}/documents", {
              params: {
                path: { analysis_id: id },
                query: {
                  details: true,
                  offset,
                  limit: PAGE,
                  classes: cls === "" ? undefined : String(cls),
                  labels: lab === "" ? undefined : String(lab),
                },
              },
            }),
          )
        : Promise.resolve(null),
    [id, finished, cls, lab, offset],
  );
  const all = useLoad(
    () =>
      finished
        ? unwrap(api.GET("/analyses/{analysis_id}/documents", { params: { path: { analysis_id: id }, query: { details: true, limit: 1000 } } }))
        : Promise.resolve(null),
    [id, finished],
  );
  const dist = useMemo(() => {
    const tags = (all.data?.documents ?? []).flatMap((d) => (d.segments ?? []).flatMap((s) => s.tags));
    return { classes: tally(tags.map((t) => t.class)), labels: tally(tags.map((t) => t.label)), docs: all.data?.documents.length ?? 0, more: all.data?.has_more };
  }, [all.data]);

  return (
    <>
      <p className="crumbs">
        <Link to="/analyses">Analyses</Link>
      </p>
      <PageTitle>{a ? a.name || `Analysis ${a.id}` : "Analysis"}</PageTitle>
      <ErrorBox error={analysis.error} onRetry={analysis.reload} />
      <ErrorBox error={action.error} />
      {!a && !analysis.error && <Loading onCancel={() => navigate("/analyses")} />}
      {a && (
        <section className="panel" aria-live="polite">
          <p>
            <StatusBadge status={a.status} /> {a.type} · {a.document_count} documents · created {when(a.created)}
            {a.finished && ` · finished ${when(a.finished)}`}
          </p>
          {RUNNING(a) && (
            <>
              <Progress value={a.progress} label="Analysis progress" />
              {analysis.polling ? (
                <button type="button" className="link" onClick={analysis.stop}>
                  Stop watching
                </button>
              ) : (
                <button type="button" className="link" onClick={analysis.reload}>
                  Refresh
                </button>
              )}
            </>
          )}
          {a.failure && (
            <p className="error" role="alert">
              {a.failure}
            </p>
          )}
          {finished && (
            <p className="row">
              Export:
              {["csv", "json", "jsonl", "xlsx"].map((f) => (
                <button
                  key={f}
                  type="button"
                  className="link"
                  aria-label={`Download the results as ${f}`}
                  onClick={() => void action.run(() => download(`/analyses/${id}/documents/download?format=${f}`, `${a.name || "analysis"}.${f}`))}
                >
                  {f.toUpperCase()}
                </button>
              ))}
            </p>
          )}
        </section>
      )}
      {finished && (
        <>
          <section className="panel" aria-labelledby="dist-h">
            <h2 id="dist-h">Distribution</h2>
            <ErrorBox error={all.error} onRetry={all.reload} />
            {all.data && (
              <p className="muted">
                Tags in {dist.more ? `the first ${dist.docs}` : `all ${dist.docs}`} documents.
              </p>
            )}
            <div className="grid-2">
              {dist.classes.length > 0 && (
                <div>
                  <h3>Classes</h3>
                  <BarChart
                    title="Segments per class"
                    names={dist.classes.map(([n]) => n)}
                    series={[{ name: "segments", values: dist.classes.map(([, c]) => c) }]}
                    max={Math.max(...dist.classes.map(([, c]) => c))}
                    format={(v) => String(v)}
                  />
                </div>
              )}
              {dist.labels.length > 0 && (
                <div>
                  <h3>Labels</h3>
                  <BarChart
                    title="Segments per label"
                    names={dist.labels.map(([n]) => n)}
                    series={[{ name: "segments", values: dist.labels.map(([, c]) => c) }]}
                    max={Math.max(...dist.labels.map(([, c]) => c))}
                    format={(v) => String(v)}
                  />
                </div>
              )}
            </div>
          </section>
          <section className="panel" aria-labelledby="results-h">
            <h2 id="results-h">Results</h2>
            <div className="inline-form">
              {(a?.classes?.length ?? 0) > 0 && (
                <Field label="Class">
                  {(fid) => (
                    <select
                      id={fid}
                      value={cls}
                      onChange={(e) => {
                        setCls(e.target.value ? Number(e.target.value) : "");
                        setOffset(0);
                      }}
                    >
                      <option value="">Any class</option>
                      {a!.classes!.map((c) => (
                        <option key={c.id} value={c.id}>
                          {c.name}
                        </option>
                      ))}
                    </select>
                  )}
                </Field>
              )}
              {(a?.labels?.length ?? 0) > 0 && (
                <Field label="Label">
                  {(fid) => (
                    <select
                      id={fid}
                      value={lab}
                      onChange={(e) => {
                        setLab(e.target.value ? Number(e.target.value) : "");
                        setOffset(0);
                      }}
                    >
                      <option value="">Any label</option>
                      {a!.labels!.map((l) => (
                        <option key={l.id} value={l.id}>
                          {l.name}
                        </option>
                      ))}
                    </select>
                  )}
                </Field>
              )}
            </div>
            <ErrorBox error={docs.error} onRetry={docs.reload} />
            {docs.loading && !docs.data && <Loading />}
            {docs.data && docs.data.documents.length === 0 && <Empty>No documents match.</Empty>}
            {docs.data && docs.data.documents.length > 0 && (
              <div className="table-wrap">
                <table className="results">
                  <thead>
                    <tr>
                      <th scope="col">Segment</th>
                      <th scope="col">Tags (confidence)</th>
                    </tr>
                  </thead>
                  <tbody>
                    {docs.data.documents.flatMap((d) =>
                      (d.segments ?? [{ text: d.text, span: [0, 0], tags: [] }]).map((s, j) => (
                        <tr key={`${d.id}-${j}`}>
                          <td>{s.text}</td>
                          <td>
                            {s.tags.map((t, k) => (
                              <span key={k} className="tag">
                                {[t.class, t.label].filter(Boolean).join(" · ")} <span className="confidence">{percent(t.confidence)}</span>
                                &nbsp;
                              </span>
                            ))}
                          </td>
                        </tr>
                      )),
                    )}
                  </tbody>
                </table>
              </div>
            )}
            {docs.data && (
              <div className="row">
                <button type="button" className="secondary" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
                  Previous page
                </button>
                <span>
                  Documents {docs.data.count === 0 ? 0 : offset + 1}–{offset + docs.data.count}
                </span>
                <button type="button" className="secondary" disabled={!docs.data.has_more} onClick={() => setOffset(offset + PAGE)}>
                  Next page
                </button>
              </div>
            )}
          </section>
        </>
      )}
    </>
  );
}
