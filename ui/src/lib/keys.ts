// Keyboard shortcuts of the annotator: number keys pick chips; keys typed ahead wait.

/** The key shown on the chip at `index` (0-based): 1…9 then 0 for the tenth; none beyond. */
export function chipKey(index: number): string | null {
  if (index < 9) return String(index + 1);
  if (index === 9) return "0";
  return null;
}

/** The chip index a `KeyboardEvent.code` such as "Digit3" or "Numpad3" picks, or null. */
export function chipIndex(code: string): number | null {
  const m = /^(?:Digit|Numpad)(\d)$/.exec(code);
  if (!m) return null;
  const d = Number(m[1]);
  return d === 0 ? 9 : d - 1;
}

/** True when the event's target takes typing (then shortcuts stay out of the way). */
export function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  const tag = target.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
}

/** A key as the annotator keeps it while it waits for the document it was typed for. */
export type HeldKey = { key: string; code: string; shiftKey: boolean };

/** Keys that act on the current segment or move: typed ahead, they wait for the document. */
const ACTING = new Set(["Enter", "Backspace", "Delete", "s", "j", "k", "n", "p", "ArrowDown", "ArrowUp", "ArrowLeft", "ArrowRight", "PageDown", "PageUp"]);

/**
 * Whether a key typed while the next document loads (or an Enter is on its way) waits to apply
 * there: the number keys and every key that tags, marks or moves; not `?` or Escape, which act
 * on the page. `c` confirms suggestions in correction sessions only.
 */
export function waitsForDocument(key: { key: string; code: string }, correction: boolean): boolean {
  return chipIndex(key.code) !== null || ACTING.has(key.key) || (correction && key.key === "c");
}
