// A project: its tabs, and the overview with classes, labels, document groups and cloning.
import { useState, type FormEvent } from "react";
import { Link, NavLink, Outlet, useNavigate, useOutletContext, useParams } from "react-router";
import { api, download, unwrap, type Schemas } from "../api/client";
import { tagKinds, TYPE_NAMES, when } from "../lib/format";
import { useAction, useLoad } from "../lib/hooks";
import { NEEDS, roleNote } from "../lib/roles";
import { useRoles } from "../auth";
import { Empty, ErrorBox, Field, Loading, PageTitle, StatusBadge, Table } from "../components/ui";

export type ProjectCtx = {
  project: Schemas["ProjectDto"];
  /** The user's role in the project's workspace, for changes (READ_ONLY in a read-only one). */
  role: string | null;
  /** The user's role there for what stores nothing (an ad-hoc analysis), read-only or not. */
  roleForUse: string | null;
  reload: () => void;
};

export function useProject(): ProjectCtx {
  return useOutletContext<ProjectCtx>();
}

export function useProjectId(): number {
  const { projectId } = useParams();
  return Number(projectId);
}

export function ProjectLayout() {
  const id = useProjectId();
  const project = useLoad(() => unwrap(api.GET("/projects/{project_id}", { params: { path: { project_id: id } } })), [id]);
  const roles = useRoles(project.data?.organization_id);
  const role = roles.change;
  if (project.error) return <ErrorBox error={project.error} onRetry={project.reload} />;
  // Until the workspace is read, what the user may change there is not known (a superuser's
  // in a read-only workspace they are no member of): no control is offered before that.
  if (!project.data || role === undefined) return <Loading />;
  const p = project.data;
  return (
    <>
      <p className="crumbs">
        <Link to="/">Projects</Link> / <span dir="auto">{p.name}</span>
      </p>
      <nav aria-label="Project" className="tabs">
        <NavLink to={`/projects/${id}`} end>
          Overview
        </NavLink>
        <NavLink to={`/projects/${id}/import`}>Import</NavLink>
        <NavLink to={`/projects/${id}/labeling`}>Labeling</NavLink>
        <NavLink to={`/projects/${id}/models`}>Models</NavLink>
        <NavLink to={`/projects/${id}/extract`}>Extract</NavLink>
        <NavLink to={`/projects/${id}/reviews`}>Reviews</NavLink>
      </nav>
      <Outlet context={{ project: p, role, roleForUse: roles.use ?? null, reload: project.reload } satisfies ProjectCtx} />
    </>
  );
}

function NameList({
  title,
  items,
  onAdd,
  onDelete,
  onDownload,
  disabled,
  canEdit,
}: {
  title: string;
  items: Array<{ id: number; name: string; description?: string }>;
  onAdd: (name: string, description: string) => Promise<void>;
  onDelete: (id: number) => Promise<void>;
  onDownload: () => void;
  disabled?: string;
  /** Whether the user's role may add and delete them. */
  canEdit: boolean;
}) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const action = useAction();
  const single = title.replace(/e?s$/, "");
  const add = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      await onAdd(name.trim(), description.trim());
      setName("");
      setDescription("");
    });
  };
  return (
    <section aria-labelledby={`h-${title}`} className="panel">
      <div className="panel-head">
        <h2 id={`h-${title}`}>{title}</h2>
        <button type="button" className="link" onClick={onDownload}>
          Download CSV
        </button>
      </div>
      {items.length === 0 && <Empty>None yet.</Empty>}
      <ul className="chips-list">
        {items.map((c) => (
          <li key={c.id} className="chip-row">
            <span className="chip" dir="auto">
              {c.name}
            </span>
            {c.description && (
              <span className="muted" dir="auto">
                {c.description}
              </span>
            )}
            {canEdit && (
              <button
                type="button"
                className="link danger"
                aria-label={`Delete ${single.toLowerCase()} ${c.name}`}
                onClick={() => {
                  // The server removes the tags of it with it, in every session: no undo.
                  const what = `${single.toLowerCase()} ${c.name}`;
                  if (!window.confirm(`Delete the ${what}? Every tag of it in the project's labeling and correction sessions is removed too.`)) return;
                  void action.run(() => onDelete(c.id));
                }}
              >
                Delete
              </button>
            )}
          </li>
        ))}
      </ul>
      {disabled ? (
        <p className="muted">{disabled}</p>
      ) : (
        canEdit && (
          <form onSubmit={add} className="inline-form">
            <Field label={`New ${single.toLowerCase()}`}>
              {(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}
            </Field>
            {title === "Classes" && (
              <Field label="Description">
                {(id) => <input id={id} value={description} onChange={(e) => setDescription(e.target.value)} />}
              </Field>
            )}
            <button type="submit" disabled={action.busy}>
              Add
            </button>
          </form>
        )
      )}
      <ErrorBox error={action.error} />
    </section>
  );
}

export function ProjectOverview() {
  const { project, role, reload } = useProject();
  const manageNote = roleNote(role, NEEDS.manage, "Changing the project, its classes and labels");
  const id = project.id;
  const path = { params: { path: { project_id: id } } };
  const classes = useLoad(() => unwrap(api.GET("/projects/{project_id}/classes", path)), [id]);
  const labels = useLoad(() => unwrap(api.GET("/projects/{project_id}/labels", path)), [id]);
  const groups = useLoad(() => unwrap(api.GET("/projects/{project_id}/groups", path)), [id]);
  const navigate = useNavigate();
  const action = useAction();
  const kinds = tagKinds(project.type);
  const clone = () =>
    void action.run(async () => {
      const copy = await unwrap(api.POST("/projects/{project_id}/clone", { ...path, body: {} }));
      if (copy.task_id) navigate(`/projects/${copy.id}/tasks/${copy.task_id}?what=clone`);
      else navigate(`/projects/${copy.id}`);
    });
  const remove = () =>
    void action.run(async () => {
      if (!window.confirm(`Delete the project ${project.name} and everything in it?`)) return;
      await unwrap(api.DELETE("/projects/{project_id}", path));
      navigate("/");
    });
  return (
    <>
      <PageTitle
        actions={
          !manageNote && (
            <>
              <button type="button" className="secondary" onClick={clone} disabled={action.busy}>
                Clone project
              </button>
              <button type="button" className="secondary danger" onClick={remove} disabled={action.busy}>
                Delete
              </button>
            </>
          )
        }
      >
        {project.name}
      </PageTitle>
      <p className="muted">
        {TYPE_NAMES[project.type] ?? project.type} · language {project.language} · created {when(project.created)} ·{" "}
        <StatusBadge status={project.status} />
      </p>
      {manageNote && <p className="notice">{manageNote}</p>}
      <ErrorBox error={action.error} />
      <div className="grid-2">
        <div>
          <ErrorBox error={classes.error} onRetry={classes.reload} />
          {classes.data && (
            <NameList
              title="Classes"
              items={classes.data}
              canEdit={!manageNote}
              disabled={kinds.classes ? undefined : "A LABEL project tags with labels only."}
              onAdd={async (name, description) => {
                await unwrap(api.POST("/projects/{project_id}/classes", { ...path, body: { name, description } }));
                classes.reload();
                reload();
              }}
              onDelete={async (cid) => {
                await unwrap(
                  api.DELETE("/projects/{project_id}/classes/{class_id}", { params: { path: { project_id: id, class_id: cid } } }),
                );
                classes.reload();
              }}
              onDownload={() => void download(`/projects/${id}/classes/download?format=csv`, "classes.csv").catch(action.setError)}
            />
          )}
        </div>
        <div>
          <ErrorBox error={labels.error} onRetry={labels.reload} />
          {labels.data && (
            <NameList
              title="Labels"
              items={labels.data}
              canEdit={!manageNote}
              disabled={
                project.type === "ABSA"
                  ? "ABSA projects have the sentiment labels built in."
                  : kinds.labels
                    ? undefined
                    : "A CLASS project tags with classes only."
              }
              onAdd={async (name) => {
                await unwrap(api.POST("/projects/{project_id}/labels", { ...path, body: { name } }));
                labels.reload();
                reload();
              }}
              onDelete={async (lid) => {
                await unwrap(
                  api.DELETE("/projects/{project_id}/labels/{label_id}", { params: { path: { project_id: id, label_id: lid } } }),
                );
                labels.reload();
              }}
              onDownload={() => void download(`/projects/${id}/labels/download?format=csv`, "labels.csv").catch(action.setError)}
            />
          )}
        </div>
      </div>
      <section aria-labelledby="groups-h" className="panel">
        <div className="panel-head">
          <h2 id="groups-h">Documents</h2>
          <Link to={`/projects/${id}/import`}>Import a file</Link>
        </div>
        <ErrorBox error={groups.error} onRetry={groups.reload} />
        {groups.data && groups.data.length === 0 && <Empty>No documents yet. Import a file to start.</Empty>}
        {groups.data && groups.data.length > 0 && (
          <Table head={["Group", "Documents", "Source", "Status", "Created"]} label="Document groups">
            {groups.data.map((g) => (
              <tr key={g.id}>
                <td dir="auto">{g.name}</td>
                <td>{g.document_count}</td>
                <td>{g.source}</td>
                <td>
                  {g.task_id && g.status === "PROCESSING" ? (
                    <Link to={`/projects/${id}/tasks/${g.task_id}?what=import`}>
                      <StatusBadge status={g.status} />
                    </Link>
                  ) : (
                    <StatusBadge status={g.status} />
                  )}
                </td>
                <td>{when(g.created)}</td>
              </tr>
            ))}
          </Table>
        )}
      </section>
    </>
  );
}
