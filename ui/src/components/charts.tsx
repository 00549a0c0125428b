// Charts drawn as SVG with attributes only (no style attributes: the CSP forbids them).
import { heat } from "../lib/format";

type Series = { name: string; values: number[] };

/**
 * Horizontal bars, one row per name; several series draw grouped bars. Values in [0, max].
 * The numbers are written beside the bars, and the SVG has a title and description.
 */
export function BarChart({
  title,
  names,
  series,
  max = 1,
  format = (v: number) => v.toFixed(2),
}: {
  title: string;
  names: string[];
  series: Series[];
  max?: number;
  format?: (v: number) => string;
}) {
  const label = 150;
  const width = 560;
  const barArea = width - label - 60;
  const bar = 16;
  const gap = 10;
  const rowH = series.length * bar + gap;
  const height = names.length * rowH + 8;
  const scale = (v: number) => (max > 0 ? Math.max(0, Math.min(1, v / max)) * barArea : 0);
  const id = title.replace(/\W+/g, "-").toLowerCase();
  return (
    <figure className="figure">
      <svg
        className="chart"
        viewBox={`0 0 ${width} ${Math.max(height, 20)}`}
        width={width}
        height={Math.max(height, 20)}
        role="img"
        aria-labelledby={`${id}-t ${id}-d`}
      >
        <title id={`${id}-t`}>{title}</title>
        <desc id={`${id}-d`}>
          {names
            .map((n, i) => `${n}: ${series.map((s) => (series.length > 1 ? `${s.name} ` : "") + format(s.values[i] ?? 0)).join(", ")}`)
            .join("; ")}
        </desc>
        <line className="axis" x1={label} y1={0} x2={label} y2={height} />
        {names.map((n, i) => (
          <g key={n} transform={`translate(0, ${i * rowH + 4})`}>
            <text x={label - 8} y={(series.length * bar) / 2 + 4} textAnchor="end">
              {n.length > 22 ? n.slice(0, 21) + "…" : n}
            </text>
            {series.map((s, k) => (
              <g key={s.name}>
                <rect className={k % 2 ? "bar-alt" : "bar"} x={label} y={k * bar} width={scale(s.values[i] ?? 0)} height={bar - 2} />
                <text x={label + scale(s.values[i] ?? 0) + 6} y={k * bar + bar - 5}>
                  {format(s.values[i] ?? 0)}
                </text>
              </g>
            ))}
          </g>
        ))}
      </svg>
      {series.length > 1 && (
        <figcaption className="legend">
          {series.map((s, k) => (
            <span key={s.name}>
              <svg width="12" height="12" aria-hidden="true">
                <rect className={k % 2 ? "bar-alt" : "bar"} width="12" height="12" />
              </svg>{" "}
              {s.name}
            </span>
          ))}
        </figcaption>
      )}
    </figure>
  );
}

/** A confusion matrix as a heat map: rows are the true names, columns the predicted. */
export function Heatmap({ title, names, matrix }: { title: string; names: string[]; matrix: number[][] }) {
  const cell = 44;
  const label = 120;
  const top = 90;
  const n = names.length;
  const width = label + n * cell + 10;
  const height = top + n * cell + 10;
  const max = Math.max(0, ...matrix.flat());
  const id = title.replace(/\W+/g, "-").toLowerCase();
  const short = (s: string) => (s.length > 14 ? s.slice(0, 13) + "…" : s || "(none)");
  return (
    <figure className="figure">
      <svg className="chart" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-labelledby={`${id}-t ${id}-d`}>
        <title id={`${id}-t`}>{title}</title>
        <desc id={`${id}-d`}>
          {names.map((g, i) => `true ${g || "(none)"}: ${names.map((p, j) => `${matrix[i]?.[j] ?? 0} predicted ${p || "(none)"}`).join(", ")}`).join("; ")}
        </desc>
        {names.map((p, j) => (
          <text key={`c${j}`} x={label + j * cell + cell / 2} y={top - 8} textAnchor="start" transform={`rotate(-45 ${label + j * cell + cell / 2} ${top - 8})`}>
            {short(p)}
          </text>
        ))}
        {names.map((g, i) => (
          <g key={`r${i}`}>
            <text x={label - 6} y={top + i * cell + cell / 2 + 4} textAnchor="end">
              {short(g)}
            </text>
            {names.map((_, j) => {
              const v = matrix[i]?.[j] ?? 0;
              const h = heat(v, max);
              return (
                <g key={j}>
                  <rect x={label + j * cell} y={top + i * cell} width={cell - 2} height={cell - 2} fill={h.fill} stroke="#d5d9df" />
                  <text x={label + j * cell + cell / 2 - 1} y={top + i * cell + cell / 2 + 4} textAnchor="middle" className={h.light ? "light" : ""}>
                    {v}
                  </text>
                </g>
              );
            })}
          </g>
        ))}
      </svg>
      <figcaption className="muted">Rows: true; columns: predicted. Darker is more.</figcaption>
    </figure>
  );
}
