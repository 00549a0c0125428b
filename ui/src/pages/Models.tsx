// A project's models: train with one button, watch training, read the metrics as pictures,
// compare versions, download.
import { useEffect, useState, type FormEvent } from "react";
import { Link, useNavigate, useParams } from "react-router";
import { api, download, unwrap, type Schemas } from "../api/client";
import { fixed, isFinal, percent, readMetrics, when, type Metrics } from "../lib/format";
import { useAction, useLoad, usePoll, useQuery } from "../lib/hooks";
import { readIds } from "../lib/links";
import { chars, MAX_NAME_CHARS, nextVersionName } from "../lib/names";
import { atLeast, NEEDS, roleNote } from "../lib/roles";
import { BarChart, Heatmap } from "../components/charts";
import { Empty, ErrorBox, Field, Loading, PageTitle, Progress, ScrollRegion, StatusBadge, Table } from "../components/ui";
import { useProject } from "./Project";

type Model = Schemas["ModelDto"];
const TRAINING = (m: Model) => ["QUEUED", "TRAINING"].includes(m.status);

export function ModelsPage() {
  const { project, role } = useProject();
  const trainNote = roleNote(role, NEEDS.work, "Training a model");
  const id = project.id;
  const navigate = useNavigate();
  const path = { params: { path: { project_id: id } } };
  const models = usePoll(
    () => unwrap(api.GET("/projects/{project_id}/models", path)),
    (list) => !!list?.some(TRAINING),
    [id],
    1500,
  );
  const action = useAction();
  // The models compared are in the address (?compare=3,5): a reload or a link keeps them.
  // The ticks are also kept here, so a checkbox shows its new state at once rather than when
  // the address has changed (the router changes it a moment later: a click seemed lost).
  const [query, setQuery] = useQuery();
  const inAddress = query.get("compare");
  const [chosen, setTicked] = useState<number[]>(() => readIds(inAddress));
  useEffect(() => setTicked(readIds(inAddress)), [inAddress]);
  const setChosen = (ids: number[]) => {
    setTicked(ids);
    setQuery({ compare: ids.join(",") }, true);
  };
  // The new model's name: the user's, or the next version of the project's name (cut to fit).
  const [typed, setTyped] = useState<string | null>(null);
  const proposed = models.data ? nextVersionName(project.name, models.data) : "";
  const modelName = typed ?? proposed;
  const tooLong = chars(modelName) > MAX_NAME_CHARS;
  const train = (e: FormEvent) => {
    e.preventDefault();
    if (!models.data || tooLong || !modelName.trim()) return;
    void action.run(async () => {
      const m = await unwrap(api.POST("/projects/{project_id}/models", { ...path, body: { display_name: modelName.trim() } }));
      navigate(`/projects/${id}/models/${m.id}`);
    });
  };
  const list = [...(models.data ?? [])].sort((a, b) => b.id - a.id);
  return (
    <>
      <PageTitle>Models</PageTitle>
      <p className="muted">Training learns from every annotated segment of the project's labeling sessions.</p>
      {trainNote ? (
        <p className="notice">{trainNote}</p>
      ) : (
        <>
          <form onSubmit={train} className="inline-form" aria-label="Train a model">
            <Field label="Name of the new model" hint={`At most ${MAX_NAME_CHARS} characters.`}>
              {(fid, hint) => (
                <input
                  id={fid}
                  required
                  aria-describedby={hint}
                  aria-invalid={tooLong || undefined}
                  value={modelName}
                  onChange={(e) => setTyped(e.target.value)}
                />
              )}
            </Field>
            <button type="submit" disabled={action.busy || !models.data || tooLong}>
              Train a model
            </button>
          </form>
          {tooLong && (
            <p className="error" role="alert">
              The name has {chars(modelName)} characters; at most {MAX_NAME_CHARS} are allowed.
            </p>
          )}
        </>
      )}
      <ErrorBox error={action.error} />
      <ErrorBox error={models.error} onRetry={models.reload} />
      {models.loading && !models.data && <Loading />}
      {models.data && list.length === 0 && <Empty>No models yet. Label some segments of two classes or more, then train.</Empty>}
      {list.length > 0 && (
        <Table head={["Compare", "Model", "Status", { figures: "Score (macro F1)" }, "Created"]} label="Models">
          {list.map((m) => (
            <tr key={m.id}>
              <td>
                <input
                  type="checkbox"
                  aria-label={`Compare ${m.display_name}`}
                  disabled={m.status !== "READY" && m.status !== "ACTIVE" && m.status !== "PUBLISHED"}
                  checked={chosen.includes(m.id)}
                  onChange={(e) => setChosen(e.target.checked ? [...chosen, m.id] : chosen.filter((x) => x !== m.id))}
                />
              </td>
              <td>
                <Link to={`/projects/${id}/models/${m.id}`} dir="auto">
                  {m.display_name}
                </Link>
              </td>
              <td>
                <StatusBadge status={m.status} />
                {TRAINING(m) && <Progress value={m.progress} label={`Training of ${m.display_name}`} />}
                {m.failure && <div className="error">{m.failure}</div>}
              </td>
              <td className="num">{fixed(m.score)}</td>
              <td>{when(m.created)}</td>
            </tr>
          ))}
        </Table>
      )}
      {models.polling && (
        <p className="muted" role="status">
          Watching training…{" "}
          <button type="button" className="link" onClick={models.stop}>
            Stop watching
          </button>
        </p>
      )}
      {chosen.length >= 2 && <Compare projectId={id} ids={chosen} />}
      {chosen.length === 1 && <p className="muted">Tick one more model to compare.</p>}
    </>
  );
}

function Compare({ projectId, ids }: { projectId: number; ids: number[] }) {
  const details = useLoad(
    () =>
      Promise.all(
        ids.map((mid) =>
          unwrap(api.GET("/projects/{project_id}/models/{model_id}", { params: { path: { project_id: projectId, model_id: mid } } })),
        ),
      ),
    [projectId, ids.join(",")],
  );
  if (details.error) return <ErrorBox error={details.error} onRetry={details.reload} />;
  if (!details.data) return <Loading />;
  const ms = details.data.map((d) => ({ model: d, metrics: readMetrics(d.metrics) }));
  const kind = (m: Metrics | null) => ((m?.classes?.length ?? 0) > 0 ? "classes" : "labels");
  const k = kind(ms[0]?.metrics ?? null);
  const names = [...new Set(ms.flatMap((x) => (x.metrics?.[k] ?? []).map((s) => s.name)))].sort();
  return (
    <section className="panel" aria-labelledby="compare-h">
      <h2 id="compare-h">Comparison</h2>
      <ScrollRegion label="Figures of the models compared">
        <table>
          <thead>
            <tr>
              <th scope="col">Figure</th>
              {ms.map((x) => (
                <th key={x.model.id} scope="col" className="num">
                  {x.model.display_name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {(["score", "micro_f1", "accuracy", "segments"] as const).map((f) => (
              <tr key={f}>
                <th scope="row">{f.replace("_", " ")}</th>
                {ms.map((x) => (
                  <td key={x.model.id} className="num">
                    {f === "segments" ? (x.metrics?.segments ?? "–") : fixed(x.metrics?.[f])}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollRegion>
      <BarChart
        title={`F1 per ${k === "classes" ? "class" : "label"}, by model`}
        names={names}
        series={ms.map((x) => ({
          name: x.model.display_name,
          values: names.map((n) => x.metrics?.[k]?.find((s) => s.name === n)?.f1 ?? 0),
        }))}
      />
    </section>
  );
}

export function ModelPage() {
  const { project, role, roleForUse } = useProject();
  const mid = Number(useParams().modelId);
  const navigate = useNavigate();
  const model = usePoll(
    () => unwrap(api.GET("/projects/{project_id}/models/{model_id}", { params: { path: { project_id: project.id, model_id: mid } } })),
    (m) => !m || !isFinal(m.status),
    [project.id, mid],
    1500,
  );
  const action = useAction();
  const m = model.data;
  const metrics = m ? readMetrics(m.metrics) : null;
  const remove = () =>
    void action.run(async () => {
      if (!m || !window.confirm(`Delete the model ${m.display_name}?`)) return;
      await unwrap(api.DELETE("/projects/{project_id}/models/{model_id}", { params: { path: { project_id: project.id, model_id: mid } } }));
      navigate(`/projects/${project.id}/models`);
    });
  return (
    <>
      <PageTitle
        actions={
          m && (
            <>
              {["READY", "ACTIVE", "PUBLISHED"].includes(m.status) && (
                <>
                  {/* Its ad-hoc analysis stores nothing: offered in a read-only workspace too. */}
                  {atLeast(roleForUse, NEEDS.work) && (
                    <Link className="button" to={`/analyses?model=${m.id}`}>
                      Analyse with it
                    </Link>
                  )}
                  <button
                    type="button"
                    className="secondary"
                    onClick={() => void download(`/models/${m.id}/download`, `${m.display_name}.lector-model`).catch(action.setError)}
                  >
                    Download
                  </button>
                </>
              )}
              {atLeast(role, NEEDS.manage) && (
                <button type="button" className="secondary danger" onClick={remove}>
                  Delete
                </button>
              )}
            </>
          )
        }
      >
        {m ? m.display_name : "Model"}
      </PageTitle>
      <p className="crumbs">
        <Link to={`/projects/${project.id}/models`}>All models of {project.name}</Link>
      </p>
      <ErrorBox error={action.error} />
      <ErrorBox error={model.error} onRetry={model.reload} />
      {!m && !model.error && <Loading onCancel={() => navigate(`/projects/${project.id}/models`)} />}
      {m && (
        <>
          <section className="panel" aria-live="polite">
            <p>
              <StatusBadge status={m.status} /> {m.type} model · language {m.language} · created {when(m.created)}
              {m.finished && ` · finished ${when(m.finished)}`}
            </p>
            {!isFinal(m.status) && (
              <>
                <Progress value={m.progress} label="Training progress" />
                <p className="muted">
                  Training runs on the server; you may leave this page.{" "}
                  {model.polling ? (
                    <button type="button" className="link" onClick={model.stop}>
                      Stop watching
                    </button>
                  ) : (
                    <button type="button" className="link" onClick={model.reload}>
                      Watch again
                    </button>
                  )}
                </p>
              </>
            )}
            {m.failure && (
              <p className="error" role="alert">
                {m.failure}
              </p>
            )}
          </section>
          {metrics && <MetricsView metrics={metrics} />}
          {m.demoset.length > 0 && <Demoset rows={m.demoset} />}
        </>
      )}
    </>
  );
}

export function MetricsView({ metrics }: { metrics: Metrics }) {
  const per = (metrics.classes?.length ?? 0) > 0 ? metrics.classes! : metrics.labels ?? [];
  const perName = (metrics.classes?.length ?? 0) > 0 ? "class" : "label";
  return (
    <section className="panel" aria-labelledby="metrics-h">
      <h2 id="metrics-h">How well it does on the test segments</h2>
      <div className="metrics-grid">
        <div className="metric">
          <span>Score (macro F1)</span>
          <strong>{fixed(metrics.score)}</strong>
        </div>
        <div className="metric">
          <span>Micro F1</span>
          <strong>{fixed(metrics.micro_f1)}</strong>
        </div>
        <div className="metric">
          <span>Accuracy</span>
          <strong>{percent(metrics.accuracy)}</strong>
        </div>
        <div className="metric">
          <span>Test segments</span>
          <strong>{metrics.segments ?? "–"}</strong>
        </div>
        {metrics.aspect_f1 != null && (
          <div className="metric">
            <span>Aspect F1</span>
            <strong>{fixed(metrics.aspect_f1)}</strong>
          </div>
        )}
        {metrics.sentiment_accuracy != null && (
          <div className="metric">
            <span>Sentiment accuracy</span>
            <strong>{percent(metrics.sentiment_accuracy)}</strong>
          </div>
        )}
      </div>
      {per.length > 0 && (
        <>
          <h3>F1 per {perName}</h3>
          <BarChart title={`F1 per ${perName}`} names={per.map((s) => s.name)} series={[{ name: "F1", values: per.map((s) => s.f1) }]} />
          <Table head={[perName, { figures: "Precision" }, { figures: "Recall" }, { figures: "F1" }, { figures: "Support" }]} caption={`Per ${perName}`}>
            {per.map((s) => (
              <tr key={s.name}>
                <th scope="row" dir="auto">
                  {s.name}
                </th>
                <td className="num">{fixed(s.precision)}</td>
                <td className="num">{fixed(s.recall)}</td>
                <td className="num">{fixed(s.f1)}</td>
                <td className="num">{s.support}</td>
              </tr>
            ))}
          </Table>
        </>
      )}
      {metrics.confusion && metrics.confusion.names.length > 0 ? (
        <>
          <h3>Confusion matrix</h3>
          <Heatmap title="Confusion matrix of labels" names={metrics.confusion.names} matrix={metrics.confusion.matrix} />
        </>
      ) : (
        <p className="muted">
          No confusion matrix: a segment can have several classes, so each class is scored on its own (the bars above).
        </p>
      )}
    </section>
  );
}

function Demoset({ rows }: { rows: Array<Record<string, unknown>> }) {
  return (
    <section className="panel" aria-labelledby="demo-h">
      <h2 id="demo-h">Test segments with predictions</h2>
      <Table head={["Text", "Predicted (confidence)"]} label="Test segments">
        {rows.slice(0, 25).map((r, i) => (
          <tr key={i}>
            <td dir="auto">{String(r.text ?? "")}</td>
            <td>{tagsText(Array.isArray(r.segments) ? (r.segments as Array<{ tags?: unknown[] }>).flatMap((s) => s.tags ?? []) : r.tags)}</td>
          </tr>
        ))}
      </Table>
    </section>
  );
}

function tagsText(v: unknown): string {
  if (!Array.isArray(v)) return v == null ? "–" : String(v);
  return (
    v
      .map((t) => {
        if (t && typeof t === "object") {
          const o = t as Record<string, unknown>;
          const name = [o.class, o.label].filter(Boolean).join(" · ");
          return typeof o.confidence === "number" ? `${name} (${percent(o.confidence)})` : name;
        }
        return String(t);
      })
      .join(", ") || "–"
  );
}
