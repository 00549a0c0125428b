//! The words that announce a run of words (left on its row, just above it) and the one that
//! follows it, found through the page's words filed once by height: a run looks only at the
//! words near it, nearest first, and stops when nothing further can change its context. A page
//! of `n` words costs about `n` looks to file and a few dozen per run, where looking at every
//! word for every run cost `n` per run (`12 n²` per page, billions on a 20,000-word page).
//!
//! The context is exactly what [`context_by_scan`] (the look at every word) finds: the same
//! tests on the same numbers, the same ties broken by reading order. That scan stays for runs
//! whose box is not finite, which pages read from JSON never have.

use super::{ABOVE_REACH, CONTEXT_WORDS, RIGHT_REACH, Span, TILT, keyword};
use crate::page::{Page, Word};
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

/// Height (in page heights) of the bands words are filed in.
const BAND: f32 = 0.01;

/// One word with what the tests ask of it.
struct Entry<'a> {
    word: &'a Word,
    line: usize,
    index: usize,
    /// Its place in reading order.
    order: usize,
    left: f32,
    right: f32,
    bottom: f32,
    middle: f32,
}

/// The words of one band of bottoms, by left edge, with the furthest right edge so far.
#[derive(Default)]
struct Shelf {
    ids: Vec<usize>,
    right_so_far: Vec<f32>,
    highest: f32,
}

/// A page's words filed by height, built once per page.
pub(super) struct Neighbours<'a> {
    page: &'a Page,
    entries: Vec<Entry<'a>>,
    /// By band of their middles, by right edge (for the words left of a run).
    by_right: BTreeMap<i64, Vec<usize>>,
    /// By band of their middles, by left edge (for the word right of a run).
    by_left: BTreeMap<i64, Vec<usize>>,
    /// By band of their bottoms (for the words above a run).
    shelves: BTreeMap<i64, Shelf>,
    /// The least right edge of the page: no word is further left of a run than this.
    least_right: f32,
    /// Words looked at, to show the work a page costs.
    looked: Cell<usize>,
}

fn band(y: f32) -> i64 {
    // Saturates for infinities; NaN (a word's middle with no corners) is filed in band 0,
    // where no test on it passes.
    (y / BAND).floor() as i64
}

/// A run's box and the tests every word is put to, written as the scan writes them.
struct Probe {
    span: Span,
    left: f32,
    top: f32,
    right: f32,
    bottom: f32,
}

impl Probe {
    fn covers(&self, e: &Entry) -> bool {
        e.line == self.span.line && (self.span.start..self.span.end).contains(&e.index)
    }

    /// On the run's row: a slightly turned scan tilts a row, more so further away.
    fn on_row(&self, middle: f32, dx: f32) -> bool {
        let slack = (self.bottom - self.top) * 0.5 + TILT * dx;
        middle > self.top - slack && middle < self.bottom + slack
    }

    fn is_left(&self, e: &Entry) -> bool {
        e.right <= self.left + 0.002 && self.on_row(e.middle, self.left - e.right)
    }

    fn is_right(&self, e: &Entry) -> bool {
        !self.is_left(e) && e.left >= self.right - 0.002 && self.on_row(e.middle, e.left - self.right)
    }

    fn is_above(&self, e: &Entry) -> bool {
        !self.is_left(e)
            && !self.is_right(e)
            && e.bottom <= self.top + 0.002
            && self.top - e.bottom < ABOVE_REACH
            && e.right > self.left - 0.02
            && e.left < self.right + 0.02
    }
}

/// Orders by distance, then reading order (the scan's stable sort).
fn nearer(a: &(f32, usize, usize), b: &(f32, usize, usize)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

impl<'a> Neighbours<'a> {
    pub(super) fn new(page: &'a Page, bounds: &[Vec<(f32, f32, f32, f32)>]) -> Self {
        let mut entries = Vec::new();
        for (line, l) in page.lines.iter().enumerate() {
            for (index, word) in l.words.iter().enumerate() {
                let (left, top, right, bottom) = bounds[line][index];
                entries.push(Entry {
                    word,
                    line,
                    index,
                    order: entries.len(),
                    left,
                    right,
                    bottom,
                    middle: (top + bottom) / 2.0,
                });
            }
        }
        let mut by_right: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        let mut by_left: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        let mut shelves: BTreeMap<i64, Shelf> = BTreeMap::new();
        for (i, e) in entries.iter().enumerate() {
            by_right.entry(band(e.middle)).or_default().push(i);
            by_left.entry(band(e.middle)).or_default().push(i);
            shelves.entry(band(e.bottom)).or_default().ids.push(i);
        }
        for ids in by_right.values_mut() {
            ids.sort_by(|a, b| entries[*a].right.total_cmp(&entries[*b].right));
        }
        for ids in by_left.values_mut() {
            ids.sort_by(|a, b| entries[*a].left.total_cmp(&entries[*b].left));
        }
        for shelf in shelves.values_mut() {
            shelf.ids.sort_by(|a, b| entries[*a].left.total_cmp(&entries[*b].left));
            let mut furthest = f32::NEG_INFINITY;
            shelf.right_so_far = shelf
                .ids
                .iter()
                .map(|i| {
                    furthest = furthest.max(entries[*i].right);
                    furthest
                })
                .collect();
            shelf.highest = shelf
                .ids
                .iter()
                .map(|i| entries[*i].bottom)
                .fold(f32::NEG_INFINITY, f32::max);
        }
        let least_right = entries.iter().map(|e| e.right).fold(f32::INFINITY, f32::min);
        Self {
            page,
            entries,
            by_right,
            by_left,
            shelves,
            least_right,
            looked: Cell::new(0),
        }
    }

    /// Words looked at so far.
    #[cfg(test)]
    pub(super) fn looked(&self) -> usize {
        self.looked.get()
    }

    fn look(&self) {
        self.looked.set(self.looked.get() + 1);
    }

    /// The words that announce `span`, whose box is `bounds`, and the one that follows it.
    pub(super) fn context(&self, span: Span, bounds: (f32, f32, f32, f32)) -> BTreeSet<String> {
        let (left, top, right, bottom) = bounds;
        let probe = Probe {
            span,
            left,
            top,
            right,
            bottom,
        };
        let found = [left, top, right, bottom]
            .iter()
            .all(|v| v.is_finite())
            .then(|| Some((self.lefts(&probe)?, self.aboves(&probe), self.right(&probe)?)))
            .flatten();
        let Some((lefts, aboves, right)) = found else {
            self.looked.set(self.looked.get() + self.entries.len());
            return context_by_scan(self.page, span, bounds);
        };
        let mut context = BTreeSet::new();
        for (_, _, i) in lefts.iter().take(CONTEXT_WORDS) {
            if let Some(k) = keyword(&self.entries[*i].word.text) {
                context.insert(format!("l:{k}"));
            }
        }
        let nearest = aboves.first().map(|(d, _, _)| *d);
        let aboves = aboves
            .iter()
            .filter(|(d, _, _)| nearest.is_some_and(|n| *d <= n + 0.005));
        for (_, _, i) in aboves.take(CONTEXT_WORDS) {
            if let Some(k) = keyword(&self.entries[*i].word.text) {
                context.insert(format!("a:{k}"));
            }
        }
        if let Some((gap, _, i)) = right
            && gap < RIGHT_REACH
        {
            let word = self.entries[i].word;
            if !word.text.chars().any(char::is_numeric) {
                context.insert(format!("r:{}", word.text.to_lowercase()));
            }
        }
        context
    }

    /// The words of `filed` whose middles are in the bands from `low` to `high`, a list per
    /// band; `None` when the bands cannot be told.
    fn filed(filed: &BTreeMap<i64, Vec<usize>>, low: f32, high: f32) -> Option<Vec<&[usize]>> {
        if low.is_nan() || high.is_nan() {
            return None;
        }
        let (low, high) = (band(low), band(high));
        Some(if low <= high {
            filed.range(low..=high).map(|(_, ids)| &ids[..]).collect()
        } else {
            Vec::new()
        })
    }

    /// The nearest words left of the run on its row, nearest first (at most [`CONTEXT_WORDS`]).
    fn lefts(&self, p: &Probe) -> Option<Vec<(f32, usize, usize)>> {
        // No word is further left than the page's least right edge, so no row reaches further
        // up or down than its slack there.
        let slack = (p.bottom - p.top) * 0.5 + TILT * (p.left - self.least_right);
        let limit = p.left + 0.002;
        // Each band's words ending before the run, walked from the nearest (right) end.
        let mut walks: Vec<&[usize]> = Self::filed(&self.by_right, p.top - slack, p.bottom + slack)?
            .into_iter()
            .map(|ids| &ids[..ids.partition_point(|i| self.entries[*i].right <= limit)])
            .collect();
        let mut found: Vec<(f32, usize, usize)> = Vec::new();
        loop {
            let next = walks
                .iter()
                .enumerate()
                .filter_map(|(w, ids)| ids.last().map(|i| (w, *i)))
                .max_by(|a, b| self.entries[a.1].right.total_cmp(&self.entries[b.1].right));
            let Some((w, i)) = next else { break };
            walks[w] = &walks[w][..walks[w].len() - 1];
            self.look();
            let e = &self.entries[i];
            let dx = p.left - e.right;
            // Every word still to come is at least this far: none can be among the nearest.
            if found.len() == CONTEXT_WORDS && dx > found[CONTEXT_WORDS - 1].0 {
                break;
            }
            if !p.covers(e) && p.on_row(e.middle, dx) {
                found.push((dx, e.order, i));
                found.sort_by(nearer);
                found.truncate(CONTEXT_WORDS);
            }
        }
        Some(found)
    }

    /// The word nearest right of the run on its row, if closer than [`RIGHT_REACH`] (a nearest
    /// word further away adds nothing).
    fn right(&self, p: &Probe) -> Option<Option<(f32, usize, usize)>> {
        let slack = (p.bottom - p.top) * 0.5 + TILT * RIGHT_REACH;
        let limit = p.right - 0.002;
        let mut walks: Vec<&[usize]> = Self::filed(&self.by_left, p.top - slack, p.bottom + slack)?
            .into_iter()
            .map(|ids| &ids[ids.partition_point(|i| self.entries[*i].left < limit)..])
            .collect();
        let mut best: Option<(f32, usize, usize)> = None;
        loop {
            let next = walks
                .iter()
                .enumerate()
                .filter_map(|(w, ids)| ids.first().map(|i| (w, *i)))
                .min_by(|a, b| self.entries[a.1].left.total_cmp(&self.entries[b.1].left));
            let Some((w, i)) = next else { break };
            walks[w] = &walks[w][1..];
            self.look();
            let e = &self.entries[i];
            let gap = e.left - p.right;
            if gap >= RIGHT_REACH || best.is_some_and(|b| gap > b.0) {
                break;
            }
            if !p.covers(e) && p.is_right(e) {
                let candidate = (gap, e.order, i);
                if best.is_none_or(|b| nearer(&candidate, &b).is_lt()) {
                    best = Some(candidate);
                }
            }
        }
        Some(best)
    }

    /// The words above the run within [`ABOVE_REACH`] overlapping it, nearest first, as far as
    /// the nearest row's (the nearest and those within 0.005 of it).
    fn aboves(&self, p: &Probe) -> Vec<(f32, usize, usize)> {
        let mut found: Vec<(f32, usize, usize)> = Vec::new();
        let (reach_left, reach_right) = (p.left - 0.02, p.right + 0.02);
        for shelf in self.shelves.range(..=band(p.top + 0.002)).rev().map(|(_, shelf)| shelf) {
            // Every word of this shelf and of those below it is at least this far above.
            let least = p.top - shelf.highest;
            let nearest = found.iter().map(|f| f.0).reduce(f32::min);
            if least >= ABOVE_REACH || nearest.is_some_and(|n| least > n + 0.005) {
                break;
            }
            let before = shelf.ids.partition_point(|i| self.entries[*i].left < reach_right);
            for at in (0..before).rev() {
                if shelf.right_so_far[at] <= reach_left {
                    break;
                }
                self.look();
                let e = &self.entries[shelf.ids[at]];
                if !p.covers(e) && p.is_above(e) {
                    found.push((p.top - e.bottom, e.order, shelf.ids[at]));
                }
            }
        }
        found.sort_by(nearer);
        found
    }
}

/// The context of `span` (whose box is `bounds`) by a look at every word of the page: what
/// [`Neighbours::context`] finds, at the cost of the whole page per run.
pub(super) fn context_by_scan(page: &Page, span: Span, bounds: (f32, f32, f32, f32)) -> BTreeSet<String> {
    let (left, top, right, bottom) = bounds;
    let mut context = BTreeSet::new();
    // Left on its row: the nearest words ending before the span starts, on any line whose
    // middle is within the span's height (a label set apart may be read as its own line).
    let mut lefts: Vec<(f32, &Word)> = Vec::new();
    let mut aboves: Vec<(f32, &Word)> = Vec::new();
    let mut rights: Vec<(f32, &Word)> = Vec::new();
    for (l, line) in page.lines.iter().enumerate() {
        for (w, word) in line.words.iter().enumerate() {
            if l == span.line && (span.start..span.end).contains(&w) {
                continue;
            }
            let (wl, wt, wr, wb) = word.quad.bounds();
            let middle = (wt + wb) / 2.0;
            // On the value's row: a slightly turned scan tilts a row, more so further away.
            let on_row = |dx: f32| {
                let slack = (bottom - top) * 0.5 + TILT * dx;
                middle > top - slack && middle < bottom + slack
            };
            if wr <= left + 0.002 && on_row(left - wr) {
                lefts.push((left - wr, word));
            } else if wl >= right - 0.002 && on_row(wl - right) {
                rights.push((wl - right, word));
            } else if wb <= top + 0.002 && top - wb < ABOVE_REACH && wr > left - 0.02 && wl < right + 0.02 {
                aboves.push((top - wb, word));
            }
        }
    }
    lefts.sort_by(|a, b| a.0.total_cmp(&b.0));
    aboves.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Above: the words of the nearest row only.
    let nearest = aboves.first().map(|(d, _)| *d);
    let aboves = aboves.iter().filter(|(d, _)| nearest.is_some_and(|n| *d <= n + 0.005));
    for (_, word) in lefts.iter().take(CONTEXT_WORDS) {
        if let Some(k) = keyword(&word.text) {
            context.insert(format!("l:{k}"));
        }
    }
    for (_, word) in aboves.take(CONTEXT_WORDS) {
        if let Some(k) = keyword(&word.text) {
            context.insert(format!("a:{k}"));
        }
    }
    // Right: the word that ends the value, when one follows closely (punctuation counts:
    // it tells where a value stops).
    if let Some((gap, word)) = rights.iter().min_by(|a, b| a.0.total_cmp(&b.0))
        && *gap < RIGHT_REACH
        && !word.text.chars().any(char::is_numeric)
    {
        context.insert(format!("r:{}", word.text.to_lowercase()));
    }
    context
}

#[cfg(test)]
mod tests {
    use super::super::{MAX_VALUE_WORDS, PageIndex};
    use super::*;
    use crate::page::{Line, Point, Quad, TextSource};

    /// A small xorshift generator: the same pages on every run.
    struct Dice(u64);

    impl Dice {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// A number in `0..1`, on a grid of `1/steps` (coarse grids make ties).
        fn unit(&mut self, steps: u64) -> f32 {
            self.below(steps) as f32 / steps as f32
        }
    }

    const WORDS: [&str; 12] = [
        "Invoice",
        "no.",
        "Date:",
        "Total",
        "EUR",
        "12.50",
        "K-100",
        "ref",
        ":",
        "Customer",
        "2025-01-02",
        "Summe",
    ];

    /// A page of rows of words: uneven rows, words of every width and height (some leaning,
    /// some overlapping, some on a coarse grid so that distances tie), lines split and merged.
    fn generated(dice: &mut Dice) -> Page {
        let steps = [20, 200, 100_000][dice.below(3) as usize];
        let rows = 1 + dice.below(25);
        let mut lines = Vec::new();
        for row in 0..rows {
            let y = row as f32 / rows as f32 + dice.unit(steps) * 0.02;
            let mut words = Vec::new();
            for _ in 0..dice.below(14) {
                let left = dice.unit(steps);
                let top = y + (dice.unit(steps) - 0.5) * 0.03;
                let width = dice.unit(steps) * 0.12;
                let height = 0.005 + dice.unit(steps) * 0.02;
                let lean = (dice.unit(steps) - 0.5) * 0.01;
                let quad = Quad {
                    tl: Point { x: left, y: top },
                    tr: Point {
                        x: left + width,
                        y: top + lean,
                    },
                    br: Point {
                        x: left + width,
                        y: top + lean + height,
                    },
                    bl: Point {
                        x: left,
                        y: top + height,
                    },
                };
                words.push(Word {
                    text: WORDS[dice.below(WORDS.len() as u64) as usize].into(),
                    quad,
                    confidence: 1.0,
                });
            }
            words.sort_by(|a, b| a.quad.tl.x.total_cmp(&b.quad.tl.x));
            // Some rows are read as two lines.
            let cut = if dice.below(4) == 0 {
                dice.below(words.len() as u64 + 1) as usize
            } else {
                0
            };
            let rest = words.split_off(cut);
            lines.extend(
                [Line { words }, Line { words: rest }]
                    .into_iter()
                    .filter(|l| !l.words.is_empty()),
            );
        }
        super::super::tests::text_page(lines)
    }

    #[test]
    fn the_filed_words_give_every_run_the_context_the_scan_gives() {
        let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
        let mut runs = 0;
        let mut announced = 0;
        for _ in 0..300 {
            let page = generated(&mut dice);
            let index = PageIndex::new(&page);
            for span in index.spans(MAX_VALUE_WORDS) {
                let bounds = index.quad(span).bounds();
                let expected = context_by_scan(&page, span, bounds);
                assert_eq!(index.context(span), expected, "{span:?} on {page:?}");
                runs += 1;
                announced += usize::from(!expected.is_empty());
            }
        }
        // The pages put every test to work: many runs, most of them announced.
        assert!(
            runs > 10_000 && announced * 2 > runs,
            "{runs} runs, {announced} announced"
        );
    }

    #[test]
    fn a_large_page_costs_a_bounded_number_of_looks_per_run() {
        // 20,000 words: 200 rows of 100 words, as a dense page of small print.
        let (rows, columns) = (200, 100);
        let lines: Vec<Line> = (0..rows)
            .map(|r| Line {
                words: (0..columns)
                    .map(|c| {
                        let (x, y) = (c as f32 / columns as f32, r as f32 / rows as f32);
                        Word {
                            text: WORDS[(r * 7 + c) % WORDS.len()].into(),
                            quad: Quad::rect(x, y, x + 0.008, y + 0.004),
                            confidence: 1.0,
                        }
                    })
                    .collect(),
            })
            .collect();
        let page = Page {
            number: 1,
            width: 600.0,
            height: 800.0,
            source: TextSource::TextLayer,
            lines,
        };
        let index = PageIndex::new(&page);
        let mut runs = 0;
        for span in index.spans(MAX_VALUE_WORDS) {
            index.context(span);
            runs += 1;
        }
        let looked = index.neighbours.get().expect("filed").looked();
        let words = rows * columns;
        assert!(runs > 200_000, "{runs}");
        // A look at every word for every run would be 20,000 looks a run (4.5·10⁹ here).
        assert!(looked < 100 * runs, "{looked} looks for {runs} runs of {words} words");
        // Spot checks against the scan.
        for span in index.spans(MAX_VALUE_WORDS).step_by(9_973) {
            assert_eq!(
                index.context(span),
                context_by_scan(&page, span, index.quad(span).bounds())
            );
        }
    }
}
