// The workspace's projects by type, and a form for a new one.
import { useState, type FormEvent } from "react";
import { Link, useNavigate } from "react-router";
import { api, unwrap } from "../api/client";
import { useAuth, useRole } from "../auth";
import { byType, TYPE_NAMES } from "../lib/format";
import { useAction, useLoad } from "../lib/hooks";
import { NEEDS, roleNote } from "../lib/roles";
import { Empty, ErrorBox, Field, Loading, PageTitle, StatusBadge } from "../components/ui";

export function ProjectsPage() {
  const { workspace } = useAuth();
  const createNote = roleNote(useRole(workspace?.id), NEEDS.manage, "Creating a project");
  const navigate = useNavigate();
  const wid = workspace?.id;
  const projects = useLoad(
    () => unwrap(api.GET("/projects", { params: { query: { organization_id: wid, details: true } } })),
    [wid],
  );
  const [name, setName] = useState("");
  const [type, setType] = useState("CLASS");
  const [language, setLanguage] = useState("en");
  const action = useAction();
  const create = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      const p = await unwrap(api.POST("/projects", { body: { name, type, language, organization_id: wid } }));
      navigate(`/projects/${p.id}`);
    });
  };
  const mine = (projects.data ?? []).filter((p) => wid === undefined || p.organization_id === wid);
  return (
    <>
      <PageTitle>Projects</PageTitle>
      <ErrorBox error={projects.error} onRetry={projects.reload} />
      {projects.loading && !projects.data && <Loading />}
      {projects.data && mine.length === 0 && <Empty>No projects in {workspace?.name} yet. Create the first one below.</Empty>}
      {byType(mine).map(([t, list]) => (
        <section key={t} aria-labelledby={`type-${t}`}>
          <h2 id={`type-${t}`}>
            {TYPE_NAMES[t] ?? t} <span className="muted">({t})</span>
          </h2>
          <ul className="cards">
            {list.map((p) => (
              <li key={p.id} className="card">
                <Link to={`/projects/${p.id}`} className="card-title" dir="auto">
                  {p.name}
                </Link>
                <StatusBadge status={p.status} />
                <p className="muted">
                  {p.classes?.length ? `Classes: ${p.classes.slice(0, 6).join(", ")}${p.classes.length > 6 ? "…" : ""}` : "No classes"}
                  <br />
                  {p.labels?.length ? `Labels: ${p.labels.slice(0, 6).join(", ")}${p.labels.length > 6 ? "…" : ""}` : "No labels"}
                </p>
              </li>
            ))}
          </ul>
        </section>
      ))}
      <section aria-labelledby="new-project-h">
        <h2 id="new-project-h">New project</h2>
        {createNote ? (
          <p className="notice">{createNote}</p>
        ) : (
          <form onSubmit={create} className="inline-form">
            <Field label="Name">{(id) => <input id={id} required value={name} onChange={(e) => setName(e.target.value)} />}</Field>
            <Field label="Type">
              {(id) => (
                <select id={id} value={type} onChange={(e) => setType(e.target.value)}>
                  {Object.entries(TYPE_NAMES).map(([k, v]) => (
                    <option key={k} value={k}>
                      {v}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <Field label="Language">
              {(id) => (
                <select id={id} value={language} onChange={(e) => setLanguage(e.target.value)}>
                  <option value="en">English</option>
                  <option value="de">German</option>
                  <option value="ar">Arabic</option>
                </select>
              )}
            </Field>
            <button type="submit" disabled={action.busy}>
              Create project
            </button>
          </form>
        )}
        <ErrorBox error={action.error} />
      </section>
    </>
  );
}
