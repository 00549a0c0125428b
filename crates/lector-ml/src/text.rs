//! Text normalisation and tokenisation for English, German and Arabic.
//!
//! The featuriser needs the same tokens for the same meaning however the text was typed: so we
//! apply NFKC (Arabic presentation forms, full-width letters, ligatures), fold case (German `ß`
//! and `ẞ` to `ss`, final sigma to sigma), and for Arabic drop tatweel and diacritics and unify
//! the alef and ya forms (and, by default, ta marbuta to ha). Words are runs of letters, digits
//! and combining marks, with an apostrophe kept inside a word (`don't`); every other visible
//! character (punctuation, symbols, emoji) is a token of its own, because `!` and `:(` carry
//! sentiment. This module does not split sentences; that is `lector-text`'s job.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

/// The tokens of one text, as normalised characters and spans into them. Reused between calls
/// so that featurising allocates nothing in the steady state.
#[derive(Debug, Default, Clone)]
pub(crate) struct TokenBuf {
    pub(crate) chars: Vec<char>,
    /// `(start, end, is_word)` into `chars`.
    pub(crate) spans: Vec<(u32, u32, bool)>,
    /// With [`Tokenizer::keep_case`]: beside each of `chars`, the character before case
    /// folding (an upper-case letter stays upper case; everything else equals `chars`).
    pub(crate) cased: Vec<char>,
    /// With [`Tokenizer::keep_case`]: beside each of `spans`, whether white space (or the
    /// text's start) came right before the token, as typed: `word ,` against `word,`.
    pub(crate) spaced: Vec<bool>,
    keep_case: bool,
}

impl TokenBuf {
    pub(crate) fn clear(&mut self) {
        self.chars.clear();
        self.spans.clear();
        self.cased.clear();
        self.spaced.clear();
    }

    #[inline]
    fn push_span(&mut self, start: usize, is_word: bool, spaced: bool) {
        self.spans.push((start as u32, self.chars.len() as u32, is_word));
        if self.keep_case {
            self.spaced.push(spaced);
        }
    }

    #[inline]
    fn push_char(&mut self, c: char, raw: char) {
        self.chars.push(c);
        if self.keep_case {
            self.cased.push(raw);
        }
    }

    pub(crate) fn token(&self, i: usize) -> &[char] {
        let (s, e, _) = self.spans[i];
        &self.chars[s as usize..e as usize]
    }
}

/// Arabic letters and marks we unify or drop; `None` means "drop the character".
#[inline]
fn fold_arabic(c: char, fold_ta_marbuta: bool) -> Option<char> {
    match c {
        // Tatweel (kashida), the harakat, tanwin, shadda, sukun and the other marks of the
        // block, and the superscript alef: they change the look or the vowelling, not the word.
        '\u{0640}' | '\u{064B}'..='\u{065F}' | '\u{0670}' | '\u{06D6}'..='\u{06ED}' => None,
        // Alef with hamza above or below, with madda, and alef wasla: plain alef.
        '\u{0622}' | '\u{0623}' | '\u{0625}' | '\u{0671}' => Some('\u{0627}'),
        // Alef maksura: ya.
        '\u{0649}' => Some('\u{064A}'),
        // Ta marbuta: ha (optional: it merges a few distinct words but helps recall).
        '\u{0629}' if fold_ta_marbuta => Some('\u{0647}'),
        _ => Some(c),
    }
}

/// What role a character plays once normalised.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    Word,
    Apostrophe,
    Space,
    Symbol,
}

#[inline]
fn kind(c: char) -> Kind {
    if ('\u{0600}'..='\u{06FF}').contains(&c) {
        // The Arabic block, without the general Unicode table lookup (a hot path for Arabic).
        return match c {
            '\u{0610}'..='\u{061A}'
            | '\u{0620}'..='\u{0669}'
            | '\u{066E}'..='\u{06D3}'
            | '\u{06D5}'..='\u{06DC}'
            | '\u{06DF}'..='\u{06E8}'
            | '\u{06EA}'..='\u{06FC}'
            | '\u{06FF}' => Kind::Word,
            _ => Kind::Symbol,
        };
    }
    if c.is_alphanumeric() {
        Kind::Word
    } else if c == '\'' || c == '\u{2019}' {
        Kind::Apostrophe
    } else if c.is_whitespace() || c.is_control() || c == '\u{200C}' || c == '\u{200D}' {
        // Zero-width (non-)joiners shape Arabic and Persian script; they never separate meaning.
        Kind::Space
    } else if is_combining_mark(c) {
        Kind::Word
    } else {
        Kind::Symbol
    }
}

/// A tokeniser with its normalisation settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tokenizer {
    pub(crate) fold_ta_marbuta: bool,
    /// Also keep each character's case in [`TokenBuf::cased`].
    pub(crate) keep_case: bool,
}

impl Tokenizer {
    /// Normalises and tokenises `text` into `out` (cleared first).
    pub(crate) fn tokenize_into(&self, text: &str, out: &mut TokenBuf) {
        out.clear();
        out.keep_case = self.keep_case;
        // Most text is already in NFKC; checking is much cheaper than normalising.
        if text.is_ascii() || is_nfkc_quick(text.chars()) == IsNormalized::Yes {
            self.run(text.chars(), out);
        } else {
            self.run(text.nfkc(), out);
        }
    }

    fn run(&self, source: impl Iterator<Item = char>, out: &mut TokenBuf) {
        let mut state = Splitter {
            word_start: None,
            pending_apostrophe: false,
            after_space: true,
            word_spaced: true,
        };
        for raw in source {
            if raw.is_ascii() {
                state.push(raw.to_ascii_lowercase(), raw, out);
                continue;
            }
            let Some(c) = fold_arabic(raw, self.fold_ta_marbuta) else {
                continue;
            };
            if ('\u{0600}'..='\u{06FF}').contains(&c) {
                // Arabic script has no case.
                state.push(c, c, out);
                continue;
            }
            let upper = c.is_uppercase();
            for lower in c.to_lowercase() {
                let folded: &[char] = match lower {
                    'ß' => &['s', 's'],
                    'ς' => &['σ'],
                    '\u{2019}' => &['\''],
                    _ => std::slice::from_ref(&lower),
                };
                for &f in folded {
                    state.push(f, if upper { c } else { f }, out);
                }
            }
        }
        state.finish(out);
    }
}

/// The word-boundary state machine behind [`Tokenizer`].
struct Splitter {
    word_start: Option<usize>,
    /// An apostrophe seen inside a word, kept only if a letter follows it.
    pending_apostrophe: bool,
    /// White space (or the text's start) since the last token began.
    after_space: bool,
    /// Whether the word being read began after white space.
    word_spaced: bool,
}

impl Splitter {
    /// Takes `c` (folded) into `out`, with `raw` its character before case folding.
    #[inline]
    fn push(&mut self, c: char, raw: char, out: &mut TokenBuf) {
        match kind(c) {
            Kind::Word => {
                if self.word_start.is_none() {
                    if is_combining_mark(c) {
                        // A stray mark with no base letter: nothing to attach it to.
                        return;
                    }
                    self.word_start = Some(out.chars.len());
                    self.word_spaced = std::mem::take(&mut self.after_space);
                }
                if self.pending_apostrophe {
                    out.push_char('\'', '\'');
                    self.pending_apostrophe = false;
                }
                out.push_char(c, raw);
            }
            Kind::Apostrophe if self.word_start.is_some() && !self.pending_apostrophe => {
                self.pending_apostrophe = true;
            }
            Kind::Apostrophe | Kind::Symbol => {
                self.end_word(out);
                let start = out.chars.len();
                out.push_char(c, raw);
                out.push_span(start, false, std::mem::take(&mut self.after_space));
            }
            Kind::Space => {
                self.end_word(out);
                self.after_space = true;
            }
        }
    }

    fn end_word(&mut self, out: &mut TokenBuf) {
        if let Some(start) = self.word_start.take() {
            out.push_span(start, true, self.word_spaced);
        }
        if self.pending_apostrophe {
            // A trailing apostrophe (`dogs'`) is punctuation after all.
            self.pending_apostrophe = false;
            let start = out.chars.len();
            out.push_char('\'', '\'');
            out.push_span(start, false, false);
        }
    }

    fn finish(&mut self, out: &mut TokenBuf) {
        self.end_word(out);
    }
}

/// The normalised tokens of `text`, as the featuriser sees them (ta marbuta folded).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut buf = TokenBuf::default();
    Tokenizer {
        fold_ta_marbuta: true,
        keep_case: false,
    }
    .tokenize_into(text, &mut buf);
    (0..buf.spans.len()).map(|i| buf.token(i).iter().collect()).collect()
}

/// `text` with the Arabic normalisation applied and nothing else changed: tatweel and
/// diacritics removed, alef forms and alef maksura unified, ta marbuta folded when asked.
pub fn normalize_arabic(text: &str, fold_ta_marbuta: bool) -> String {
    text.chars().filter_map(|c| fold_arabic(c, fold_ta_marbuta)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_words_apostrophes_and_punctuation() {
        assert_eq!(
            tokenize("Don't STOP, it's great!! dogs' toys"),
            ["don't", "stop", ",", "it's", "great", "!", "!", "dogs", "'", "toys"]
        );
        assert_eq!(tokenize("  \t\n "), Vec::<String>::new());
        assert_eq!(tokenize("price: 3.50 :)"), ["price", ":", "3", ".", "50", ":", ")"]);
    }

    #[test]
    fn german_case_folding_umlauts_and_eszett() {
        assert_eq!(
            tokenize("Die STRASSE ist schön, die Straße auch. GRÜẞE aus Köln!"),
            [
                "die", "strasse", "ist", "schön", ",", "die", "strasse", "auch", ".", "grüsse", "aus", "köln", "!"
            ]
        );
        // A decomposed umlaut (o + combining diaeresis) is the same token as the composed one.
        assert_eq!(tokenize("scho\u{0308}n"), ["schön"]);
        assert_eq!(tokenize("Übergrößenträger"), ["übergrössenträger"]);
    }

    #[test]
    fn the_case_kept_beside_the_folded_characters() {
        let mut buf = TokenBuf::default();
        let tokenizer = Tokenizer {
            fold_ta_marbuta: true,
            keep_case: true,
        };
        tokenizer.tokenize_into("NASA's GRÜẞE, Straße كتاب", &mut buf);
        let cased: Vec<String> = buf
            .spans
            .iter()
            .map(|&(s, e, _)| buf.cased[s as usize..e as usize].iter().collect())
            .collect();
        assert_eq!(cased, ["NASA's", "GRÜẞẞE", ",", "Strasse", "كتاب"]);
        assert_eq!(buf.cased.len(), buf.chars.len());
        Tokenizer {
            keep_case: false,
            ..tokenizer
        }
        .tokenize_into("NASA", &mut buf);
        assert!(buf.cased.is_empty());
    }

    #[test]
    fn arabic_normalisation() {
        // Tatweel, diacritics (fatha, damma, kasra, shadda, sukun, tanwin) and superscript alef.
        assert_eq!(normalize_arabic("كـــتـاب", false), "كتاب");
        assert_eq!(normalize_arabic("مُحَمَّدٌ", false), "محمد");
        assert_eq!(normalize_arabic("هٰذا", false), "هذا");
        // Alef forms and alef maksura.
        assert_eq!(normalize_arabic("أحمد إلى آمن", false), "احمد الي امن");
        // Ta marbuta only when asked.
        assert_eq!(normalize_arabic("مدرسة", false), "مدرسة");
        assert_eq!(normalize_arabic("مدرسة", true), "مدرسه");
        // Tokenisation: the same word however it is written; presentation forms via NFKC.
        assert_eq!(tokenize("الغُرفةُ ممتازة!"), ["الغرفه", "ممتازه", "!"]);
        assert_eq!(tokenize("إلى"), tokenize("الي"));
        assert_eq!(tokenize("\u{FEE3}\u{FEE4}\u{FEE8}\u{FEEE}\u{FECA}"), tokenize("ممنوع"));
        assert_eq!(tokenize("رائع، جداً؟"), ["رائع", "،", "جدا", "؟"]);
    }
}
