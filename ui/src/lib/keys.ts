// Keyboard shortcuts of the annotator: number keys pick chips.

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
