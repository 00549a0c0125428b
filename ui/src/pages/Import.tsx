// Importing documents: upload a file, look at its preview, pick the text column, create the
// group; or paste texts. The group fills in a task whose progress the task view shows.
import { useRef, useState, type FormEvent } from "react";
import { Link, useNavigate, useParams, useSearchParams } from "react-router";
import { api, postForm, unwrap, type Schemas } from "../api/client";
import { isFailed, isFinal, when } from "../lib/format";
import { useAction, usePoll } from "../lib/hooks";
import { ErrorBox, Field, PageTitle, Progress, StatusBadge } from "../components/ui";
import { guessColumn } from "../lib/columns";
import { useProject, useProjectId } from "./Project";

type Uploaded = Schemas["UploadedFileDto"];

/** The preview of an uploaded file as a table whose columns can be picked. */
export function PreviewTable({
  preview,
  headerFirst,
  column,
  onPick,
  caption,
}: {
  preview: string[][];
  headerFirst: boolean;
  column: number | null;
  onPick?: (i: number) => void;
  caption: string;
}) {
  const width = Math.max(0, ...preview.map((r) => r.length));
  const head = headerFirst ? preview[0] ?? [] : Array.from({ length: width }, (_, i) => `Column ${i + 1}`);
  const rows = headerFirst ? preview.slice(1) : preview;
  return (
    <div className="table-wrap">
      <table className="preview">
        <caption>{caption}</caption>
        <thead>
          <tr>
            {Array.from({ length: width }, (_, i) => (
              <th key={i} scope="col" className={column === i ? "picked" : ""}>
                {onPick ? (
                  <label className="pick">
                    <input type="radio" name="column" checked={column === i} onChange={() => onPick(i)} />
                    {head[i] || `Column ${i + 1}`}
                  </label>
                ) : (
                  head[i] || `Column ${i + 1}`
                )}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.slice(0, 10).map((r, j) => (
            <tr key={j}>
              {Array.from({ length: width }, (_, i) => (
                <td key={i} className={column === i ? "picked" : ""}>
                  {(r[i] ?? "").slice(0, 200)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function ImportPage() {
  const { project } = useProject();
  const id = project.id;
  const navigate = useNavigate();
  const fileInput = useRef<HTMLInputElement>(null);
  const abort = useRef<AbortController | null>(null);
  const [uploaded, setUploaded] = useState<Uploaded | null>(null);
  const [fileName, setFileName] = useState("");
  const [headerFirst, setHeaderFirst] = useState(true);
  const [column, setColumn] = useState<number | null>(null);
  const [name, setName] = useState("");
  const [pasted, setPasted] = useState("");
  const action = useAction();
  const isDocument = /\.(pdf|png|jpe?g|tiff?|webp)$/i.test(fileName);

  const upload = (e: FormEvent) => {
    e.preventDefault();
    const file = fileInput.current?.files?.[0];
    if (!file) return;
    abort.current = new AbortController();
    void action.run(async () => {
      const form = new FormData();
      form.append("file", file);
      const answer = await postForm<Uploaded>(`/projects/${id}/groups/upload`, form, abort.current!.signal);
      setUploaded(answer);
      setFileName(file.name);
      setName(file.name.replace(/\.[^.]+$/, ""));
      setColumn(guessColumn(answer.preview, true));
    });
  };

  const create = (e: FormEvent) => {
    e.preventDefault();
    if (!uploaded) return;
    void action.run(async () => {
      const body: Schemas["CreateGroupBody"] = isDocument
        ? { name, file_id: uploaded.id }
        : { name, file_id: uploaded.id, column: column ?? 0, header_first: headerFirst };
      const group = await unwrap(
        api.POST("/projects/{project_id}/groups", { params: { path: { project_id: id } }, body }),
      );
      if (group.task_id) navigate(`/projects/${id}/tasks/${group.task_id}?what=import&group=${group.id}`);
      else navigate(`/projects/${id}`);
    });
  };

  const paste = (e: FormEvent) => {
    e.preventDefault();
    const docs = pasted
      .split(/\n\s*\n|\n/)
      .map((t) => t.trim())
      .filter(Boolean)
      .map((text) => ({ text }));
    if (docs.length === 0) return;
    void action.run(async () => {
      const group = await unwrap(
        api.POST("/projects/{project_id}/upload-documents", { params: { path: { project_id: id } }, body: docs }),
      );
      if (group.task_id) navigate(`/projects/${id}/tasks/${group.task_id}?what=import&group=${group.id}`);
      else navigate(`/projects/${id}`);
    });
  };

  return (
    <>
      <PageTitle>Import documents</PageTitle>
      <section aria-labelledby="upload-h" className="panel">
        <h2 id="upload-h">From a file</h2>
        <p className="muted">CSV, TSV, TXT, JSON, JSONL or XLSX (one document per row), or a PDF or image (one document with a page per segment).</p>
        <form onSubmit={upload} className="inline-form">
          <Field label="File">
            {(fid) => (
              <input
                id={fid}
                ref={fileInput}
                type="file"
                required
                accept=".csv,.tsv,.txt,.json,.jsonl,.xlsx,.pdf,.png,.jpg,.jpeg,.tif,.tiff,.webp"
                onChange={() => setUploaded(null)}
              />
            )}
          </Field>
          <button type="submit" disabled={action.busy}>
            {action.busy && !uploaded ? "Uploading…" : "Upload and preview"}
          </button>
          {action.busy && (
            <button type="button" className="secondary" onClick={() => abort.current?.abort()}>
              Cancel
            </button>
          )}
        </form>
        {uploaded && (
          <form onSubmit={create} className="stack">
            {isDocument ? (
              <p>
                {fileName}: {uploaded.preview.flat().join(" ").slice(0, 300) || "no text preview"}
              </p>
            ) : (
              <>
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
                  <PreviewTable
                    preview={uploaded.preview}
                    headerFirst={headerFirst}
                    column={column}
                    onPick={setColumn}
                    caption={`Preview of ${fileName}`}
                  />
                </fieldset>
              </>
            )}
            <Field label="Name of the document group">
              {(fid) => <input id={fid} required value={name} onChange={(e) => setName(e.target.value)} />}
            </Field>
            <div className="row">
              <button type="submit" disabled={action.busy}>
                Import
              </button>
              <button type="button" className="secondary" onClick={() => setUploaded(null)}>
                Start over
              </button>
            </div>
          </form>
        )}
      </section>
      <section aria-labelledby="paste-h" className="panel">
        <h2 id="paste-h">Paste texts</h2>
        <form onSubmit={paste} className="stack">
          <Field label="Texts" hint="One document per line.">
            {(fid, hint) => (
              <textarea id={fid} rows={6} aria-describedby={hint} value={pasted} onChange={(e) => setPasted(e.target.value)} />
            )}
          </Field>
          <button type="submit" disabled={action.busy || !pasted.trim()}>
            Add documents
          </button>
        </form>
      </section>
      <ErrorBox error={action.error} />
    </>
  );
}

/** A long-running job of the project (import, clone, training, analysis) with live progress. */
export function TaskPage() {
  const projectId = useProjectId();
  const [params] = useSearchParams();
  const what = params.get("what") ?? "task";
  const taskId = Number(useParams().taskId);
  const navigate = useNavigate();
  const task = usePoll(
    () =>
      unwrap(
        api.GET("/projects/{project_id}/tasks/{task_id}", { params: { path: { project_id: projectId, task_id: taskId } } }),
      ),
    (t) => !t || !isFinal(t.status),
    [projectId, taskId],
  );
  const t = task.data;
  const done = t && isFinal(t.status) && !isFailed(t.status);
  const titles: Record<string, string> = {
    import: "Importing documents",
    clone: "Cloning the project",
    labels: "Importing labeled data",
    task: "Task",
  };
  return (
    <>
      <PageTitle>{titles[what] ?? "Task"}</PageTitle>
      <ErrorBox error={task.error} onRetry={task.reload} />
      {t && (
        <section className="panel" aria-live="polite">
          <p>
            Task {t.id} ({t.type.toLowerCase()}): <StatusBadge status={t.status} />
          </p>
          <Progress value={t.progress} label={`Progress of task ${t.id}`} />
          <p className="muted">
            Started {when(t.created)}
            {t.finished ? ` · finished ${when(t.finished)}` : ""} · attempt {t.attempts}
          </p>
          {t.error && (
            <p className="error" role="alert">
              {t.error}
            </p>
          )}
          {done && (
            <p className="notice" role="status">
              Done.{" "}
              {what === "import" || what === "labels" ? (
                <Link to={`/projects/${projectId}/labeling`}>Start labeling</Link>
              ) : (
                <Link to={`/projects/${projectId}`}>Open the project</Link>
              )}
            </p>
          )}
        </section>
      )}
      <div className="row">
        {task.polling ? (
          <button type="button" className="secondary" onClick={task.stop}>
            Stop watching
          </button>
        ) : (
          !done && (
            <button type="button" className="secondary" onClick={task.reload}>
              Refresh
            </button>
          )
        )}
        <button type="button" className="secondary" onClick={() => navigate(`/projects/${projectId}`)}>
          Back to the project
        </button>
      </div>
    </>
  );
}
