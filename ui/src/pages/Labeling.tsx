// The project's labeling and correction sessions, and forms to start them.
import { useRef, useState, type FormEvent } from "react";
import { Link, useNavigate } from "react-router";
import { api, download, postForm, unwrap, type Schemas } from "../api/client";
import { when } from "../lib/format";
import { useAction, useLoad } from "../lib/hooks";
import { Empty, ErrorBox, Field, Loading, ModelOptions, PageTitle, Progress, StatusBadge, Table } from "../components/ui";
import { useProject } from "./Project";
import { baseName, PreviewTable } from "../components/upload";
import { EMPTY_MAPPING, guessMapping, MAPPED, type Mapping } from "../lib/columns";
import { NEEDS, roleNote } from "../lib/roles";

/** Labeled data from a file (for example a download of another session): preview, map columns. */
function LabeledImport({ projectId }: { projectId: number }) {
  const navigate = useNavigate();
  const fileInput = useRef<HTMLInputElement>(null);
  const [uploaded, setUploaded] = useState<Schemas["UploadedFileDto"] | null>(null);
  const [fileName, setFileName] = useState("");
  const [mapping, setMapping] = useState<Mapping>(EMPTY_MAPPING);
  const [name, setName] = useState("");
  const action = useAction();
  const header = uploaded?.preview[0] ?? [];
  const upload = (e: FormEvent) => {
    e.preventDefault();
    const file = fileInput.current?.files?.[0];
    if (!file) return;
    void action.run(async () => {
      const form = new FormData();
      form.append("file", file);
      form.append("show_preview", "true");
      const answer = await postForm<Schemas["LabelingUpload"]>(`/projects/${projectId}/annotations/upload`, form);
      setFileName(file.name);
      setName(baseName(file.name));
      if ("preview" in answer) {
        setUploaded(answer);
        setMapping(guessMapping(answer.preview[0] ?? []));
      } else if (answer.task_id) {
        navigate(`/projects/${projectId}/tasks/${answer.task_id}?what=labels`);
      }
    });
  };
  const create = (e: FormEvent) => {
    e.preventDefault();
    if (!uploaded) return;
    void action.run(async () => {
      const s = await unwrap(
        api.POST("/projects/{project_id}/annotations", {
          params: { path: { project_id: projectId } },
          body: {
            name: name || undefined,
            file_id: uploaded.id,
            column_mapping: {
              text: mapping.text,
              class: mapping.class || null,
              label: mapping.label || null,
              document: mapping.document || null,
              part: mapping.part || null,
              annotated: mapping.annotated || null,
            },
          },
        }),
      );
      navigate(s.task_id ? `/projects/${projectId}/tasks/${s.task_id}?what=labels` : `/projects/${projectId}/labeling/${s.id}`);
    });
  };
  return (
    <section aria-labelledby="labeled-h" className="panel">
      <h2 id="labeled-h">Import labeled data</h2>
      <p className="muted">A CSV, JSON, JSONL or XLSX file with a text column and class or label columns (a session's download is one) becomes a new session.</p>
      <form onSubmit={upload} className="inline-form">
        <Field label="Labeled file">
          {(fid) => <input id={fid} ref={fileInput} type="file" required accept=".csv,.tsv,.json,.jsonl,.xlsx,.pdf,.png,.jpg,.jpeg,.tif,.tiff,.webp" onChange={() => setUploaded(null)} />}
        </Field>
        <button type="submit" disabled={action.busy}>
          Upload and preview
        </button>
      </form>
      {uploaded && (
        <form onSubmit={create} className="stack">
          <PreviewTable preview={uploaded.preview} headerFirst column={header.indexOf(mapping.text)} caption={`Preview of ${fileName}`} />
          <div className="inline-form">
            {MAPPED.map((k) => (
              <Field key={k} label={`${k[0].toUpperCase()}${k.slice(1)} column`}>
                {(fid) => (
                  <select id={fid} value={mapping[k]} required={k === "text"} onChange={(e) => setMapping({ ...mapping, [k]: e.target.value })}>
                    {k !== "text" && <option value="">none</option>}
                    {header.map((h) => (
                      <option key={h} value={h}>
                        {h}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
            ))}
            <Field label="Session name">{(fid) => <input id={fid} value={name} onChange={(e) => setName(e.target.value)} />}</Field>
          </div>
          <div className="row">
            <button type="submit" disabled={action.busy}>
              Import as a session
            </button>
            <button type="button" className="secondary" onClick={() => setUploaded(null)}>
              Start over
            </button>
          </div>
        </form>
      )}
      <ErrorBox error={action.error} />
    </section>
  );
}

export function LabelingPage() {
  const { project, role } = useProject();
  const startNote = roleNote(role, NEEDS.work, "Starting a labeling or correction session");
  const id = project.id;
  const path = { params: { path: { project_id: id } } };
  // Correction sessions are sessions too: the labeling list asks for the others only.
  const sessions = useLoad(
    () => unwrap(api.GET("/projects/{project_id}/annotations", { params: { path: { project_id: id }, query: { mode: "ANNOTATION" } } })),
    [id],
  );
  const corrections = useLoad(() => unwrap(api.GET("/projects/{project_id}/corrections", path)), [id]);
  const models = useLoad(() => unwrap(api.GET("/projects/{project_id}/models", path)), [id]);
  const navigate = useNavigate();
  const action = useAction();
  const [name, setName] = useState("");
  const [modelId, setModelId] = useState<number | "">("");
  const [sample, setSample] = useState(20);

  const create = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      const s = await unwrap(api.POST("/projects/{project_id}/annotations", { ...path, body: { name: name.trim() || undefined } }));
      navigate(`/projects/${id}/labeling/${s.id}`);
    });
  };
  const correct = (e: FormEvent) => {
    e.preventDefault();
    if (modelId === "") return;
    void action.run(async () => {
      // The model tags the documents in a job: the session's page waits while it is PREDICTING.
      const c = await unwrap(
        api.POST("/projects/{project_id}/corrections", { ...path, body: { model_id: modelId, sample_size: sample } }),
      );
      navigate(`/projects/${id}/corrections/${c.id}`);
    });
  };
  const ready = (models.data ?? []).filter((m) => ["READY", "ACTIVE", "PUBLISHED"].includes(m.status));

  return (
    <>
      <PageTitle>Labeling</PageTitle>
      <ErrorBox error={action.error} />
      <section aria-labelledby="sessions-h" className="panel">
        <div className="panel-head">
          <h2 id="sessions-h">Labeling sessions</h2>
          <button
            type="button"
            className="link"
            onClick={() => void download(`/projects/${id}/annotations/download?format=csv`, "labels.csv").catch(action.setError)}
          >
            Download all labels (CSV)
          </button>
        </div>
        <ErrorBox error={sessions.error} onRetry={sessions.reload} />
        {sessions.loading && !sessions.data && <Loading />}
        {sessions.data && sessions.data.length === 0 && <Empty>No sessions yet. Start one below.</Empty>}
        {sessions.data && sessions.data.length > 0 && (
          <Table head={["Session", "Documents", "Annotated segments", "Status", "Download"]} label="Sessions">
            {sessions.data.map((s) => (
              <tr key={s.id}>
                <td>
                  <Link to={`/projects/${id}/labeling/${s.id}`} dir="auto">
                    {s.name}
                  </Link>
                  <br />
                  <small className="muted">{when(s.created)}</small>
                </td>
                <td>{s.document_count}</td>
                <td>
                  {s.annotated_count} of {s.segment_count}
                  <Progress value={s.progress} label={`Progress of ${s.name}`} />
                </td>
                <td>
                  <StatusBadge status={s.status} />
                </td>
                <td className="row-actions">
                  {["csv", "json", "xlsx"].map((f) => (
                    <button
                      key={f}
                      type="button"
                      className="link"
                      aria-label={`Download ${s.name} as ${f}`}
                      onClick={() =>
                        void download(`/projects/${id}/annotations/${s.id}/download?format=${f}`, `${s.name}.${f}`).catch(action.setError)
                      }
                    >
                      {f}
                    </button>
                  ))}
                </td>
              </tr>
            ))}
          </Table>
        )}
        {startNote ? (
          <p className="notice">{startNote}</p>
        ) : (
          <form onSubmit={create} className="inline-form">
            <Field label="New session name" hint="It offers every document of the project.">
              {(fid, hint) => <input id={fid} aria-describedby={hint} value={name} onChange={(e) => setName(e.target.value)} />}
            </Field>
            <button type="submit" disabled={action.busy}>
              Start labeling
            </button>
          </form>
        )}
      </section>

      {!startNote && <LabeledImport projectId={id} />}

      <section aria-labelledby="corrections-h" className="panel">
        <h2 id="corrections-h">Correction sessions</h2>
        <p className="muted">A model tags the documents it is least sure of; you confirm or correct its suggestions.</p>
        <ErrorBox error={corrections.error} onRetry={corrections.reload} />
        {corrections.data && corrections.data.length === 0 && <Empty>No correction sessions.</Empty>}
        {corrections.data && corrections.data.length > 0 && (
          <ul className="plain">
            {corrections.data.map((c) => (
              <li key={c.id}>
                <Link to={`/projects/${id}/corrections/${c.id}`} dir="auto">
                  {c.name}
                </Link>{" "}
                · <span dir="auto">{c.model?.display_name ?? "model"}</span> ·{" "}
                {c.annotated_count} of {c.segment_count} corrected
                {c.status === "PREDICTING" || c.status === "FAILED" ? (
                  <>
                    {" "}
                    · <StatusBadge status={c.status} />
                  </>
                ) : null}
              </li>
            ))}
          </ul>
        )}
        {startNote ? null : ready.length > 0 ? (
          <form onSubmit={correct} className="inline-form">
            <Field label="Model">
              {(fid) => (
                <select id={fid} required value={modelId} onChange={(e) => setModelId(e.target.value ? Number(e.target.value) : "")}>
                  <option value="">Choose a model</option>
                  <ModelOptions models={ready} />
                </select>
              )}
            </Field>
            <Field label="Documents">
              {(fid) => (
                <input id={fid} type="number" min={1} max={1000} value={sample} onChange={(e) => setSample(Number(e.target.value))} />
              )}
            </Field>
            <button type="submit" disabled={action.busy}>
              Start correcting
            </button>

          </form>
        ) : (
          <p className="muted">
            Train a model first (<Link to={`/projects/${id}/models`}>Models</Link>).
          </p>
        )}
      </section>
    </>
  );
}
