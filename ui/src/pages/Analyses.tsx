// Analyses: a file read by a model as a job, with progress; the tagged documents filtered by
// class and label; the distribution of classes and labels as charts; export. Also quick
// ad-hoc analysis of pasted text.
import { useCallback, useMemo, useRef, useState, type FormEvent } from "react";
import { Link, useNavigate, useParams, useSearchParams } from "react-router";
import { api, download, unwrap, type Schemas } from "../api/client";
import { useAuth, useRoles } from "../auth";
import { isFailed, isFinal, percent, when } from "../lib/format";
import { useAction, useLoad, useOffset, usePoll, useQuery } from "../lib/hooks";
import { readIds, readOffset } from "../lib/links";
import { fromPaged, newestPage, readAll } from "../lib/paging";
import { NEEDS, roleNote } from "../lib/roles";
import { BarChart } from "../components/charts";
import { Empty, ErrorBox, Field, Loading, ModelOptions, PageTitle, Pager, Progress, StatusBadge, Table } from "../components/ui";
import { ColumnPicker, UploadForm, useTableUpload } from "../components/upload";

type Analysis = Schemas["AnalysisDto"];
const RUNNING = (a: Analysis) => !isFinal(a.status);

/** The workspace's models that can analyse (the server lists one workspace's, page by page). */
function useReadyModels() {
  const { workspace } = useAuth();
  const name = workspace?.name;
  return useLoad(async () => {
    if (!name) return [];
    const models = await readAll(async (offset, limit) => {
      const page = await unwrap(api.GET("/organizations/{organization}/models", { params: { path: { organization: name }, query: { offset, limit } } }));
      return { items: page.models, hasMore: page.has_more };
    });
    return models.filter((m) => ["READY", "ACTIVE", "PUBLISHED"].includes(m.status) && m.type !== "BASE");
  }, [name]);
}

/** Analyses a page of the list shows. */
const ANALYSES_PAGE = 50;

export function AnalysesPage() {
  const [search] = useSearchParams();
  const { workspace } = useAuth();
  // An analysis of a file stores its results (refused in a read-only workspace); a text tried
  // here is answered within the request and stores nothing (a USER of a read-only one may).
  const roles = useRoles(workspace?.id);
  const analyseNote = roleNote(roles.use, NEEDS.work, "Analysing with this workspace's models");
  const fileNote = roleNote(roles.change, NEEDS.work, "Analysing a file, which stores its results,");
  const navigate = useNavigate();
  const models = useReadyModels();
  // The list answers oldest first with no count: the page of the newest is found from its end,
  // starting from the count read last time.
  const [listOffset, setListOffset] = useOffset("analyses");
  const knownTotal = useRef(0);
  const analyses = usePoll(
    async () => {
      const page = await newestPage(
        (offset, limit) => unwrap(api.GET("/analyses", { params: { query: { offset, limit } } })),
        listOffset,
        ANALYSES_PAGE,
        knownTotal.current,
      );
      knownTotal.current = page.total;
      return page;
    },
    (page) => !!page?.items.some(RUNNING),
    [listOffset],
    2000,
  );
  const [modelId, setModelId] = useState<number | "">(search.get("model") ? Number(search.get("model")) : "");
  const action = useAction();
  const file = useTableUpload("/analyses/upload", action);
  const { uploaded, headerFirst, column, name, setName } = file;
  const [text, setText] = useState("");
  const [adhoc, setAdhoc] = useState<Schemas["AdHocAnalysis"] | null>(null);

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
  const list = analyses.data?.items ?? [];

  return (
    <>
      <PageTitle>Analyses</PageTitle>
      <ErrorBox error={analyses.error} onRetry={analyses.reload} />
      {analyses.loading && !analyses.data && <Loading />}
      {analyses.data && analyses.data.total === 0 && <Empty>No analyses yet.</Empty>}
      {list.length > 0 && (
        <Table head={["Analysis", "Documents", "Status", "Created"]} label="Analyses">
          {list.map((a) => (
            <tr key={a.id}>
              <td>
                <Link to={`/analyses/${a.id}`} dir="auto">
                  {a.name || `Analysis ${a.id}`}
                </Link>
              </td>
              <td>{a.document_count}</td>
              <td>
                <StatusBadge status={a.status} />
                {RUNNING(a) && <Progress value={a.progress} label={`Progress of ${a.name}`} />}
              </td>
              <td>{when(a.created)}</td>
            </tr>
          ))}
        </Table>
      )}
      {analyses.data && <Pager page={analyses.data} size={ANALYSES_PAGE} what="Analyses" onChange={setListOffset} />}

      <section className="panel" aria-labelledby="new-analysis-h">
        <h2 id="new-analysis-h">{fileNote && !analyseNote ? "Analyse a text" : "Analyse a file"}</h2>
        <ErrorBox error={models.error} onRetry={models.reload} />
        {analyseNote && <p className="notice">{analyseNote}</p>}
        {!analyseNote && models.data && models.data.length === 0 && (
          <p className="muted">No trained model in this workspace yet: train one in a project first.</p>
        )}
        {!analyseNote && models.data && models.data.length > 0 && (
          <>
            <Field label="Model">
              {(fid) => (
                <select id={fid} value={modelId} onChange={(e) => setModelId(e.target.value ? Number(e.target.value) : "")}>
                  <option value="">Choose a model</option>
                  <ModelOptions models={models.data!} showType />
                </select>
              )}
            </Field>
            {fileNote ? (
              <p className="notice">{fileNote} A text tried below is analysed without being stored.</p>
            ) : (
              <UploadForm upload={file} busy={action.busy} label="File to analyse" accept=".csv,.tsv,.txt,.json,.jsonl,.xlsx" />
            )}
            {!fileNote && uploaded && (
              <form onSubmit={start} className="stack">
                <ColumnPicker upload={file} preview={uploaded.preview} />
                <Field label="Name of the analysis">
                  {(fid) => <input id={fid} required value={name} onChange={(e) => setName(e.target.value)} />}
                </Field>
                <div className="row">
                  <button type="submit" disabled={action.busy || modelId === ""}>
                    Start the analysis
                  </button>
                  <button type="button" className="secondary" onClick={() => file.setUploaded(null)}>
                    Start over
                  </button>
                </div>
                {modelId === "" && <p className="muted">Choose a model above first.</p>}
              </form>
            )}
            {!fileNote && <h3>Or try a text</h3>}
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
                      “<span dir="auto">{s.text}</span>” → {s.tags.map((t) => `${[t.class, t.label].filter(Boolean).join(" · ")} (${percent(t.confidence)})`).join(", ") || "no tag"}
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

/** A bar chart of how many segments carry each class or label, under its heading. */
function SegmentCounts({ heading, title, counts }: { heading: string; title: string; counts: [string, number][] }) {
  return (
    <div>
      <h3>{heading}</h3>
      <BarChart
        title={title}
        names={counts.map(([n]) => n)}
        series={[{ name: "segments", values: counts.map(([, c]) => c) }]}
        max={Math.max(...counts.map(([, c]) => c))}
        format={(v) => String(v)}
      />
    </div>
  );
}

/** A filter of an analysis's results to one of its classes or labels (the value "" for any). */
function NameFilter({
  label,
  any,
  value,
  names,
  onChange,
}: {
  label: string;
  any: string;
  value: number | "";
  names: { id: number; name: string }[];
  onChange: (value: string) => void;
}) {
  return (
    <Field label={label}>
      {(fid) => (
        <select id={fid} value={value} onChange={(e) => onChange(e.target.value)}>
          <option value="">{any}</option>
          {names.map((n) => (
            <option key={n.id} value={n.id}>
              {n.name}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

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
  // The page of results and the filters are in the address (?offset=50&class=3&label=2).
  const [query, setQuery] = useQuery();
  const cls: number | "" = readIds(query.get("class")).at(0) ?? "";
  const lab: number | "" = readIds(query.get("label")).at(0) ?? "";
  const offset = readOffset(query.get("offset"));
  const setOffset = useCallback((o: number) => setQuery({ offset: o }), [setQuery]);
  const action = useAction();
  const docs = useLoad(
    () =>
      finished
        ? unwrap(
            api.GET("/analyses/{analysis_id}/documents", {
              params: {
                path: { analysis_id: id },
                query: {
                  details: "segments,tags",
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
  // Counted by the server over every document of the finished analysis.
  const dist = useMemo(() => {
    const pairs = (counts?: Array<{ name: string; count: number }>) => (counts ?? []).map((c): [string, number] => [c.name, c.count]);
    return { classes: pairs(a?.tag_counts?.classes), labels: pairs(a?.tag_counts?.labels) };
  }, [a]);

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
            {a && <p className="muted">Tags in all {a.document_count} documents.</p>}
            <div className="grid-2">
              {dist.classes.length > 0 && <SegmentCounts heading="Classes" title="Segments per class" counts={dist.classes} />}
              {dist.labels.length > 0 && <SegmentCounts heading="Labels" title="Segments per label" counts={dist.labels} />}
            </div>
          </section>
          <section className="panel" aria-labelledby="results-h">
            <h2 id="results-h">Results</h2>
            <div className="inline-form">
              {(a?.classes?.length ?? 0) > 0 && (
                <NameFilter label="Class" any="Any class" value={cls} names={a!.classes!} onChange={(v) => setQuery({ class: v, offset: 0 })} />
              )}
              {(a?.labels?.length ?? 0) > 0 && (
                <NameFilter label="Label" any="Any label" value={lab} names={a!.labels!} onChange={(v) => setQuery({ label: v, offset: 0 })} />
              )}
            </div>
            <ErrorBox error={docs.error} onRetry={docs.reload} />
            {docs.loading && !docs.data && <Loading />}
            {docs.data && docs.data.documents.length === 0 && <Empty>No documents match.</Empty>}
            {docs.data && docs.data.documents.length > 0 && (
              <Table head={["Segment", "Tags (confidence)"]} label="Results" className="results">
                {docs.data.documents.flatMap((d) =>
                  (d.segments ?? [{ text: d.text, span: [0, 0], tags: [] }]).map((s, j) => (
                    <tr key={`${d.id}-${j}`}>
                      <td dir="auto">{s.text}</td>
                      <td>
                        {(s.tags ?? []).map((t, k) => (
                          <span key={k} className="tag">
                            <span dir="auto">{[t.class, t.label].filter(Boolean).join(" · ")}</span> <span className="confidence">{percent(t.confidence)}</span>
                            &nbsp;
                          </span>
                        ))}
                      </td>
                    </tr>
                  )),
                )}
              </Table>
            )}
            {docs.data && <Pager page={fromPaged(docs.data.documents, docs.data)} size={PAGE} what="Documents" onChange={setOffset} />}
          </section>
        </>
      )}
    </>
  );
}
