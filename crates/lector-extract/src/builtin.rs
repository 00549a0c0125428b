//! Fields found before any training: a label named like a field invoices carry
//! (`invoice_number`, `date`, `total`, `iban`, `vendor`, `email`, `phone`, in English or
//! German) is looked for by the words that announce it ("Rechnung Nr.", "Total", …) and the
//! shape of its value, so a project gets sensible results on its first document.
//!
//! A value stands to the right of its keyword on the same line, or on the next line below it;
//! it must convert to the field's type. Without a keyword, a value of a distinctive shape
//! (an IBAN with right check digits, a date) is taken wherever it is, less surely.

use crate::convert::{Converted, DataType, convert};
use crate::page::{Line, Page, Quad, ReadDocument, Word};
use std::ops::Range;

/// A field the extraction knows without training.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    InvoiceNumber,
    Date,
    Total,
    Iban,
    Vendor,
    Email,
    Phone,
}

/// A value found on a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The words as they stand on the page.
    pub text: String,
    pub converted: Converted,
    /// 1 for the first page.
    pub page: u32,
    pub quad: Quad,
    pub confidence: f32,
}

impl Builtin {
    /// The built-in field a label's name stands for: `Invoice Number`, `invoice-no`,
    /// `rechnungsnummer` and the like.
    pub fn for_label(name: &str) -> Option<Self> {
        let key: String = name.to_lowercase().chars().filter(|c| c.is_alphanumeric()).collect();
        let named = |names: &[&str]| names.contains(&key.as_str());
        if named(&[
            "invoicenumber",
            "invoiceno",
            "invoicenr",
            "invoiceid",
            "rechnungsnummer",
            "rechnungsnr",
            "number",
        ]) {
            Some(Self::InvoiceNumber)
        } else if named(&["date", "invoicedate", "datum", "rechnungsdatum", "issuedate"]) {
            Some(Self::Date)
        } else if named(&[
            "total",
            "totalamount",
            "amount",
            "amountdue",
            "gesamtbetrag",
            "betrag",
            "summe",
            "gesamt",
        ]) {
            Some(Self::Total)
        } else if named(&["iban", "bankaccount"]) {
            Some(Self::Iban)
        } else if named(&[
            "vendor",
            "vendorname",
            "supplier",
            "seller",
            "company",
            "lieferant",
            "firma",
            "issuer",
        ]) {
            Some(Self::Vendor)
        } else if named(&["email", "emailaddress", "mail"]) {
            Some(Self::Email)
        } else if named(&["phone", "telephone", "telefon", "tel", "phonenumber"]) {
            Some(Self::Phone)
        } else {
            None
        }
    }

    /// The type its value converts to.
    pub fn data_type(self) -> DataType {
        match self {
            Self::InvoiceNumber => DataType::Id,
            Self::Date => DataType::Date,
            Self::Total => DataType::Amount,
            Self::Iban => DataType::Iban,
            Self::Vendor => DataType::Text,
            Self::Email => DataType::Email,
            Self::Phone => DataType::Phone,
        }
    }

    /// The words that announce the value, each a sequence of lower-case words.
    fn keywords(self) -> &'static [&'static [&'static str]] {
        match self {
            Self::InvoiceNumber => &[
                &["invoice", "number"],
                &["invoice", "no"],
                &["invoice", "nr"],
                &["invoice", "#"],
                &["invoice"],
                &["rechnungsnummer"],
                &["rechnungs-nr"],
                &["rechnung", "nr"],
                &["rechnung", "nummer"],
                &["rechnung"],
                &["belegnummer"],
                &["number"],
                &["nr"],
                &["no"],
            ],
            Self::Date => &[
                &["invoice", "date"],
                &["rechnungsdatum"],
                &["date", "of", "issue"],
                &["issue", "date"],
                &["date"],
                &["datum"],
            ],
            Self::Total => &[
                &["total", "amount"],
                &["amount", "due"],
                &["total", "due"],
                &["grand", "total"],
                &["total"],
                &["gesamtbetrag"],
                &["rechnungsbetrag"],
                &["endbetrag"],
                &["zu", "zahlen"],
                &["gesamtsumme"],
                &["summe"],
                &["gesamt"],
            ],
            Self::Iban => &[&["iban"]],
            Self::Vendor => &[],
            Self::Email => &[&["e-mail"], &["email"], &["mail"]],
            Self::Phone => &[&["phone"], &["telephone"], &["tel"], &["telefon"]],
        }
    }

    /// The most words a value spans.
    pub(crate) fn max_words(self) -> usize {
        match self {
            Self::Iban => 9,
            Self::Date | Self::Total => 4,
            Self::Phone => 5,
            Self::InvoiceNumber | Self::Email => 1,
            Self::Vendor => 8,
        }
    }
}

/// Words after a keyword that are no part of the value ("Nr.", ":", "#").
const FILLERS: [&str; 8] = [":", "#", "nr", "no", "nummer", "number", "-", "eur"];

/// The field's value in `document`: the first announced by a keyword, in reading order, else
/// one recognised by its shape alone.
pub fn find(field: Builtin, document: &ReadDocument) -> Option<Found> {
    if field == Builtin::Vendor {
        return document.pages.first().and_then(vendor);
    }
    for page in &document.pages {
        if let Some(found) = by_keyword(field, page) {
            return Some(found);
        }
    }
    if matches!(field, Builtin::Iban | Builtin::Date | Builtin::Email) {
        for page in &document.pages {
            if let Some(found) = by_shape(field, page) {
                return Some(found);
            }
        }
    }
    None
}

/// A word as compared with keywords: lower case, without the punctuation around it.
fn bare(word: &str) -> String {
    word.trim_matches(|c: char| matches!(c, ':' | '.' | ',' | ';' | '(' | ')'))
        .to_lowercase()
}

/// Keyword hits a field looks at on a page: each looks around it on the whole page, so a page
/// repeating a keyword thousands of times would cost hits × words.
const MAX_KEYWORD_HITS: usize = 64;

/// Where `field`'s keywords stand on `page`, in the order they are tried (keyword, then reading
/// order): the line, and the words the keyword spans. At most [`MAX_KEYWORD_HITS`].
fn keyword_hits(field: Builtin, page: &Page) -> impl Iterator<Item = (usize, Range<usize>)> + '_ {
    field
        .keywords()
        .iter()
        .flat_map(move |keyword| {
            page.lines.iter().enumerate().flat_map(move |(l, line)| {
                let bares: Vec<String> = line.words.iter().map(|w| bare(&w.text)).collect();
                (0..line.words.len())
                    .filter(move |&start| {
                        start + keyword.len() <= bares.len() && keyword.iter().zip(&bares[start..]).all(|(k, b)| k == b)
                    })
                    .map(move |start| (l, start..start + keyword.len()))
                    .collect::<Vec<_>>()
            })
        })
        .take(MAX_KEYWORD_HITS)
}

/// The first word after a keyword ending before `after` on `line` that is not a filler ("is").
fn after_fillers(line: &Line, after: usize) -> usize {
    let mut from = after;
    while from < line.words.len() && FILLERS.contains(&bare(&line.words[from].text).as_str()) {
        from += 1;
    }
    from
}

/// The box of a keyword's words.
fn keyword_box(line: &Line, keyword: &Range<usize>) -> Quad {
    line.words[keyword.clone()]
        .iter()
        .fold(line.words[keyword.start].quad, |q, w| q.union(&w.quad))
}

fn by_keyword(field: Builtin, page: &Page) -> Option<Found> {
    keyword_hits(field, page).find_map(|(l, keyword)| {
        let line = &page.lines[l];
        let from = after_fillers(line, keyword.end);
        value_in(field, page, &line.words[from..], 0.95)
            .or_else(|| nearby(field, page, l, &keyword_box(line, &keyword)))
    })
}

/// How far below its keyword a value may stand, in page heights.
const BENEATH: f32 = 0.06;
/// How much a row may rise or fall across the page (1.5° on an upright A4 page: x and y are
/// relative to its width and height).
const SLOPE: f32 = 0.02;

/// The value nearest the keyword at `anchor` (on line `l`) on another line: to its right on
/// the same row (a label and its value far apart, OCR's column blocks), else beneath it, the
/// words starting under the keyword (a header row over a row of values). Found by position,
/// not by reading order, which OCR gives by blocks.
fn nearby(field: Builtin, page: &Page, l: usize, anchor: &Quad) -> Option<Found> {
    places_near(page, l, anchor).into_iter().find_map(|(beside, n, w)| {
        let certainty = if beside { 0.9 } else { 0.85 };
        value_in(field, page, &page.lines[n].words[w..], certainty)
    })
}

/// Where a value may start near the keyword at `anchor` (on line `l`), nearest first: line and
/// word, and whether beside the keyword (else beneath it).
fn places_near(page: &Page, l: usize, anchor: &Quad) -> Vec<(bool, usize, usize)> {
    let (left, top, right, bottom) = anchor.bounds();
    let middle = (top + bottom) / 2.0;
    let height = bottom - top;
    // A scan turned by a degree or two drifts a row by that slope across the page.
    let beside = |q: &Quad| {
        let (word_left, word_top, _, word_bottom) = q.bounds();
        word_left > right
            && ((word_top + word_bottom) / 2.0 - middle).abs() < 0.6 * height + SLOPE * (word_left - right)
    };
    let beneath = |q: &Quad| {
        let (word_left, word_top, word_right, _) = q.bounds();
        word_top >= middle && word_top - bottom < BENEATH && word_left < right + 0.02 && word_right > left - 0.02
    };
    let mut candidates: Vec<(u8, f32, usize, usize)> = Vec::new();
    for (n, line) in page.lines.iter().enumerate() {
        if n == l {
            continue;
        }
        for (w, word) in line.words.iter().enumerate() {
            let (word_left, word_top, _, _) = word.quad.bounds();
            // Only a line's first word under or beside the keyword starts a value.
            let previous = w.checked_sub(1).map(|p| &line.words[p].quad);
            if beside(&word.quad) && !previous.is_some_and(|q| beside(q) || beneath(q)) {
                candidates.push((0, word_left - right, n, w));
            } else if beneath(&word.quad) && !previous.is_some_and(|q| beside(q) || beneath(q)) {
                candidates.push((1, word_top - bottom, n, w));
            }
        }
    }
    candidates.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    candidates
        .into_iter()
        .map(|(kind, _, n, w)| (kind == 0, n, w))
        .collect()
}

/// Where the field's keyword announces its value on `page`, whether or not the words there
/// convert: the line and its words, for the first keyword (in the order `find` tries them)
/// followed by words that `looks_right` accepts. OCR repairs start here.
pub fn announced(field: Builtin, page: &Page, looks_right: impl Fn(&[Word]) -> bool) -> Option<(usize, Range<usize>)> {
    let span = |n: usize, w: usize| w..page.lines[n].words.len().min(w + field.max_words());
    keyword_hits(field, page).find_map(|(l, keyword)| {
        let line = &page.lines[l];
        let from = after_fillers(line, keyword.end);
        if from < line.words.len() && looks_right(&line.words[from..]) {
            return Some((l, span(l, from)));
        }
        places_near(page, l, &keyword_box(line, &keyword))
            .into_iter()
            .find(|&(_, n, w)| looks_right(&page.lines[n].words[w..]))
            .map(|(_, n, w)| (n, span(n, w)))
    })
}

/// The value starting at the first of `words`, as long as converts, at most the field's span.
fn value_in(field: Builtin, page: &Page, words: &[Word], certainty: f32) -> Option<Found> {
    let most = field.max_words().min(words.len());
    (1..=most)
        .rev()
        .find_map(|n| found(field, page, &words[..n], certainty))
}

fn found(field: Builtin, page: &Page, words: &[Word], certainty: f32) -> Option<Found> {
    let text = words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ");
    let converted = convert(field.data_type(), &text).ok()?;
    // An id is no id without a digit, and a date's keyword is often followed by the place.
    if field == Builtin::InvoiceNumber && !converted.value.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let quad = words.iter().skip(1).fold(words[0].quad, |q, w| q.union(&w.quad));
    let read = words.iter().map(|w| w.confidence).fold(1.0f32, f32::min);
    Some(Found {
        text,
        converted,
        page: page.number,
        quad,
        confidence: certainty * read,
    })
}

/// A value recognised by its shape wherever it stands: the first in reading order.
fn by_shape(field: Builtin, page: &Page) -> Option<Found> {
    for line in &page.lines {
        for start in 0..line.words.len() {
            if let Some(found) = value_in(field, page, &line.words[start..], 0.6) {
                return Some(found);
            }
        }
    }
    None
}

/// Legal forms that mark a company's name.
const LEGAL_FORMS: [&str; 16] = [
    "gmbh", "ag", "kg", "ohg", "ug", "se", "e.k.", "ltd", "ltd.", "inc", "inc.", "llc", "plc", "corp", "s.a.", "b.v.",
];

/// Words that separate the parts of a letterhead line.
const SEPARATORS: [&str; 7] = ["·", "|", "•", "-", "–", "—", "/"];

/// The vendor: the first company named by its legal form (the words up to that form, from
/// the line's start or after a separator such as `·`), else the page's first line with
/// letters, less surely.
fn vendor(page: &Page) -> Option<Found> {
    for line in &page.lines {
        let Some(form) = line
            .words
            .iter()
            .position(|w| LEGAL_FORMS.contains(&bare(&w.text).as_str()))
        else {
            continue;
        };
        let start = line.words[..form]
            .iter()
            .rposition(|w| SEPARATORS.contains(&w.text.as_str()) || w.text.ends_with(','))
            .map_or(0, |separator| separator + 1);
        let start = start.max((form + 1).saturating_sub(Builtin::Vendor.max_words()));
        return found(Builtin::Vendor, page, &line.words[start..=form], 0.8);
    }
    let line = page
        .lines
        .iter()
        .find(|l| l.words.iter().any(|w| w.text.chars().any(char::is_alphabetic)))?;
    found(
        Builtin::Vendor,
        page,
        &line.words[..line.words.len().min(Builtin::Vendor.max_words())],
        0.4,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DocumentFormat;
    use crate::layout::{PlacedGlyph, lines_from_glyphs};
    use crate::page::TextSource;

    /// A page of `(x, y, text)` runs in a 10-point font, 6 points per character.
    fn page(runs: &[(f32, f32, &str)]) -> ReadDocument {
        let glyphs = runs
            .iter()
            .flat_map(|(x, y, text)| {
                text.chars().enumerate().map(move |(i, c)| PlacedGlyph {
                    text: c.to_string(),
                    left: x + 6.0 * i as f32,
                    right: x + 6.0 * (i + 1) as f32,
                    top: *y,
                    bottom: y + 10.0,
                })
            })
            .collect();
        let lines = lines_from_glyphs(glyphs, 595.0, 842.0);
        ReadDocument {
            format: DocumentFormat::Pdf,
            pages: vec![Page {
                number: 1,
                width: 595.0,
                height: 842.0,
                source: TextSource::TextLayer,
                lines,
            }],
        }
    }

    fn value(field: Builtin, document: &ReadDocument) -> Option<String> {
        find(field, document).map(|f| f.converted.value)
    }

    /// Asserts the value each field is found to have on `document` (`None`: not found).
    fn assert_values(document: &ReadDocument, expected: &[(Builtin, Option<&str>)]) {
        for &(field, want) in expected {
            assert_eq!(value(field, document).as_deref(), want, "{field:?}");
        }
    }

    #[test]
    fn labels_name_their_fields() {
        assert_eq!(Builtin::for_label("invoice_number"), Some(Builtin::InvoiceNumber));
        assert_eq!(Builtin::for_label("Invoice No."), Some(Builtin::InvoiceNumber));
        assert_eq!(Builtin::for_label("Rechnungsdatum"), Some(Builtin::Date));
        assert_eq!(Builtin::for_label("TOTAL"), Some(Builtin::Total));
        assert_eq!(Builtin::for_label("iban"), Some(Builtin::Iban));
        assert_eq!(Builtin::for_label("vendor_name"), Some(Builtin::Vendor));
        assert_eq!(Builtin::for_label("colour"), None);
    }

    #[test]
    fn a_german_invoice() {
        let invoice = page(&[
            (50.0, 60.0, "Muster GmbH"),
            (50.0, 75.0, "Hauptstraße 1, 10115 Berlin"),
            (50.0, 140.0, "Rechnung Nr. RE-2024-0017"),
            (50.0, 160.0, "Datum: 14.03.2024"),
            (50.0, 300.0, "Gesamtbetrag:"),
            (400.0, 300.0, "1.234,50 €"),
            (50.0, 500.0, "IBAN: DE89 3704 0044 0532 0130 00"),
        ]);
        assert_values(
            &invoice,
            &[
                (Builtin::InvoiceNumber, Some("RE-2024-0017")),
                (Builtin::Date, Some("2024-03-14")),
                (Builtin::Total, Some("1234.50")),
                (Builtin::Iban, Some("DE89 3704 0044 0532 0130 00")),
            ],
        );
        let vendor = find(Builtin::Vendor, &invoice).unwrap();
        assert_eq!(vendor.converted.value, "Muster GmbH");
        assert!(vendor.confidence > 0.7);
        let total = find(Builtin::Total, &invoice).unwrap();
        assert_eq!(total.converted.currency.as_deref(), Some("EUR"));
        let (left, top, _, _) = total.quad.bounds();
        assert!(
            left > 0.6 && (top - 300.0 / 842.0).abs() < 0.01,
            "the amount's box: {:?}",
            total.quad
        );
    }

    /// A page repeating a keyword is looked at for its first 64 hits only (each looks around it
    /// on the whole page): a value after the 65th is not found, one after the 64th is.
    #[test]
    fn a_field_looks_at_its_first_keyword_hits_only() {
        let with_value_after = |hits: usize| {
            let line = format!("{}Nr: RE-2024-0017", "Nr: offen ".repeat(hits - 1));
            value(Builtin::InvoiceNumber, &page(&[(20.0, 100.0, line.as_str())]))
        };
        assert_eq!(with_value_after(MAX_KEYWORD_HITS).as_deref(), Some("RE-2024-0017"));
        assert_eq!(with_value_after(MAX_KEYWORD_HITS + 1), None);
    }

    #[test]
    fn an_english_invoice_with_values_below_their_labels() {
        let invoice = page(&[
            (50.0, 60.0, "Acme Ltd"),
            (50.0, 140.0, "Invoice Number"),
            (50.0, 155.0, "INV-88123"),
            (300.0, 140.0, "Invoice Date"),
            (300.0, 155.0, "March 3, 2024"),
            (50.0, 400.0, "Amount due"),
            (50.0, 415.0, "$1,299.00"),
        ]);
        assert_values(
            &invoice,
            &[
                (Builtin::InvoiceNumber, Some("INV-88123")),
                (Builtin::Date, Some("2024-03-03")),
                (Builtin::Total, Some("1299.00")),
                (Builtin::Vendor, Some("Acme Ltd")),
                (Builtin::Iban, None),
            ],
        );
        let letterhead = page(&[(50.0, 50.0, "Blue River Inc. · 1 Main St · Springfield")]);
        assert_eq!(value(Builtin::Vendor, &letterhead).as_deref(), Some("Blue River Inc."));
        let letterhead = page(&[(50.0, 50.0, "Harbour & Finch Ltd | Dock Road 4")]);
        assert_eq!(
            value(Builtin::Vendor, &letterhead).as_deref(),
            Some("Harbour & Finch Ltd")
        );
    }

    #[test]
    fn shapes_without_keywords_are_found_less_surely() {
        let letter = page(&[
            (50.0, 100.0, "Berlin, 02.01.2025"),
            (50.0, 200.0, "Bitte an GB29 NWBK 6016 1331 9268 19"),
        ]);
        let date = find(Builtin::Date, &letter).unwrap();
        assert_eq!(date.converted.value, "2025-01-02");
        assert!(date.confidence < 0.7);
        assert_eq!(
            value(Builtin::Iban, &letter).as_deref(),
            Some("GB29 NWBK 6016 1331 9268 19")
        );
        assert_eq!(value(Builtin::Total, &letter), None);
    }
}
