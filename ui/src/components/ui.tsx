// Small building blocks shared by the pages.
import { useEffect, useId, useRef, useState, type InputHTMLAttributes, type ReactNode } from "react";
import { Link } from "react-router";
import { pageRange, previousOffset, type Page } from "../lib/paging";

/** An error answer as the user reads it: the problem's detail. */
export function ErrorBox({ error, onRetry }: { error: Error | null | undefined; onRetry?: () => void }) {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      <span>{error.message}</span>
      {onRetry && (
        <button type="button" className="link" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** A loading line with a way out: back, or cancel when given. */
export function Loading({ label = "Loading", onCancel }: { label?: string; onCancel?: () => void }) {
  return (
    <p className="loading" role="status">
      <span className="spinner" aria-hidden="true" /> {label}…{" "}
      {onCancel ? (
        <button type="button" className="link" onClick={onCancel}>
          Cancel
        </button>
      ) : (
        <Link to=".." relative="path">
          Back
        </Link>
      )}
    </p>
  );
}

/** A labelled form field; the label is tied to its input. */
export function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: string;
  children: (id: string, describedBy: string | undefined) => ReactNode;
}) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id, hintId)}
      {hint && (
        <small id={hintId} className="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

/**
 * A labelled `<input>` (a `Field` whose child is a plain input): the input gets the label's id and
 * is described by the hint when there is one, else by its own `aria-describedby`, if given.
 */
export function InputField({ label, hint, ...input }: { label: string; hint?: string } & Omit<InputHTMLAttributes<HTMLInputElement>, "id">) {
  return (
    <Field label={label} hint={hint}>
      {(id, hintId) => <input {...input} id={id} aria-describedby={hintId ?? input["aria-describedby"]} />}
    </Field>
  );
}

/** A required password input under its label; `autoComplete` says whether it asks for the present password or a new one. */
export function PasswordField(
  props: { label: string; hint?: string; autoComplete: "current-password" | "new-password" } & Omit<
    InputHTMLAttributes<HTMLInputElement>,
    "id" | "type" | "required" | "autoComplete"
  >,
) {
  return <InputField {...props} type="password" required />;
}

/** A progress bar with its figure in words. */
export function Progress({ value, label }: { value: number; label: string }) {
  const v = Math.max(0, Math.min(1, value || 0));
  return (
    <div className="progress">
      <progress max={1} value={v} aria-label={label} />
      <span>{Math.round(v * 100)} %</span>
    </div>
  );
}

export function StatusBadge({ status }: { status: string }) {
  const s = status.toUpperCase();
  const kind = ["FAILED", "ERROR", "CANCELLED", "REJECTED"].includes(s)
    ? "bad"
    : ["READY", "DONE", "FINISHED", "ACTIVE", "PUBLISHED", "APPROVED", "CREATED"].includes(s)
      ? "good"
      : "busy";
  return <span className={`badge badge-${kind}`}>{status}</span>;
}

/** Sets the document title and moves focus to the page heading on navigation. */
export function PageTitle({ children, actions }: { children: string; actions?: ReactNode }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${children} · Lector`;
  }, [children]);
  return (
    <div className="page-title">
      <h1 ref={ref} tabIndex={-1} dir="auto">
        {children}
      </h1>
      {actions && <div className="actions">{actions}</div>}
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

/** The options of a model picker: one a model, by its display name (and its type when asked). */
export function ModelOptions({ models, showType = false }: { models: { id: number; display_name: string; type?: string }[]; showType?: boolean }) {
  return models.map((m) => (
    <option key={m.id} value={m.id}>
      {showType ? `${m.display_name} (${m.type})` : m.display_name}
    </option>
  ));
}

/** A column heading: its text, or a heading over figures (set right-aligned); `false` leaves it out. */
export type Column = ReactNode | { figures: ReactNode } | false;

/**
 * What holds a table: it scrolls sideways when the table is wider than the screen, and then
 * takes focus (Tab reaches it, arrow keys scroll it) as a region named `label`.
 */
export function ScrollRegion({ label, children }: { label: string; children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrolls, setScrolls] = useState(false);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const check = () => setScrolls(el.scrollWidth > el.clientWidth + 1);
    check();
    const watch = new ResizeObserver(check);
    watch.observe(el);
    if (el.firstElementChild) watch.observe(el.firstElementChild);
    return () => watch.disconnect();
  }, []);
  return (
    <div ref={ref} className="table-wrap" {...(scrolls ? { tabIndex: 0, role: "region", "aria-label": label } : {})}>
      {children}
    </div>
  );
}

/**
 * A table that scrolls sideways on a narrow screen, under a row of column headings; `label`
 * (else the caption) names it while it scrolls.
 */
export function Table({
  head,
  caption,
  label,
  className,
  children,
}: {
  head: Column[];
  caption?: string;
  label?: string;
  className?: string;
  children: ReactNode;
}) {
  return (
    <ScrollRegion label={label ?? caption ?? "Table"}>
      <table className={className}>
        {caption && <caption>{caption}</caption>}
        <thead>
          <tr>
            {head.map((c, i) =>
              c === false ? null : c !== null && typeof c === "object" && "figures" in c ? (
                <th key={i} scope="col" className="num">
                  {c.figures}
                </th>
              ) : (
                <th key={i} scope="col">
                  {c}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </ScrollRegion>
  );
}

/**
 * The previous and next page of a list and which items are shown ("Members 101–200", "of 250"
 * when the total is known); nothing when one page holds the whole list. A page left empty (its
 * last items removed) steps back to the page before.
 */
export function Pager({ page, size, what, onChange }: { page: Page<unknown>; size: number; what: string; onChange: (offset: number) => void }) {
  const { first, last, total } = pageRange(page);
  const stranded = page.items.length === 0 && page.offset > 0;
  useEffect(() => {
    if (stranded) onChange(previousOffset(page.offset, size));
  }, [stranded, page.offset, size, onChange]);
  if (page.offset === 0 && !page.hasMore) return null;
  return (
    <nav className="row" aria-label={`Pages of ${what.toLowerCase()}`}>
      <button type="button" className="secondary" disabled={page.offset === 0} onClick={() => onChange(previousOffset(page.offset, size))}>
        Previous page
      </button>
      <span>
        {what} {first}–{last}
        {total !== undefined && ` of ${total}`}
      </span>
      <button type="button" className="secondary" disabled={!page.hasMore} onClick={() => onChange(page.offset + size)}>
        Next page
      </button>
    </nav>
  );
}
