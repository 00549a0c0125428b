//! BERT's uncased WordPiece tokeniser, written out rather than pulled in from the `tokenizers`
//! crate (which brings a regex engine and much else): clean the text, split on white space and
//! punctuation (CJK ideographs become words of their own), lower-case and strip accents, then
//! cut each word greedily into the longest pieces of the vocabulary (`##` marks a piece that
//! continues a word). It gives the same ids as Hugging Face's `BertTokenizer` with
//! `do_lower_case` for text without rare Unicode symbols: punctuation is ASCII punctuation
//! plus the general-punctuation and CJK-punctuation blocks, not every Unicode `P*` code point.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use crate::error::{Error, Result};

/// Words longer than this many characters become `[UNK]` (as in BERT).
const MAX_WORD_CHARS: usize = 100;

/// A WordPiece vocabulary with BERT's special tokens.
#[derive(Debug, Clone)]
pub struct WordPiece {
    ids: HashMap<String, u32>,
    pub(crate) cls: u32,
    pub(crate) sep: u32,
    unk: u32,
}

impl WordPiece {
    /// Reads `vocab.txt`: one token per line, the id is the line number.
    pub fn from_vocab(text: &str) -> Result<Self> {
        let ids: HashMap<String, u32> = text
            .lines()
            .enumerate()
            .map(|(i, t)| (t.to_owned(), i as u32))
            .collect();
        let get = |t: &str| {
            ids.get(t)
                .copied()
                .ok_or_else(|| Error::Format(format!("the vocabulary has no {t}")))
        };
        Ok(Self {
            cls: get("[CLS]")?,
            sep: get("[SEP]")?,
            unk: get("[UNK]")?,
            ids,
        })
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The ids of `text` between `[CLS]` and `[SEP]`, at most `max_len` in all.
    pub fn encode(&self, text: &str, max_len: usize) -> Vec<u32> {
        let mut out = vec![self.cls];
        let room = max_len.saturating_sub(1);
        'words: for word in basic_words(text) {
            for id in self.pieces(&word) {
                if out.len() >= room {
                    break 'words;
                }
                out.push(id);
            }
        }
        out.push(self.sep);
        out
    }

    /// Greedy longest-match-first pieces of one word.
    fn pieces(&self, word: &str) -> Vec<u32> {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > MAX_WORD_CHARS {
            return vec![self.unk];
        }
        let mut out = Vec::new();
        let mut start = 0;
        let mut piece = String::new();
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.extend(&chars[start..end]);
                if let Some(&id) = self.ids.get(&piece) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => out.push(id),
                None => return vec![self.unk],
            }
            start = end;
        }
        out
    }
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || ('\u{2000}'..='\u{206F}').contains(&c) || ('\u{3000}'..='\u{303F}').contains(&c)
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// BERT's basic tokenisation: cleaned, lower-cased, accent-free words and punctuation marks.
fn basic_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, words: &mut Vec<String>| {
        if !current.is_empty() {
            words.push(std::mem::take(current));
        }
    };
    for c in text.chars() {
        if c == '\0' || c == '\u{FFFD}' || (c.is_control() && !c.is_whitespace()) {
            continue;
        }
        if c.is_whitespace() {
            flush(&mut current, &mut words);
        } else if is_cjk(c) {
            flush(&mut current, &mut words);
            words.push(c.to_string());
        } else {
            current.push(c);
        }
    }
    flush(&mut current, &mut words);
    let mut out = Vec::new();
    for w in words {
        let folded: String = w.to_lowercase().nfd().filter(|&c| !is_combining_mark(c)).collect();
        let mut part = String::new();
        for c in folded.chars() {
            if is_punctuation(c) {
                flush(&mut part, &mut out);
                out.push(c.to_string());
            } else {
                part.push(c);
            }
        }
        flush(&mut part, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> WordPiece {
        WordPiece::from_vocab("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\nfood\nwas\ngreat\n!\n,\nun\n##want\n##ed\ncafe\n中\n")
            .unwrap()
    }

    #[test]
    fn splits_punctuation_lowercases_and_strips_accents() {
        assert_eq!(
            basic_words("The CAFÉ, was  great!"),
            ["the", "cafe", ",", "was", "great", "!"]
        );
        assert_eq!(basic_words("a中b"), ["a", "中", "b"]);
    }

    #[test]
    fn greedy_longest_pieces_and_unknown_words() {
        let v = vocab();
        assert_eq!(v.encode("Unwanted food", 16), [2, 10, 11, 12, 5, 3]);
        assert_eq!(v.encode("xyz great", 16), [2, 1, 7, 3]);
    }

    #[test]
    fn truncates_to_max_len_keeping_sep() {
        let v = vocab();
        assert_eq!(v.encode("the food was great", 4), [2, 4, 5, 3]);
    }

    #[test]
    fn refuses_a_vocabulary_without_special_tokens() {
        assert!(WordPiece::from_vocab("a\nb\n").is_err());
    }
}
