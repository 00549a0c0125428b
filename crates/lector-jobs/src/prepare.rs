//! How a text becomes a document: normalised (NFC, NUL dropped) and split into sentences of
//! its language, or kept whole. Single documents (in the request) and every import share it,
//! so a document reads the same whichever way it came in.

use lector_store::{NewDocument, NewSegment};
use lector_text::{Language, normalize, segment};

/// Normalises a text (NFC) and splits it into sentences of `language`, or keeps it whole.
pub fn prepare_document(text: &str, meta: serde_json::Value, language: Language, split: bool) -> NewDocument {
    let text = normalize(text);
    let segments = segment(&text, language, split)
        .into_iter()
        .map(|s| NewSegment {
            start: s.start() as i64,
            end: s.end() as i64,
            text: s.text,
        })
        .collect();
    NewDocument {
        text,
        meta,
        language: language.code().to_owned(),
        segments,
    }
}
