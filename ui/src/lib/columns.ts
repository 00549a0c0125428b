// Which column of an uploaded file holds the text.

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
