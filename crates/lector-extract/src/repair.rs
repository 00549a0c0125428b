//! Second thoughts on what OCR read. On a noisy 150-dpi scan the words that matter most are
//! the ones misread most: a currency sign fused with the digit beside it ("©, 558.36" for
//! "€5,558.36", "817.48" for "€317.48"), an IBAN's letters read as digits ("0609" for "DE09")
//! and its digits as letters ("DEO2"). The document itself often says what those words must
//! be: an IBAN carries check digits, and a total is the sum of the amounts above it. This module
//! mends what such evidence settles, on OCR pages only, and names what it leaves in doubt; the
//! doubtful words are read again from small upscaled crops, all in one more OCR run, and kept
//! only where the new reading passes the same checks. Every change is deterministic.

use crate::builtin::{Builtin, announced};
use crate::convert::{DataType, IBAN_LENGTHS, convert};
use crate::ocr::{Ocr, OcrImage};
use crate::page::{Line, Page, Quad, TextSource, Word};
use image::GrayImage;
use std::ops::Range;
use std::path::Path;

/// Words left in doubt on a page: read again from the image.
#[derive(Debug, Clone, PartialEq)]
pub struct Doubt {
    pub line: usize,
    pub words: Range<usize>,
    pub kind: DoubtKind,
}

/// What the doubtful words should be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DoubtKind {
    Iban,
    /// A total, with the sum of the amounts above it when there are any (in cents).
    Total(Option<i64>),
}

/// How much a crop is enlarged before it is read again.
const UPSCALE: u32 = 2;

/// Mends OCR `pages` by their own evidence, then reads what stays doubtful again from
/// `images` (each OCR page's image, with its resolution when known) in one tesseract run.
/// A failed second run leaves the pages as the evidence left them.
pub fn second_thoughts(pages: &mut [(&mut Page, &GrayImage, Option<u32>)], ocr: &Ocr, scratch: &Path) {
    let mut doubts = Vec::new();
    let mut crops = Vec::new();
    for (p, (page, image, dpi)) in pages.iter_mut().enumerate() {
        for doubt in mend(page) {
            let (crop, place) = crop(page, &doubt, image);
            crops.push((crop, dpi.map(|d| d * UPSCALE)));
            doubts.push((p, doubt, place));
        }
    }
    let crops: Vec<OcrImage<'_>> = crops.iter().map(|(image, dpi)| OcrImage { image, dpi: *dpi }).collect();
    let rereads = match ocr.read_crops(&crops, scratch) {
        Ok(rereads) => rereads,
        Err(error) => {
            tracing::warn!(detail = %error.detail, "OCR's second look at doubtful words");
            return;
        }
    };
    let mut settled: Vec<_> = doubts.into_iter().zip(rereads).collect();
    // The words furthest down a page first, so the ranges of the others stay right.
    settled.sort_by_key(|((p, doubt, _), _)| std::cmp::Reverse((*p, doubt.line, doubt.words.start)));
    for ((p, doubt, place), words) in settled {
        let words: Vec<Word> = words
            .into_iter()
            .map(|w| Word {
                quad: place.within(&w.quad),
                ..w
            })
            .collect();
        settle(&mut pages[p].0.lines[doubt.line], &doubt, words);
    }
}

/// Mends an OCR page's IBAN and total where its own evidence settles them; what it does not
/// settle is returned, to be read again.
pub fn mend(page: &mut Page) -> Vec<Doubt> {
    if page.source != TextSource::Ocr {
        return Vec::new();
    }
    [mend_iban(page), mend_total(page)].into_iter().flatten().collect()
}

/// The crop of `doubt`'s words (with a margin, more to the right, where dropped characters
/// were) enlarged, and where it lies on the page.
fn crop(page: &Page, doubt: &Doubt, image: &GrayImage) -> (GrayImage, Place) {
    let words = &page.lines[doubt.line].words[doubt.words.clone()];
    let quad = words.iter().fold(words[0].quad, |q, w| q.union(&w.quad));
    let (w, h) = (image.width() as f32, image.height() as f32);
    let (left, top, right, bottom) = quad.bounds();
    let height = (bottom - top) * h;
    let x0 = (left * w - 0.25 * height).max(0.0) as u32;
    let y0 = (top * h - 0.5 * height).max(0.0) as u32;
    let x1 = ((right * w + 1.5 * height) as u32).clamp(x0 + 1, image.width());
    let y1 = ((bottom * h + 0.5 * height) as u32).clamp(y0 + 1, image.height());
    let cut = image::imageops::crop_imm(image, x0, y0, x1 - x0, y1 - y0).to_image();
    let big = image::imageops::resize(
        &cut,
        cut.width() * UPSCALE,
        cut.height() * UPSCALE,
        image::imageops::FilterType::Triangle,
    );
    let place = Place {
        left: x0 as f32 / w,
        top: y0 as f32 / h,
        width: (x1 - x0) as f32 / w,
        height: (y1 - y0) as f32 / h,
    };
    (big, place)
}

/// A crop's place on its page, in page fractions.
#[derive(Debug, Clone, Copy)]
struct Place {
    left: f32,
    top: f32,
    width: f32,
    height: f32,
}

impl Place {
    /// A box relative to the crop, relative to the page.
    fn within(&self, quad: &Quad) -> Quad {
        let (l, t, r, b) = quad.bounds();
        Quad::rect(
            self.left + l * self.width,
            self.top + t * self.height,
            self.left + r * self.width,
            self.top + b * self.height,
        )
    }
}

/// Takes the second reading of a doubt's words where it passes the checks the first failed.
fn settle(line: &mut Line, doubt: &Doubt, reread: Vec<Word>) {
    let mended = match doubt.kind {
        DoubtKind::Iban => iban_words(&reread),
        DoubtKind::Total(expected) => {
            let old = &line.words[doubt.words.clone()];
            let converts = convert(DataType::Amount, &joined(old)).is_ok();
            total_word(&reread, expected, converts)
        }
    };
    if let Some(words) = mended {
        line.words.splice(doubt.words.clone(), words);
    }
}

fn joined(words: &[Word]) -> String {
    words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ")
}

// IBANs ---------------------------------------------------------------------------------------

/// Mends the IBAN its keyword announces when it fails its check; a doubt when it cannot.
fn mend_iban(page: &mut Page) -> Option<Doubt> {
    let (l, range) = announced(Builtin::Iban, page, |words| alphanumerics(&words[0].text) > 0)?;
    let words = &page.lines[l].words[range.clone()];
    let run = iban_run(words);
    if run == 0 || (1..=run).any(|n| convert(DataType::Iban, &joined(&words[..n])).is_ok()) {
        return None;
    }
    let range = range.start..range.start + run;
    match iban_words(&page.lines[l].words[range.clone()]) {
        Some(mended) => {
            page.lines[l].words.splice(range, mended);
            None
        }
        None => Some(Doubt {
            line: l,
            words: range,
            kind: DoubtKind::Iban,
        }),
    }
}

/// How many of `words` an IBAN as read can span: words of letters and digits, at most the
/// longest IBAN's characters.
fn iban_run(words: &[Word]) -> usize {
    let mut characters = 0;
    let mut n = 0;
    for word in words {
        let count = alphanumerics(&word.text);
        if count == 0 || characters >= 34 || word.text.chars().filter(|c| c.is_alphabetic()).count() > 4 {
            break;
        }
        characters += count;
        n += 1;
    }
    if characters >= 15 { n } else { 0 }
}

fn alphanumerics(text: &str) -> usize {
    text.chars().filter(char::is_ascii_alphanumeric).count()
}

/// The leading words of `words` as a valid IBAN, mended where the check settles it: the
/// longest run that passes, each word keeping its letters and digits only.
fn iban_words(words: &[Word]) -> Option<Vec<Word>> {
    let words: Vec<&Word> = words.iter().skip_while(|w| bare_is(&w.text, "iban")).collect();
    (1..=words.len()).rev().find_map(|n| {
        let compact: String = words[..n]
            .iter()
            .flat_map(|w| w.text.chars())
            .filter(char::is_ascii_alphanumeric)
            .collect();
        let fixed = mend_iban_text(&compact)?;
        Some(spread(&words[..n], &fixed))
    })
}

fn bare_is(text: &str, word: &str) -> bool {
    text.trim_matches(|c: char| !c.is_alphanumeric())
        .eq_ignore_ascii_case(word)
}

/// `fixed` (as many letters and digits as `words` hold) laid back over `words`, each keeping
/// its box and as many characters as it had.
fn spread(words: &[&Word], fixed: &str) -> Vec<Word> {
    let mut rest = fixed.chars();
    words
        .iter()
        .filter_map(|w| {
            let text: String = rest.by_ref().take(alphanumerics(&w.text)).collect();
            (!text.is_empty()).then_some(Word {
                text,
                quad: w.quad,
                confidence: w.confidence,
            })
        })
        .collect()
}

/// An IBAN as read (letters and digits only) mended: its check digits' look-alike letters as
/// digits ("DEO2" → "DE02"), and a country code read as digits as the one country of that
/// IBAN length whose check holds. `None` unless exactly one mending passes the check.
pub fn mend_iban_text(compact: &str) -> Option<String> {
    let chars: Vec<char> = compact.chars().collect();
    if !(15..=34).contains(&chars.len()) {
        return None;
    }
    let country: String = chars[..2].iter().collect::<String>().to_uppercase();
    let countries: Vec<&str> = if country.chars().all(|c| c.is_ascii_uppercase()) {
        vec![country.as_str()]
    } else {
        IBAN_LENGTHS
            .iter()
            .filter(|(_, n)| *n == chars.len())
            .map(|(c, _)| *c)
            .collect()
    };
    let check: String = chars[2..4].iter().map(|&c| digit_like(c)).collect::<Option<_>>()?;
    let rest: String = chars[4..].iter().collect::<String>().to_uppercase();
    let mut valid = countries
        .iter()
        .map(|c| format!("{c}{check}{rest}"))
        .filter(|iban| convert(DataType::Iban, iban).is_ok());
    let first = valid.next()?;
    valid.next().is_none().then_some(first)
}

/// The digit a character is commonly misread for (itself for a digit).
fn digit_like(c: char) -> Option<char> {
    Some(match c {
        '0'..='9' => c,
        'O' | 'o' | 'D' | 'Q' | 'U' => '0',
        'I' | 'l' | 'i' | 'L' | 'J' => '1',
        'Z' | 'z' => '2',
        'A' => '4',
        'S' | 's' => '5',
        'G' | 'b' => '6',
        'T' => '7',
        'B' => '8',
        'g' | 'q' => '9',
        _ => return None,
    })
}

// Totals --------------------------------------------------------------------------------------

/// Mends the total its keyword announces when the amounts above it sum to a value it was
/// misread from; a doubt when it does not convert or disagrees with that sum.
fn mend_total(page: &mut Page) -> Option<Doubt> {
    let (l, range) = announced(Builtin::Total, page, |words| amount_words(words) > 0)?;
    let range = range.start..range.start + amount_words(&page.lines[l].words[range.clone()]);
    let words = &page.lines[l].words[range.clone()];
    let quad = words.iter().fold(words[0].quad, |q, w| q.union(&w.quad));
    let expected = sum_above(page, &quad);
    let read = convert(DataType::Amount, &joined(words))
        .ok()
        .and_then(|c| cents(&c.value));
    if read.is_some() && (expected.is_none() || read == expected) {
        return None;
    }
    let mended = expected.and_then(|sum| agreeing(words, sum, template(page, &quad)));
    let sparse = sparse(page, words);
    match mended {
        Some(word) => {
            page.lines[l].words.splice(range, [word]);
            None
        }
        // A total that converts and fills its box is taken as read, whatever the sum.
        None if read.is_some() && !sparse => None,
        None => Some(Doubt {
            line: l,
            words: range,
            kind: DoubtKind::Total(expected),
        }),
    }
}

/// Whether `words` hold too few characters for their box: a word read short ("24" for the
/// "€5,877.64" beneath it). A character of print is about half as wide as it is high.
fn sparse(page: &Page, words: &[Word]) -> bool {
    let quad = words.iter().fold(words[0].quad, |q, w| q.union(&w.quad));
    let (left, top, right, bottom) = quad.bounds();
    let characters = joined(words).chars().count() as f32;
    let height = (bottom - top) * page.height;
    height > 0.0 && (right - left) * page.width > 0.9 * height * characters
}

/// How many leading words of `words` are an amount as read: words with digits, and marks
/// read for a currency sign ("©,") between them.
fn amount_words(words: &[Word]) -> usize {
    let numeric = |w: &Word| w.text.chars().any(|c| c.is_ascii_digit());
    let taken = words
        .iter()
        .take(Builtin::Total.max_words())
        .take_while(|w| numeric(w) || !w.text.chars().any(char::is_alphabetic))
        .count();
    words[..taken].iter().rposition(numeric).map_or(0, |i| i + 1)
}

/// A converted amount's value in cents ("1234.50" → 123450); `None` below one cent.
fn cents(value: &str) -> Option<i64> {
    let (whole, fraction) = value.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || fraction.len() != 2 {
        return None;
    }
    format!("{whole}{fraction}").parse().ok().filter(|&c: &i64| c > 0)
}

/// An amount written with two decimals ("€1,234.50", "17,00"), a misread sign before its
/// digits ("&2,250.77") set aside: its cents.
fn written_cents(text: &str) -> Option<i64> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let (sign, number) = text.split_at(start);
    let number = number.trim_end_matches(|c: char| !c.is_ascii_digit());
    let bytes = number.as_bytes();
    let marked = bytes.len() > 3 && matches!(bytes[bytes.len() - 3], b'.' | b',');
    if !marked || sign.chars().any(char::is_alphanumeric) {
        return None;
    }
    convert(DataType::Amount, number).ok().and_then(|c| cents(&c.value))
}

/// The amounts above `total` (the last with two decimals on each line above it), summed
/// top down; an amount equal to the sum so far is a subtotal and not added again.
fn sum_above(page: &Page, total: &Quad) -> Option<i64> {
    let (_, top, _, _) = total.bounds();
    let mut amounts: Vec<(f32, i64)> = page
        .lines
        .iter()
        .filter_map(|line| {
            line.words.iter().rev().find_map(|w| {
                let (_, t, _, b) = w.quad.bounds();
                let above = (t + b) / 2.0 < top;
                above.then(|| written_cents(&w.text).map(|c| (t, c))).flatten()
            })
        })
        .collect();
    amounts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut sum = None;
    for (_, amount) in amounts {
        if sum != Some(amount) {
            sum = Some(sum.unwrap_or(0) + amount);
        }
    }
    sum
}

/// Whether `read` (digits as read) is `sum` misread at its start, where a currency sign fuses
/// with the first digit: all but at most the first digit of the sum end the reading, and the
/// reading is at most one digit longer or shorter.
fn misread_from(read: &str, sum: i64) -> bool {
    let written = format!("{}{:02}", sum / 100, sum % 100);
    let common = read
        .chars()
        .rev()
        .zip(written.chars().rev())
        .take_while(|(a, b)| a == b)
        .count();
    read.len().abs_diff(written.len()) <= 1 && common >= 4.max(written.len() - 1)
}

/// The total as one word written like the page's other amounts, when what was read of it is
/// that sum or the sum misread at its start.
fn agreeing(words: &[Word], sum: i64, template: Option<String>) -> Option<Word> {
    let read: String = words
        .iter()
        .flat_map(|w| w.text.chars())
        .filter(char::is_ascii_digit)
        .collect();
    let written = format!("{}{:02}", sum / 100, sum % 100);
    if read != written && !misread_from(&read, sum) {
        return None;
    }
    let quad = words.iter().fold(words[0].quad, |q, w| q.union(&w.quad));
    let confidence = words.iter().map(|w| w.confidence).fold(1.0f32, f32::min).max(0.8);
    Some(Word {
        text: write_amount(sum, template.as_deref().unwrap_or("0.00")),
        quad,
        confidence,
    })
}

/// The longest amount above `total`, whose writing a mended total copies.
fn template(page: &Page, total: &Quad) -> Option<String> {
    let (_, top, _, _) = total.bounds();
    page.lines
        .iter()
        .flat_map(|l| &l.words)
        .filter(|w| w.quad.bounds().3 < top && written_cents(&w.text).is_some())
        .max_by_key(|w| w.text.len())
        .map(|w| w.text.clone())
}

/// `cents` written as `template` writes its amount: its currency sign before the digits,
/// its decimal mark, and its thousands mark when it has one.
pub fn write_amount(cents: i64, template: &str) -> String {
    let start = template.find(|c: char| c.is_ascii_digit()).unwrap_or(0);
    let sign: String = template[..start].chars().filter(|c| "€$£¥".contains(*c)).collect();
    let number = template[start..].trim_end_matches(|c: char| !c.is_ascii_digit());
    let mark = number.chars().rev().nth(2).filter(|&c| c == ',').unwrap_or('.');
    let group = if mark == ',' { '.' } else { ',' };
    let whole = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) && number.contains(group) {
            grouped.push(group);
        }
        grouped.push(c);
    }
    format!("{sign}{grouped}{mark}{:02}", cents % 100)
}

/// A second reading of a total taken: the sum above it (when there is one) if the reading is
/// that sum or misread from it, else the reading if the first did not convert and this does.
fn total_word(reread: &[Word], expected: Option<i64>, first_converts: bool) -> Option<Vec<Word>> {
    let words = &reread[..amount_words(reread)];
    if words.is_empty() {
        return None;
    }
    match expected {
        Some(sum) => {
            let text = joined(words);
            let template = if written_cents(&text).is_some() {
                text
            } else {
                "0.00".into()
            };
            agreeing(words, sum, Some(template)).map(|w| vec![w])
        }
        None if !first_converts && convert(DataType::Amount, &joined(words)).is_ok() => Some(words.to_vec()),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, left: f32, top: f32) -> Word {
        let width = 0.012 * text.chars().count() as f32;
        Word {
            text: text.into(),
            quad: Quad::rect(left, top, left + width, top + 0.012),
            confidence: 0.9,
        }
    }

    /// An OCR page of `(left, top, words)` lines.
    fn page(lines: &[(f32, f32, &str)]) -> Page {
        let lines = lines
            .iter()
            .map(|&(left, top, text)| {
                let mut x = left;
                let words = text
                    .split(' ')
                    .map(|t| {
                        let w = word(t, x, top);
                        x = w.quad.bounds().2 + 0.008;
                        w
                    })
                    .collect();
                Line { words }
            })
            .collect();
        Page {
            number: 1,
            width: 1240.0,
            height: 1754.0,
            source: TextSource::Ocr,
            lines,
        }
    }

    #[test]
    fn iban_check_digits_and_country_codes_are_mended_when_the_check_settles_them() {
        assert_eq!(
            mend_iban_text("DEO2108271936217205158").as_deref(),
            Some("DE02108271936217205158")
        );
        assert_eq!(
            mend_iban_text("DESS454788228919295457").as_deref(),
            Some("DE55454788228919295457")
        );
        // "DE" read as digits: the one country of 22 characters whose check holds.
        assert_eq!(
            mend_iban_text("0609395061630611699702").as_deref(),
            Some("DE09395061630611699702")
        );
        // A digit misread inside the account is not guessed at.
        assert_eq!(mend_iban_text("DE09395061630611699703"), None);
        assert_eq!(mend_iban_text("DE0S39"), None);
    }

    #[test]
    fn an_announced_iban_is_mended_word_by_word_or_doubted() {
        let mut read = page(&[(0.1, 0.8, "Bank details: IBAN DEO2 1082 7193 6217 2051 58.")]);
        assert!(mend(&mut read).is_empty());
        assert_eq!(read.text(), "Bank details: IBAN DE02 1082 7193 6217 2051 58");
        let mut read = page(&[(0.1, 0.8, "IBAN: DE54 0265 8097 3447 7043 2")]);
        let doubts = mend(&mut read);
        assert_eq!(
            doubts,
            [Doubt {
                line: 0,
                words: 1..7,
                kind: DoubtKind::Iban
            }]
        );
        let mut reread = page(&[(0.0, 0.0, "DE54 0265 8097 3447 7043 32 |")]);
        settle(&mut read.lines[0], &doubts[0], reread.lines.remove(0).words);
        assert_eq!(read.text(), "IBAN: DE54 0265 8097 3447 7043 32");
        let mut valid = page(&[(0.1, 0.8, "IBAN DE02 1082 7193 6217 2051 58")]);
        assert!(mend(&mut valid).is_empty());
    }

    #[test]
    fn amounts_are_written_like_the_page_writes_them() {
        assert_eq!(write_amount(555_836, "€2,454.57"), "€5,558.36");
        assert_eq!(write_amount(555_836, "1.785,24"), "5.558,36");
        assert_eq!(write_amount(99, "€17.00"), "€0.99");
        assert_eq!(write_amount(555_836, "©&,558.36"), "5558.36");
        assert_eq!(written_cents("&2,250.77"), Some(225_077));
        assert_eq!(written_cents("14.01.2025"), None);
        assert_eq!(written_cents("Total"), None);
    }

    #[test]
    fn a_total_misread_at_its_currency_sign_is_the_sum_above_it() {
        let lines = [
            (0.1, 0.30, "Shipping €172.92"),
            (0.1, 0.32, "Consulting €2,454.57"),
            (0.1, 0.34, "Training €448.87"),
            (0.1, 0.36, "Licence €2,482.00"),
            (0.1, 0.40, "Amount due"),
        ];
        let mut read = page(&[&lines[..], &[(0.1, 0.42, "©, 558.36")]].concat());
        assert!(mend(&mut read).is_empty());
        assert_eq!(read.lines[5].text(), "€5,558.36");
        let mut read = page(&[&lines[..], &[(0.1, 0.42, "€4,558.36")]].concat());
        assert!(mend(&mut read).is_empty(), "one digit changed at the start");
        assert_eq!(read.lines[5].text(), "€5,558.36");
        // A total that disagrees otherwise (a tax added) and fills its box stays as read.
        let mut read = page(&[&lines[..], &[(0.1, 0.42, "€6,614.45")]].concat());
        assert!(mend(&mut read).is_empty());
        assert_eq!(read.lines[5].text(), "€6,614.45");
        // One read short for its box is doubted; its second reading is kept where it agrees.
        let mut read = page(&[&lines[..], &[(0.1, 0.42, "24")]].concat());
        read.lines[5].words[0].quad = Quad::rect(0.1, 0.42, 0.2, 0.432);
        let doubts = mend(&mut read);
        assert_eq!(doubts[0].kind, DoubtKind::Total(Some(555_836)));
        let mut reread = page(&[(0.0, 0.0, "€6,614.45")]);
        settle(&mut read.lines[5], &doubts[0], reread.lines.remove(0).words);
        assert_eq!(read.lines[5].text(), "24");
        let mut reread = page(&[(0.0, 0.0, "©&,558.36")]);
        settle(&mut read.lines[5], &doubts[0], reread.lines.remove(0).words);
        assert_eq!(read.lines[5].text(), "5558.36");
    }

    #[test]
    fn subtotals_are_not_added_twice_and_a_right_total_stays() {
        let mut read = page(&[
            (0.1, 0.30, "Consulting 100,00 €"),
            (0.1, 0.32, "Subtotal 100,00 €"),
            (0.1, 0.34, "VAT 19,00 €"),
            (0.1, 0.36, "Total 119,00 €"),
        ]);
        let before = read.clone();
        assert!(mend(&mut read).is_empty());
        assert_eq!(read, before);
    }

    #[test]
    fn an_unreadable_total_without_amounts_above_takes_a_converting_second_reading() {
        let mut read = page(&[(0.1, 0.40, "Total due 2*2 2")]);
        let doubts = mend(&mut read);
        assert_eq!(doubts[0].kind, DoubtKind::Total(None));
        let mut reread = page(&[(0.0, 0.0, "€2,112.02")]);
        settle(&mut read.lines[0], &doubts[0], reread.lines.remove(0).words);
        assert_eq!(read.lines[0].text(), "Total due €2,112.02");
    }

    #[test]
    fn text_layers_are_left_alone() {
        let mut read = page(&[(0.1, 0.8, "IBAN DEO2 1082 7193 6217 2051 58")]);
        read.source = TextSource::TextLayer;
        assert!(mend(&mut read).is_empty());
        assert!(read.text().contains("DEO2"));
    }
}
