//! From loose glyphs to lines of words in reading order.
//!
//! A PDF draws glyphs in whatever order its producer chose; only their positions say which
//! belong together. Glyphs whose vertical centres agree form a row; a gap wider than a fraction
//! of the glyph height ends a word, and a much wider one (a table's next column, a label and
//! its value far apart) ends the line, as OCR would split them. Rows go top to bottom, their
//! lines left to right. Pure geometry: no PDF and no OCR here.

use crate::page::{Line, Quad, Word};

/// One drawn glyph in page coordinates (points, y growing downwards).
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedGlyph {
    pub text: String,
    pub left: f32,
    pub top: f32,
    pub right: f32,
    pub bottom: f32,
}

impl PlacedGlyph {
    fn height(&self) -> f32 {
        (self.bottom - self.top).max(0.1)
    }

    fn centre_y(&self) -> f32 {
        (self.top + self.bottom) / 2.0
    }

    fn is_space(&self) -> bool {
        self.text.chars().all(char::is_whitespace)
    }
}

/// A gap wider than this share of the glyph height separates two words.
const WORD_GAP: f32 = 0.18;
/// A gap wider than this many glyph heights separates two lines on one row.
const COLUMN_GAP: f32 = 2.5;
/// Glyphs whose centres differ by less than this share of their height share a row.
const ROW_TOLERANCE: f32 = 0.45;

/// The glyphs a viewer shows on a page `width` × `height` points: those whose centre lies on
/// it. A PDF may set text beyond its visible box (the crop box hides it, or it was drawn off
/// the media box); that text is not part of the page, and its box would be squashed to an edge.
pub fn on_page(mut glyphs: Vec<PlacedGlyph>, width: f32, height: f32) -> Vec<PlacedGlyph> {
    glyphs.retain(|g| {
        let x = (g.left + g.right) / 2.0;
        (0.0..=width).contains(&x) && (0.0..=height).contains(&g.centre_y())
    });
    glyphs
}

/// Lines of words, in reading order, from glyphs on a page `width` × `height` points.
pub fn lines_from_glyphs(mut glyphs: Vec<PlacedGlyph>, width: f32, height: f32) -> Vec<Line> {
    glyphs.retain(|g| !g.text.is_empty() && g.left.is_finite() && g.top.is_finite());
    glyphs.sort_by(|a, b| a.centre_y().total_cmp(&b.centre_y()));
    let mut lines = Vec::new();
    for mut row in rows(glyphs) {
        row.sort_by(|a, b| a.left.total_cmp(&b.left));
        for segment in split_at(&row, COLUMN_GAP) {
            let words: Vec<Word> = split_words(segment)
                .into_iter()
                .map(|w| word(w, width, height))
                .collect();
            if !words.is_empty() {
                lines.push(Line { words });
            }
        }
    }
    lines
}

/// Glyphs (sorted by vertical centre) grouped into rows.
fn rows(glyphs: Vec<PlacedGlyph>) -> Vec<Vec<PlacedGlyph>> {
    let mut rows: Vec<Vec<PlacedGlyph>> = Vec::new();
    let mut centre = f32::NEG_INFINITY;
    let mut height = 0.0f32;
    for glyph in glyphs {
        let tolerance = ROW_TOLERANCE * glyph.height().max(height);
        match rows.last_mut() {
            Some(row) if (glyph.centre_y() - centre).abs() <= tolerance => {
                let n = row.len() as f32;
                centre = (centre * n + glyph.centre_y()) / (n + 1.0);
                height = height.max(glyph.height());
                row.push(glyph);
            }
            _ => {
                centre = glyph.centre_y();
                height = glyph.height();
                rows.push(vec![glyph]);
            }
        }
    }
    rows
}

/// A row (sorted left to right) cut where the gap exceeds `factor` glyph heights.
fn split_at(row: &[PlacedGlyph], factor: f32) -> Vec<&[PlacedGlyph]> {
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..row.len() {
        let gap = row[i].left - row[i - 1].right;
        if gap > factor * row[i].height().max(row[i - 1].height()) {
            parts.push(&row[start..i]);
            start = i;
        }
    }
    if start < row.len() {
        parts.push(&row[start..]);
    }
    parts
}

/// A line's glyphs grouped into words: a space glyph or a visible gap ends a word.
fn split_words(line: &[PlacedGlyph]) -> Vec<Vec<&PlacedGlyph>> {
    let mut words: Vec<Vec<&PlacedGlyph>> = Vec::new();
    let mut current: Vec<&PlacedGlyph> = Vec::new();
    for glyph in line {
        if glyph.is_space() {
            words.extend((!current.is_empty()).then(|| std::mem::take(&mut current)));
            continue;
        }
        if let Some(last) = current.last() {
            let gap = glyph.left - last.right;
            if gap > WORD_GAP * glyph.height().max(last.height()) {
                words.push(std::mem::take(&mut current));
            }
        }
        current.push(glyph);
    }
    words.extend((!current.is_empty()).then_some(current));
    words
}

fn word(glyphs: Vec<&PlacedGlyph>, width: f32, height: f32) -> Word {
    let text: String = glyphs.iter().map(|g| g.text.trim()).collect();
    let left = glyphs.iter().map(|g| g.left).fold(f32::INFINITY, f32::min);
    let right = glyphs.iter().map(|g| g.right).fold(f32::NEG_INFINITY, f32::max);
    let top = glyphs.iter().map(|g| g.top).fold(f32::INFINITY, f32::min);
    let bottom = glyphs.iter().map(|g| g.bottom).fold(f32::NEG_INFINITY, f32::max);
    let quad = Quad::rect(left / width, top / height, right / width, bottom / height).clamped();
    Word {
        text,
        quad,
        confidence: 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Glyphs of `text` set at `x`, `y` (top) in a 10-point font, 5 points per character.
    fn set(text: &str, x: f32, y: f32) -> Vec<PlacedGlyph> {
        text.chars()
            .enumerate()
            .map(|(i, c)| PlacedGlyph {
                text: c.to_string(),
                left: x + 5.0 * i as f32,
                top: y,
                right: x + 5.0 * (i + 1) as f32,
                bottom: y + 10.0,
            })
            .collect()
    }

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    #[test]
    fn rows_read_top_to_bottom_whatever_the_drawing_order() {
        let mut glyphs = set("second line", 50.0, 120.0);
        glyphs.extend(set("Invoice 2024-17", 50.0, 100.0));
        glyphs.reverse();
        let lines = lines_from_glyphs(glyphs, 600.0, 800.0);
        assert_eq!(texts(&lines), ["Invoice 2024-17", "second line"]);
    }

    #[test]
    fn a_wide_gap_splits_a_row_into_two_lines() {
        let mut glyphs = set("Total:", 50.0, 100.0);
        glyphs.extend(set("1,234.50 EUR", 400.0, 101.0));
        let lines = lines_from_glyphs(glyphs, 600.0, 800.0);
        assert_eq!(texts(&lines), ["Total:", "1,234.50 EUR"]);
    }

    #[test]
    fn words_split_at_gaps_without_space_glyphs() {
        // Producers often move the pen instead of drawing a space.
        let mut glyphs = set("IBAN", 50.0, 100.0);
        glyphs.extend(set("DE89", 75.0, 100.0));
        let lines = lines_from_glyphs(glyphs, 600.0, 800.0);
        assert_eq!(texts(&lines), ["IBAN DE89"]);
    }

    #[test]
    fn boxes_are_relative_to_the_page() {
        let lines = lines_from_glyphs(set("ab", 60.0, 80.0), 600.0, 800.0);
        let (l, t, r, b) = lines[0].words[0].quad.bounds();
        assert_eq!((l, t, r, b), (0.1, 0.1, 70.0 / 600.0, 0.1125));
    }

    #[test]
    fn glyphs_off_the_page_are_not_on_it() {
        let mut glyphs = set("above", 50.0, -30.0);
        glyphs.extend(set("below", 50.0, 805.0));
        glyphs.extend(set("left", -40.0, 100.0));
        glyphs.extend(set("right", 590.0, 200.0));
        glyphs.extend(set("shown", 50.0, 300.0));
        let kept = on_page(glyphs, 600.0, 800.0);
        let text: String = kept.iter().map(|g| g.text.as_str()).collect();
        // "right": its first two glyphs have their centres on the page.
        assert_eq!(text, "rishown");
    }

    #[test]
    fn nothing_in_nothing_out() {
        assert!(lines_from_glyphs(Vec::new(), 600.0, 800.0).is_empty());
        assert!(lines_from_glyphs(set("   ", 0.0, 0.0), 600.0, 800.0).is_empty());
    }
}
