// Small pure helpers for what pages show.

export function percent(x: number | null | undefined, digits = 0): string {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  return `${(x * 100).toFixed(digits)} %`;
}

/**
 * A share as entered, for thresholds: up to two decimals of a percent, none that are zero
 * (0.999 is "99.9 %", not the "100 %" that reads as never met).
 */
export function exactPercent(x: number | null | undefined): string {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  return `${Number((x * 100).toFixed(2))} %`;
}

export function fixed(x: number | null | undefined, digits = 2): string {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  return x.toFixed(digits);
}

export function when(ts: string | null | undefined): string {
  if (!ts) return "–";
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return ts;
  return d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

/** Statuses after which a task, model, analysis or group no longer changes. */
const FINAL = new Set(["READY", "FAILED", "FINISHED", "DONE", "SUCCEEDED", "CANCELLED", "CREATED", "ACTIVE", "PUBLISHED", "COMPLETED", "ERROR"]);
export function isFinal(status: string | null | undefined): boolean {
  return !!status && FINAL.has(status.toUpperCase());
}
export function isFailed(status: string | null | undefined): boolean {
  return !!status && ["FAILED", "ERROR", "CANCELLED"].includes(status.toUpperCase());
}

/** Projects grouped by type in a stable order (CLASS, LABEL, CLASSLABEL, ABSA, then others). */
export function byType<T extends { type: string; name: string }>(items: T[]): Array<[string, T[]]> {
  const order = ["CLASS", "LABEL", "CLASSLABEL", "ABSA"];
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const list = groups.get(item.type) ?? [];
    list.push(item);
    groups.set(item.type, list);
  }
  const rank = (t: string) => (order.includes(t) ? order.indexOf(t) : order.length);
  return [...groups.entries()]
    .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
    .map(([t, list]) => [t, [...list].sort((x, y) => x.name.localeCompare(y.name))]);
}

export const TYPE_NAMES: Record<string, string> = {
  CLASS: "Classification",
  LABEL: "Labels (sentiment or fields)",
  CLASSLABEL: "Class and label",
  ABSA: "Aspects and sentiment",
};

/** Which of classes and labels a project type tags a segment with. */
export function tagKinds(type: string): { classes: boolean; labels: boolean } {
  switch (type) {
    case "CLASS":
      return { classes: true, labels: false };
    case "LABEL":
      return { classes: false, labels: true };
    default:
      return { classes: true, labels: true };
  }
}

/**
 * The fill of a heat-map cell: white to the theme's blue, by share of the largest value.
 * Answers an rgb() string for SVG `fill` attributes, and whether text on it should be light.
 */
export function heat(value: number, max: number): { fill: string; light: boolean } {
  const t = max > 0 ? Math.max(0, Math.min(1, value / max)) : 0;
  const from = [255, 255, 255];
  const to = [23, 70, 150];
  const c = from.map((f, i) => Math.round(f + (to[i] - f) * t));
  return { fill: `rgb(${c[0]}, ${c[1]}, ${c[2]})`, light: t > 0.5 };
}

export type Metrics = {
  segments?: number;
  accuracy?: number;
  micro_f1?: number;
  macro_f1?: number;
  score?: number;
  classes?: Array<{ name: string; precision: number; recall: number; f1: number; support: number }>;
  labels?: Array<{ name: string; precision: number; recall: number; f1: number; support: number }>;
  confusion?: { names: string[]; matrix: number[][] } | null;
  aspect_f1?: number | null;
  sentiment_accuracy?: number | null;
};

/** Reads a model's `metrics` object defensively (it is a free-form object in the schema). */
export function readMetrics(raw: unknown): Metrics | null {
  if (!raw || typeof raw !== "object") return null;
  const m = raw as Record<string, unknown>;
  const num = (k: string) => (typeof m[k] === "number" ? (m[k] as number) : undefined);
  const scores = (k: string) =>
    Array.isArray(m[k])
      ? (m[k] as Array<Record<string, unknown>>)
          .filter((s) => s && typeof s.name === "string")
          .map((s) => ({
            name: s.name as string,
            precision: Number(s.precision ?? 0),
            recall: Number(s.recall ?? 0),
            f1: Number(s.f1 ?? 0),
            support: Number(s.support ?? 0),
          }))
      : [];
  const c = m.confusion as { names?: unknown; matrix?: unknown } | null | undefined;
  const confusion =
    c && Array.isArray(c.names) && Array.isArray(c.matrix)
      ? { names: c.names as string[], matrix: c.matrix as number[][] }
      : null;
  if (num("score") === undefined && !Array.isArray(m.classes) && !Array.isArray(m.labels)) return null;
  return {
    segments: num("segments"),
    accuracy: num("accuracy"),
    micro_f1: num("micro_f1"),
    macro_f1: num("macro_f1"),
    score: num("score"),
    classes: scores("classes"),
    labels: scores("labels"),
    confusion,
    aspect_f1: num("aspect_f1") ?? null,
    sentiment_accuracy: num("sentiment_accuracy") ?? null,
  };
}

/** How a user is named in the top bar: first and last name, else the e-mail address. */
export function displayName(user: { first_name: string; last_name: string; email: string }): string {
  return `${user.first_name.trim()} ${user.last_name.trim()}`.trim() || user.email;
}
