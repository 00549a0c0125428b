// Text positions: the API counts code points, the DOM counts UTF-16 units.

/** Number of code points in `s`. */
export function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** The code-point offset of the UTF-16 offset `unit` in `s`. */
export function unitToCodePoint(s: string, unit: number): number {
  return codePoints(s.slice(0, unit));
}

/** The UTF-16 offset of the code-point offset `cp` in `s`. */
export function codePointToUnit(s: string, cp: number): number {
  let units = 0;
  let n = 0;
  for (const ch of s) {
    if (n === cp) return units;
    units += ch.length;
    n++;
  }
  return units;
}

/**
 * The document span `[start, end)` (code points) of a part of a segment, given the segment's
 * text, its start in the document and the part's UTF-16 offsets inside the segment text.
 * Answers null for an empty part; trims surrounding white space.
 */
export function partSpan(
  segmentText: string,
  segmentStart: number,
  fromUnit: number,
  toUnit: number,
): { span: [number, number]; text: string } | null {
  let a = Math.max(0, Math.min(fromUnit, toUnit));
  let b = Math.min(segmentText.length, Math.max(fromUnit, toUnit));
  while (a < b && /\s/.test(segmentText[a])) a++;
  while (b > a && /\s/.test(segmentText[b - 1])) b--;
  if (a >= b) return null;
  const start = segmentStart + unitToCodePoint(segmentText, a);
  const text = segmentText.slice(a, b);
  return { span: [start, start + codePoints(text)], text };
}

/** Word boundaries of a text as UTF-16 [start, end) pairs, for selecting parts by keyboard. */
export function words(text: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const re = /\S+/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) out.push([m.index, m.index + m[0].length]);
  return out;
}

/**
 * Splits a segment text into pieces marked by the tagged parts (document code-point spans),
 * for highlighting. Pieces cover the text in order; `tag` is the index of the part or -1.
 */
export function pieces(
  segmentText: string,
  segmentStart: number,
  parts: Array<[number, number]>,
): Array<{ text: string; tag: number }> {
  const cps = Array.from(segmentText);
  const owner: number[] = new Array(cps.length).fill(-1);
  parts.forEach(([s, e], i) => {
    for (let k = Math.max(0, s - segmentStart); k < Math.min(cps.length, e - segmentStart); k++) {
      if (owner[k] === -1) owner[k] = i;
    }
  });
  const out: Array<{ text: string; tag: number }> = [];
  for (let k = 0; k < cps.length; k++) {
    const last = out[out.length - 1];
    if (last && last.tag === owner[k]) last.text += cps[k];
    else out.push({ text: cps[k], tag: owner[k] });
  }
  return out;
}
