// Which column of an uploaded file holds the text, and whether its first row names the columns.

/**
 * Whether the first row of an uploaded file is offered as its column names. The upload answers
 * only the file's id and first rows, so the file's name tells: a TXT file is one document per
 * line with no header, the table formats (CSV, TSV, JSON, JSONL, XLSX) start with one.
 */
export function headerFirstFor(fileName: string): boolean {
  return !/\.txt$/i.test(fileName.trim());
}

/** Guesses the text column: a header named like text, else the column with the longest cells. */
export function guessColumn(preview: string[][], headerFirst: boolean): number {
  const width = Math.max(0, ...preview.map((r) => r.length));
  if (headerFirst && preview[0]) {
    const named = preview[0].findIndex((h) => /^(text|sentence|content|body|review|comment)s?$/i.test(h.trim()));
    if (named >= 0) return named;
  }
  const rows = headerFirst ? preview.slice(1) : preview;
  let best = 0;
  let bestLen = -1;
  for (let i = 0; i < width; i++) {
    const len = rows.reduce((s, r) => s + (r[i]?.length ?? 0), 0);
    if (len > bestLen) {
      best = i;
      bestLen = len;
    }
  }
  return best;
}

export type Mapping = Record<(typeof MAPPED)[number], string>;
export const MAPPED = ["text", "class", "label", "document", "part", "annotated"] as const;
export const EMPTY_MAPPING: Mapping = { text: "", class: "", label: "", document: "", part: "", annotated: "" };

/** The columns of a labeled file by their names (a session's download names them exactly). */
export function guessMapping(header: string[]): Mapping {
  const find = (...names: string[]) => {
    for (const n of names) {
      const hit = header.find((h) => h.trim().toLowerCase() === n);
      if (hit !== undefined) return hit;
    }
    return "";
  };
  return {
    text: find("text", "sentence", "content") || header[0] || "",
    class: find("class", "classes", "aspect", "category"),
    label: find("label", "sentiment", "polarity"),
    document: find("document", "document_id"),
    part: find("part"),
    annotated: find("annotated"),
  };
}
