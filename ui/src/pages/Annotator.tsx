// The keyboard-first annotator, for labeling sessions and (with the model's suggestions and
// their confidence) correction sessions. One document at a time; the focused segment takes the
// shortcuts: number keys toggle class chips (Shift+number labels), Enter marks the segment
// annotated and moves on, s selects a part of the segment word by word, n/p change document.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { Link, Navigate, useNavigate, useParams, useSearchParams } from "react-router";
import { api, unwrap, type Schemas } from "../api/client";
import { percent, tagKinds } from "../lib/format";
import { chipIndex, chipKey, isTyping, waitsForDocument, type HeldKey } from "../lib/keys";
import { readOffset } from "../lib/links";
import { NEEDS, roleNote } from "../lib/roles";
import { partSpan, pieces, words } from "../lib/text";
import { ErrorBox, Loading, PageTitle, Progress } from "../components/ui";
import { useProject } from "./Project";

type Tag = Schemas["TagDto"];
type Segment = Schemas["SegmentDto"];
type Doc = Schemas["DocumentDto"];
type Page = Schemas["SessionDocumentsDto"];
type TagBody = Schemas["TagBody"];
type Mode = "annotation" | "correction";

type Adapter = {
  load(offset: number): Promise<Page>;
  addTag(doc: number, seg: number, body: TagBody): Promise<Tag>;
  updateTag(doc: number, seg: number, tag: number, body: TagBody): Promise<Tag>;
  deleteTag(doc: number, seg: number, tag: number): Promise<void>;
  mark(doc: number, seg: number): Promise<{ progress: number; predicted?: number | null }>;
  confirm?(doc: number, seg: number, tag: number): Promise<Tag>;
};

function adapter(mode: Mode, project: number, session: number): Adapter {
  if (mode === "annotation") {
    const seg = (d: number, s: number) => ({
      params: { path: { project_id: project, annotation_id: session, document_id: d, segment_id: s } },
    });
    return {
      load: (offset) =>
        unwrap(
          api.GET("/projects/{project_id}/annotations/{annotation_id}/documents", {
            params: {
              path: { project_id: project, annotation_id: session },
              query: { details: "segments,tags", offset, limit: 1 },
            },
          }),
        ),
      addTag: (d, s, body) =>
        unwrap(api.POST("/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/tags", { ...seg(d, s), body })),
      updateTag: (d, s, t, body) =>
        unwrap(
          api.PUT("/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}", {
            params: { path: { ...seg(d, s).params.path, tag_id: t } },
            body,
          }),
        ),
      deleteTag: async (d, s, t) => {
        await unwrap(
          api.DELETE("/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}", {
            params: { path: { ...seg(d, s).params.path, tag_id: t } },
          }),
        );
      },
      mark: async (d, s) => {
        const m = await unwrap(
          api.POST("/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/statuses", {
            ...seg(d, s),
            body: { name: "ANNOTATED" },
          }),
        );
        return { progress: m.progress };
      },
    };
  }
  const seg = (d: number, s: number) => ({
    params: { path: { project_id: project, correction_id: session, document_id: d, segment_id: s } },
  });
  return {
    load: (offset) =>
      unwrap(
        api.GET("/projects/{project_id}/corrections/{correction_id}/documents", {
          params: { path: { project_id: project, correction_id: session }, query: { details: "segments,tags", offset, limit: 1 } },
        }),
      ),
    // A correction session's tag changes answer the tag with the segment's mark, the predicted
    // score and the progress (as the original's CreateCorrectionTagResponse); the tag is kept.
    addTag: (d, s, body) =>
      unwrap(api.POST("/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags", { ...seg(d, s), body })).then(
        (a) => a.tag,
      ),
    updateTag: (d, s, t, body) =>
      unwrap(
        api.PUT("/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}", {
          params: { path: { ...seg(d, s).params.path, tag_id: t } },
          body,
        }),
      ).then((a) => a.tag),
    deleteTag: async (d, s, t) => {
      await unwrap(
        api.DELETE("/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}", {
          params: { path: { ...seg(d, s).params.path, tag_id: t } },
        }),
      );
    },
    mark: async (d, s) => {
      const m = await unwrap(
        api.POST("/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/statuses", {
          ...seg(d, s),
          body: { name: "ANNOTATED" },
        }),
      );
      return { progress: m.progress, predicted: m.predicted_score };
    },
    confirm: (d, s, t) =>
      unwrap(
        api.POST("/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}/statuses", {
          params: { path: { ...seg(d, s).params.path, tag_id: t } },
          body: { status: "READY" },
        }),
      ).then((a) => a.tag),
  };
}

type Part = { from: number; to: number } | null; // word indexes, inclusive

const SHORTCUTS: Array<[string, string]> = [
  ["↓ or j / ↑ or k", "next / previous segment"],
  ["1 … 9, 0", "toggle a class on the segment (or on the selected part)"],
  ["Shift + 1 … 9", "toggle a label (pair projects: with the class picked)"],
  ["Enter", "mark the segment annotated and go to the next (the next document after the last)"],
  ["s", "select a part of the segment: ← → move, Shift + ← → widen, Esc cancels"],
  ["Backspace", "remove the segment's last tag"],
  ["c", "confirm the model's tags (correction sessions)"],
  ["n / p", "next / previous document"],
  ["?", "show or hide these shortcuts"],
];

export function AnnotatorPage({ mode }: { mode: Mode }) {
  const { project, role } = useProject();
  // A viewer reads the session; tagging and marking need an annotator.
  const tagNote = roleNote(role, NEEDS.tag, "Tagging and marking segments");
  const params = useParams();
  const sessionId = Number(params.sessionId);
  const [search, setSearch] = useSearchParams();
  const offset = readOffset(search.get("doc"));
  const navigate = useNavigate();
  const api2 = useMemo(() => adapter(mode, project.id, sessionId), [mode, project.id, sessionId]);

  const [page, setPage] = useState<Page | null>(null);
  const [doc, setDoc] = useState<Doc | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [loading, setLoading] = useState(true);
  const [current, setCurrent] = useState(0);
  const [part, setPart] = useState<Part>(null);
  const [pendingClass, setPendingClass] = useState<string | null>(null);
  const [progress, setProgress] = useState(0);
  const [predicted, setPredicted] = useState<number | null>(null);
  const [help, setHelp] = useState(false);
  const [announce, setAnnounce] = useState("");
  const listRef = useRef<HTMLOListElement>(null);
  // The latest load: an answer to an earlier one (another document asked for since) is dropped.
  const loads = useRef(0);
  const docRef = useRef<Doc | null>(null);
  // Keys typed ahead: while a document loads, or while an Enter (or n, p) is on its way to the
  // next segment or document, the keys after it wait here and apply, in order, where it lands.
  const held = useRef<HeldKey[]>([]);
  const [heldCount, setHeldCount] = useState(0);
  const [, setDrain] = useState(0);
  const moving = useRef(false);
  const setHeld = (keys: HeldKey[]) => {
    held.current = keys;
    setHeldCount(keys.length);
  };

  const load = useCallback(() => {
    setLoading(true);
    setError(null);
    const at = ++loads.current;
    const stale = () => loads.current !== at;
    api2
      .load(offset)
      .then((p) => {
        if (stale()) return;
        if (p.documents.length === 0 && p.document_count > 0 && offset >= p.document_count) {
          // Past the session's end (an old bookmark, documents removed since): its last document.
          setSearch({ doc: String(p.document_count - 1) }, { replace: true });
          return;
        }
        setPage(p);
        docRef.current = p.documents[0] ?? null;
        setDoc(p.documents[0] ?? null);
        setProgress(p.progress);
        const segs = p.documents[0]?.segments ?? [];
        const firstOpen = segs.findIndex((s) => s.status !== "ANNOTATED");
        setCurrent(firstOpen >= 0 ? firstOpen : 0);
        setPart(null);
        moving.current = false;
      })
      .catch((e: Error) => {
        if (stale()) return;
        setError(e);
        // Keys typed for a document that did not come are not applied to another one.
        moving.current = false;
        setHeld([]);
      })
      .finally(() => !stale() && setLoading(false));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api2, offset]);

  useEffect(() => {
    load();
    return () => {
      loads.current += 1;
    };
  }, [load]);

  // A correction session is PREDICTING while the model tags its documents: read it again until
  // they are there.
  const predicting = page?.status === "PREDICTING";
  useEffect(() => {
    if (!predicting) return;
    const timer = setTimeout(load, 1000);
    return () => clearTimeout(timer);
  }, [predicting, page, load]);

  // While the next document loads, the last one is neither shown nor changed by keys.
  const fresh = !!page && page.offset === offset;
  const shown = fresh ? doc : null;
  const segments = shown?.segments ?? [];
  const seg: Segment | undefined = segments[current];
  const kinds = tagKinds(project.type);
  const pair = kinds.classes && kinds.labels;
  const classes = page?.classes ?? [];
  const labels = page?.labels ?? [];
  const total = page?.document_count ?? 0;

  // Changes go through refs updated at once, so that keys pressed in a quick row (queued, one
  // request at a time) each see what the ones before them did.
  const currentRef = useRef(current);
  currentRef.current = current;
  const queue = useRef<Promise<void>>(Promise.resolve());
  const [pending, setPending] = useState(0);

  const latest = (id: number): Segment | undefined => docRef.current?.segments?.find((x) => x.id === id);
  const updateSegment = (id: number, f: (s: Segment) => Segment) => {
    const d = docRef.current;
    if (!d) return;
    const next = { ...d, segments: (d.segments ?? []).map((x) => (x.id === id ? f(x) : x)) };
    docRef.current = next;
    setDoc(next);
  };
  const moveTo = (i: number) => {
    currentRef.current = i;
    setCurrent(i);
  };

  /** Queues a change against the API: one request at a time, in the order of the keys. */
  const act = (f: () => Promise<void>) => {
    const docId = docRef.current?.id;
    setPending((n) => n + 1);
    queue.current = queue.current.then(async () => {
      try {
        // A change for a document no longer shown is dropped.
        if (docRef.current?.id === docId) await f();
      } catch (e) {
        setError(e as Error);
      } finally {
        setPending((n) => n - 1);
      }
    });
    return queue.current;
  };
  const busy = pending > 0;

  const selectedPart = (): { span: [number, number]; text: string } | null => {
    if (!seg || !part) return null;
    const w = words(seg.text);
    const a = w[Math.min(part.from, part.to)];
    const b = w[Math.max(part.from, part.to)];
    if (!a || !b) return null;
    return partSpan(seg.text, seg.span[0], a[0], b[1]);
  };

  /** The part the mouse selected inside the current segment's text, if any. */
  const mousePart = (): { span: [number, number]; text: string } | null => {
    const sel = window.getSelection();
    if (!seg || !sel || sel.isCollapsed || sel.rangeCount === 0) return null;
    const host = listRef.current?.querySelector(`[data-segment="${seg.id}"] .segment-text`);
    if (!host) return null;
    const range = sel.getRangeAt(0);
    if (!host.contains(range.startContainer) || !host.contains(range.endContainer)) return null;
    const pre = document.createRange();
    pre.selectNodeContents(host);
    pre.setEnd(range.startContainer, range.startOffset);
    const from = pre.toString().length;
    const to = from + range.toString().length;
    return partSpan(seg.text, seg.span[0], from, to);
  };

  const toggle = (kind: "class" | "label", name: string) => {
    if (!seg || !shown) return;
    const segId = seg.id;
    const docId = shown.id;
    const chosen = selectedPart() ?? mousePart();
    let body: TagBody;
    if (pair) {
      if (kind === "class") {
        setPendingClass(name === pendingClass ? null : name);
        setAnnounce(name === pendingClass ? "Class cleared" : `Class ${name} picked; press Shift and a number for its label`);
        return;
      }
      if (!pendingClass) {
        setError(new Error("Pick a class first (a number key), then its label (Shift + number)."));
        return;
      }
      body = { class: pendingClass, label: name };
    } else {
      body = kind === "class" ? { class: name } : { label: name };
    }
    if (chosen) {
      setPart(null);
      window.getSelection()?.removeAllRanges();
    }
    setError(null);
    void act(async () => {
      const s = latest(segId);
      if (!s) return;
      const tags = s.tags ?? [];
      if (chosen) {
        const added = await api2.addTag(docId, segId, { ...body, span: chosen.span, text: chosen.text });
        updateSegment(segId, (x) => ({ ...x, tags: [...(x.tags ?? []), added] }));
        setAnnounce(`Tagged "${chosen.text}" as ${name}`);
        return;
      }
      const whole = tags.filter((t) => !partOf(t, s));
      const same = whole.find((t) => (pair ? t.class === body.class && t.label === body.label : kind === "class" ? t.class === name : t.label === name));
      if (same) {
        await api2.deleteTag(docId, segId, same.id);
        updateSegment(segId, (x) => ({ ...x, tags: (x.tags ?? []).filter((t) => t.id !== same.id) }));
        setAnnounce(`Removed ${name}`);
        return;
      }
      if (!kinds.classes && whole.length > 0) {
        // A label project gives a segment one label: change it.
        const updated = await api2.updateTag(docId, segId, whole[0].id, body);
        updateSegment(segId, (x) => ({ ...x, tags: (x.tags ?? []).map((t) => (t.id === updated.id ? updated : t)) }));
      } else {
        const added = await api2.addTag(docId, segId, body);
        updateSegment(segId, (x) => ({ ...x, tags: [...(x.tags ?? []), added] }));
      }
      setAnnounce(`Tagged with ${name}`);
    });
  };

  const removeTag = (segId: number, tagId: number) => {
    if (!shown) return;
    const docId = shown.id;
    void act(async () => {
      await api2.deleteTag(docId, segId, tagId);
      updateSegment(segId, (x) => ({ ...x, tags: (x.tags ?? []).filter((t) => t.id !== tagId) }));
      setAnnounce("Tag removed");
    });
  };

  const removeLast = () => {
    if (!seg) return;
    const segId = seg.id;
    const docId = shown?.id;
    if (docId === undefined) return;
    void act(async () => {
      const tags = latest(segId)?.tags ?? [];
      const last = tags[tags.length - 1];
      if (!last) return;
      await api2.deleteTag(docId, segId, last.id);
      updateSegment(segId, (x) => ({ ...x, tags: (x.tags ?? []).filter((t) => t.id !== last.id) }));
      setAnnounce("Tag removed");
    });
  };

  const confirmAll = () => {
    if (!seg || !shown || !api2.confirm) return;
    const segId = seg.id;
    const docId = shown.id;
    const confirm = api2.confirm;
    void act(async () => {
      const out: Tag[] = [];
      for (const t of latest(segId)?.tags ?? []) {
        out.push(t.status && t.status !== "READY" ? await confirm(docId, segId, t.id) : t);
      }
      updateSegment(segId, (x) => ({ ...x, tags: out }));
      setAnnounce("Suggestions confirmed");
    });
  };

  const markAndNext = () => {
    if (!seg || !shown) return;
    const segId = seg.id;
    const docId = shown.id;
    const at = offset;
    setPart(null);
    moving.current = true;
    let away = false;
    void act(async () => {
      try {
        away = await markThenMove(docId, segId, at);
      } catch (e) {
        // The keys typed after a failed Enter were meant for the next segment: none applies.
        setHeld([]);
        throw e;
      }
    }).then(() => {
      // Still on this document: the keys typed meanwhile apply to the segment now current.
      if (!away) {
        moving.current = false;
        setDrain((n) => n + 1);
      }
    });
  };

  /** Marks a segment annotated and moves on; answers whether another document opens. */
  const markThenMove = async (docId: number, segId: number, at: number): Promise<boolean> => {
    const answer = await api2.mark(docId, segId);
    updateSegment(segId, (x) => ({ ...x, status: "ANNOTATED" }));
    setProgress(answer.progress);
    if (answer.predicted !== undefined) setPredicted(answer.predicted ?? null);
    const list = docRef.current?.segments ?? [];
    const here = list.findIndex((x) => x.id === segId);
    const open = list.findIndex((x, i) => i > here && x.status !== "ANNOTATED");
    const allDone = list.every((x) => x.status === "ANNOTATED");
    if (currentRef.current !== here) {
      setAnnounce("Marked annotated");
    } else if (open >= 0) {
      moveTo(open);
      setAnnounce("Marked annotated");
    } else if (here < list.length - 1) {
      moveTo(here + 1);
      setAnnounce("Marked annotated");
    } else if (allDone && at + 1 < total) {
      // The document is done: on to the next one.
      setAnnounce("Document done; next document");
      return goDoc(at + 1);
    } else {
      setAnnounce(allDone ? "Marked annotated; that was the last document." : "Marked annotated; some segments above are still open.");
    }
    return false;
  };

  /** Opens another document; answers whether it does (there is one at `to`). */
  const goDoc = (to: number): boolean => {
    if (to < 0 || to >= total) return false;
    moving.current = true;
    setSearch({ doc: String(to) });
    return true;
  };

  useEffect(() => {
    listRef.current?.querySelector<HTMLElement>(`[data-index="${current}"]`)?.scrollIntoView?.({ block: "nearest" });
  }, [current, doc]);

  /** What a key does to the document shown; `e.preventDefault` when the annotator takes it. */
  const press = (e: { key: string; code: string; shiftKey: boolean; preventDefault: () => void }) => {
    if (tagNote && (chipIndex(e.code) !== null || ["Enter", "Backspace", "Delete", "c", "s"].includes(e.key))) return;
    const idx = chipIndex(e.code);
    if (idx !== null) {
      e.preventDefault();
      const wantLabel = e.shiftKey || !kinds.classes;
      const list = wantLabel ? labels : classes;
      const item = list[idx];
      if (item) toggle(wantLabel ? "label" : "class", item.name);
      return;
    }
    const w = seg ? words(seg.text) : [];
    switch (e.key) {
      case "ArrowDown":
      case "j":
        if (part) return;
        e.preventDefault();
        setCurrent((c) => Math.min(segments.length - 1, c + 1));
        setPart(null);
        break;
      case "ArrowUp":
      case "k":
        if (part) return;
        e.preventDefault();
        setCurrent((c) => Math.max(0, c - 1));
        setPart(null);
        break;
      case "ArrowRight":
        if (!part) return;
        e.preventDefault();
        setPart((p) => {
          if (!p) return p;
          if (e.shiftKey) return { ...p, to: Math.min(w.length - 1, p.to + 1) };
          const n = Math.min(w.length - 1, p.to + 1);
          return { from: n, to: n };
        });
        break;
      case "ArrowLeft":
        if (!part) return;
        e.preventDefault();
        setPart((p) => {
          if (!p) return p;
          if (e.shiftKey) return { ...p, to: Math.max(p.from, p.to - 1) };
          const n = Math.max(0, p.from - 1);
          return { from: n, to: n };
        });
        break;
      case "s":
        if (!seg || w.length === 0) return;
        e.preventDefault();
        setPart(part ? null : { from: 0, to: 0 });
        break;
      case "Escape":
        if (part) {
          e.preventDefault();
          setPart(null);
        } else if (help) setHelp(false);
        break;
      case "Enter":
        e.preventDefault();
        markAndNext();
        break;
      case "Backspace":
      case "Delete":
        if (!seg) return;
        e.preventDefault();
        removeLast();
        break;
      case "c":
        if (mode === "correction") {
          e.preventDefault();
          confirmAll();
        }
        break;
      case "n":
      case "PageDown":
        e.preventDefault();
        goDoc(offset + 1);
        break;
      case "p":
      case "PageUp":
        e.preventDefault();
        goDoc(offset - 1);
        break;
      case "?":
        e.preventDefault();
        setHelp((h) => !h);
        break;
    }
  };

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isTyping(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
      const target = e.target as HTMLElement | null;
      if (target && (target.tagName === "BUTTON" || target.tagName === "A") && (e.key === "Enter" || e.key === " ")) return;
      // While a document loads or an Enter is on its way, keys wait for where it lands.
      if ((!shown || moving.current || held.current.length > 0) && waitsForDocument(e, mode === "correction")) {
        e.preventDefault();
        setHeld([...held.current, { key: e.key, code: e.code, shiftKey: e.shiftKey }]);
        return;
      }
      press(e);
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  });

  // The keys typed ahead, one per render (each sees what the one before did), once the document
  // is shown and nothing is on its way.
  useEffect(() => {
    if (!shown || moving.current || held.current.length === 0) return;
    const [next, ...rest] = held.current;
    setHeld(rest);
    press({ ...next, preventDefault: () => {} });
  });

  // A correction session opened by a labeling link: its own view, with the model's suggestions.
  if (mode === "annotation" && page?.mode === "CORRECTION") {
    return <Navigate to={`/projects/${project.id}/corrections/${sessionId}?${search}`} replace />;
  }

  const back = `/projects/${project.id}/labeling`;
  const sessionName = page?.name ?? (mode === "annotation" ? "Labeling session" : "Correction session");
  const partNow = selectedPart();

  return (
    <div className="annotator">
      <PageTitle
        actions={
          <>
            <button type="button" className="secondary" aria-expanded={help} aria-controls="shortcuts" onClick={() => setHelp(!help)}>
              Shortcuts (?)
            </button>
            <Link to={back} className="button secondary">
              Back to sessions
            </Link>
          </>
        }
      >
        {sessionName}
      </PageTitle>
      {help && (
        <section id="shortcuts" className="panel" aria-label="Keyboard shortcuts">
          <dl className="shortcuts">
            {SHORTCUTS.map(([k, v]) => (
              <div key={k}>
                <dt>
                  <kbd>{k}</kbd>
                </dt>
                <dd>{v}</dd>
              </div>
            ))}
          </dl>
        </section>
      )}
      {!page && error ? (
        // Nothing of the session came (it does not exist, or the server cannot be reached).
        <ErrorBox error={error} onRetry={load} />
      ) : (
        <>
          <div className="annotator-bar">
            <Progress value={progress} label="Segments annotated in this session" />
            <span>
              {fresh ? `Document ${total === 0 ? 0 : offset + 1} of ${total}` : "Loading document…"}
            </span>
            {heldCount > 0 && (
              <span className="muted">
                {heldCount === 1 ? "1 key waits" : `${heldCount} keys wait`} for the {shown ? "next segment" : "document"}
              </span>
            )}
            {mode === "correction" && predicted !== null && <span>Predicted score after corrections: {percent(predicted, 1)}</span>}
            <div className="row">
              <button type="button" className="secondary" onClick={() => goDoc(offset - 1)} disabled={offset <= 0}>
                Previous document (p)
              </button>
              <button type="button" onClick={() => goDoc(offset + 1)} disabled={offset + 1 >= total}>
                Next document (n)
              </button>
            </div>
          </div>
          <div className="sr-only" role="status" aria-live="polite">
            {announce}
          </div>
          {tagNote && <p className="notice">{tagNote}</p>}
      <ErrorBox error={error} onRetry={!shown ? load : undefined} />
          {loading && !shown && !predicting && <Loading label="Loading the document" onCancel={() => navigate(back)} />}
          {predicting && (
            <p className="notice" role="status">
              The model is tagging the documents it is least sure of; they appear here when it is done.
            </p>
          )}
          {page?.status === "FAILED" && (
            <p className="error" role="alert">
              This session failed: the model could not tag its documents, or its file could not be read. Your
              notifications say why.
            </p>
          )}
          {!loading && fresh && !doc && !predicting && page?.status !== "FAILED" && <p className="empty">This session has no documents.</p>}
          {shown && (
            <div className="annotator-body">
              {/* A button clicked with the mouse lets go of the focus: the Enter after it marks the
              segment (the shortcut), rather than press the chip again. From the keyboard
              (detail 0) a button keeps it. */}
          <aside
            className="chips"
            aria-label="Tags"
            onClick={(e) => {
              if (e.detail > 0 && e.target instanceof Element) e.target.closest("button")?.blur();
            }}
          >
                {kinds.classes && (
                  <>
                    <h2>Classes{pair ? " (pick one, then a label)" : ""}</h2>
                    <ul>
                      {classes.map((c, i) => (
                        <li key={c.id}>
                          <button
                            type="button"
                            className={`chip-button${pair && pendingClass === c.name ? " pending" : ""}${
                              !pair && seg?.tags?.some((t) => t.class === c.name && !partOf(t, seg)) ? " on" : ""
                            }`}
                            aria-pressed={pair ? pendingClass === c.name : !!seg?.tags?.some((t) => t.class === c.name && !partOf(t, seg))}
                            title={c.description || undefined}
                            disabled={!!tagNote}
                            onClick={() => toggle("class", c.name)}
                          >
                            {chipKey(i) && <kbd>{chipKey(i)}</kbd>} <span dir="auto">{c.name}</span>
                          </button>
                        </li>
                      ))}
                    </ul>
                  </>
                )}
                {kinds.labels && (
                  <>
                    <h2>Labels</h2>
                    <ul>
                      {labels.map((l, i) => (
                        <li key={l.id}>
                          <button
                            type="button"
                            className={`chip-button label${seg?.tags?.some((t) => t.label === l.name && !partOf(t, seg)) ? " on" : ""}`}
                            aria-pressed={!!seg?.tags?.some((t) => t.label === l.name && !partOf(t, seg))}
                            disabled={!!tagNote}
                            onClick={() => toggle("label", l.name)}
                          >
                            {chipKey(i) && <kbd>{kinds.classes ? `⇧${chipKey(i)}` : chipKey(i)}</kbd>} <span dir="auto">{l.name}</span>
                          </button>
                        </li>
                      ))}
                    </ul>
                  </>
                )}
                {partNow && (
                  <p className="part-note" role="status">
                    Part selected: “<span dir="auto">{partNow.text}</span>”. A number key tags it.
                  </p>
                )}
                <div className="row">
                  <button type="button" onClick={markAndNext} disabled={busy || !seg || !!tagNote}>
                    Mark annotated (Enter)
                  </button>
                  {mode === "correction" && (
                    <button type="button" className="secondary" onClick={confirmAll} disabled={busy || !seg || !!tagNote}>
                      Confirm suggestions (c)
                    </button>
                  )}
                </div>
              </aside>
              <ol className="segments" ref={listRef} aria-label={`Segments of document ${shown.id}`}>
                {segments.map((s, i) => {
                  const tags = s.tags ?? [];
                  const parts = tags.filter((t) => partOf(t, s)).map((t) => t.span as [number, number]);
                  const chosenWords = i === current && part ? words(s.text) : null;
                  const lo = part ? Math.min(part.from, part.to) : 0;
                  const hi = part ? Math.max(part.from, part.to) : -1;
                  return (
                    <li
                      key={s.id}
                      data-index={i}
                      data-segment={s.id}
                      className={`segment${i === current ? " current" : ""}${s.status === "ANNOTATED" ? " done" : ""}`}
                      aria-current={i === current ? "true" : undefined}
                      onClick={() => setCurrent(i)}
                    >
                      <p className="segment-text" dir="auto">
                        {chosenWords
                          ? renderWords(s.text, chosenWords, lo, hi)
                          : pieces(s.text, s.span[0], parts).map((p, k) =>
                              p.tag >= 0 ? (
                                <mark key={k} className="part">
                                  {p.text}
                                </mark>
                              ) : (
                                <span key={k}>{p.text}</span>
                              ),
                            )}
                      </p>
                      <div className="segment-tags">
                        {s.status === "ANNOTATED" && <span className="badge badge-good">annotated</span>}
                        {tags.map((t) => (
                          <span key={t.id} className={`tag${t.status && t.status !== "READY" && mode === "correction" ? " suggested" : ""}`}>
                            <span dir="auto">{[t.class, t.label].filter(Boolean).join(" · ")}</span>
                            {partOf(t, s) && t.text ? ` “${t.text}”` : ""}
                            {typeof t.confidence === "number" && <span className="confidence"> {percent(t.confidence)}</span>}
                            {!tagNote && (
                              <button
                                type="button"
                                className="tag-x"
                                aria-label={`Remove tag ${[t.class, t.label].filter(Boolean).join(" ")}`}
                                onClick={(e) => {
                                  e.stopPropagation();
                                  removeTag(s.id, t.id);
                                }}
                              >
                                ×
                              </button>
                            )}
                          </span>
                        ))}
                      </div>
                    </li>
                  );
                })}
              </ol>
            </div>
          )}
        </>
      )}
    </div>
  );
}

/** Whether a tag is on a part of its segment rather than the whole. */
function partOf(t: Tag, s: Segment | undefined): boolean {
  return !!s && !!t.span && t.span.length === 2 && !(t.span[0] === s.span[0] && t.span[1] === s.span[1]);
}

function renderWords(text: string, w: Array<[number, number]>, lo: number, hi: number) {
  const out = [];
  let at = 0;
  w.forEach(([a, b], i) => {
    if (a > at) out.push(<span key={`g${i}`}>{text.slice(at, a)}</span>);
    out.push(
      <span key={i} className={i >= lo && i <= hi ? "word chosen" : "word"}>
        {text.slice(a, b)}
      </span>,
    );
    at = b;
  });
  if (at < text.length) out.push(<span key="end">{text.slice(at)}</span>);
  return out;
}
