//! Bounds on what one document of a request body brings besides its text (which
//! [`crate::routes::documents::check_text`] bounds): its meta. A group's download makes a column
//! of every meta key its documents have, and an import from a file never gives a document more
//! keys than a file has columns, so a document sent as JSON is held to the same: at most
//! [`MAX_META_KEYS`] keys, each value at most [`MAX_META_VALUE_CHARS`] characters (a file's
//! cell). It does not bound the keys of a whole group: the download does that itself.

use lector_core::validate::Problems;

/// Meta keys one document may have: the columns a file may have (`lector_text::Limits`).
pub const MAX_META_KEYS: usize = 1_000;
/// Characters of one meta value (a string's, or another value's JSON text): a file's cell.
pub const MAX_META_VALUE_CHARS: usize = 1 << 20;

/// Checks a document's meta, `extra` counting the keys the server adds (`external_id`).
pub(crate) fn check_meta(
    problems: &mut Problems,
    field: &str,
    meta: Option<&serde_json::Map<String, serde_json::Value>>,
    extra: usize,
) {
    let Some(meta) = meta else { return };
    if meta.len() + extra > MAX_META_KEYS {
        problems.push(
            field,
            format!("a document has at most {MAX_META_KEYS} meta keys (the id given counts as one)"),
        );
        return;
    }
    for (key, value) in meta {
        let chars = match value {
            serde_json::Value::String(text) => text.chars().count(),
            other => other.to_string().chars().count(),
        };
        if chars > MAX_META_VALUE_CHARS {
            problems.push(
                &format!("{field}.{key}"),
                format!("a meta value has at most {MAX_META_VALUE_CHARS} characters"),
            );
            return;
        }
    }
}
