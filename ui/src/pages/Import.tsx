// Importing documents: upload a file, look at its preview, pick the text column, create the
// group; or paste texts. The group fills in a task whose progress the task view shows.
import { useState, type FormEvent } from "react";
import { Link, useNavigate, useParams, useSearchParams } from "react-router";
import { api, unwrap, type Schemas } from "../api/client";
import { isFailed, isFinal, when } from "../lib/format";
import { useAction, usePoll } from "../lib/hooks";
import { NEEDS, roleNote } from "../lib/roles";
import { ErrorBox, Field, PageTitle, Progress, StatusBadge } from "../components/ui";
import { ColumnPicker, UploadForm, useTableUpload } from "../components/upload";
import { useProject, useProjectId } from "./Project";

export function ImportPage() {
  const { project, role } = useProject();
  const note = roleNote(role, NEEDS.work, "Importing documents");
  const id = project.id;
  const navigate = useNavigate();
  const [pasted, setPasted] = useState("");
  const action = useAction();
  const file = useTableUpload(`/projects/${id}/groups/upload`, action);
  const { uploaded, fileName, headerFirst, column, name, setName } = file;
  const isDocument = /\.(pdf|png|jpe?g|tiff?|webp)$/i.test(fileName);
  /** The new group's import task, where it fills in; the project when nothing is left to wait for. */
  const follow = (group: { id: number; task_id?: number | null }) =>
    navigate(group.task_id ? `/projects/${id}/tasks/${group.task_id}?what=import&group=${group.id}` : `/projects/${id}`);

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
      follow(group);
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
      follow(group);
    });
  };

  if (note) {
    return (
      <>
        <PageTitle>Import documents</PageTitle>
        <p className="notice">{note}</p>
      </>
    );
  }

  return (
    <>
      <PageTitle>Import documents</PageTitle>
      <section aria-labelledby="upload-h" className="panel">
        <h2 id="upload-h">From a file</h2>
        <p className="muted">CSV, TSV, TXT, JSON, JSONL or XLSX (one document per row), or a PDF or image (one document with a page per segment).</p>
        <UploadForm
          upload={file}
          busy={action.busy}
          label="File"
          accept=".csv,.tsv,.txt,.json,.jsonl,.xlsx,.pdf,.png,.jpg,.jpeg,.tif,.tiff,.webp"
          buttonLabel={action.busy && !uploaded ? "Uploading…" : "Upload and preview"}
        />
        {uploaded && (
          <form onSubmit={create} className="stack">
            {isDocument ? (
              <p>
                {fileName}: {uploaded.preview.flat().join(" ").slice(0, 300) || "no text preview"}
              </p>
            ) : (
              <ColumnPicker upload={file} preview={uploaded.preview} />
            )}
            <Field label="Name of the document group">
              {(fid) => <input id={fid} required value={name} onChange={(e) => setName(e.target.value)} />}
            </Field>
            <div className="row">
              <button type="submit" disabled={action.busy}>
                Import
              </button>
              <button type="button" className="secondary" onClick={() => file.setUploaded(null)}>
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
              <textarea id={fid} rows={6} dir="auto" aria-describedby={hint} value={pasted} onChange={(e) => setPasted(e.target.value)} />
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
