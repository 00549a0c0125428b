//! One streaming pass over a JSON request body, before it is deserialised into its write type:
//! syntax, server-owned fields and the character rule of [`crate::validate`].
//!
//! The pass builds no value tree: it walks the parser's events and keeps only the path of the
//! value it is in, so checking a 50 MB upload costs the bytes already read and nothing more (a
//! `serde_json::Value` of the same body takes several times its size). It does not check types or
//! unknown fields; the write type's own deserialisation does that next.

use crate::validate::{TextKind, char_error, char_problem, forbidden_char};
use crate::{Error, ErrorCode, FieldError, Result};
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::cell::RefCell;
use std::fmt;

/// What a body's keys mean to the checks.
#[derive(Debug, Clone, Copy)]
pub struct BodyKeys<'a> {
    /// Top-level fields the server owns: refused with `immutable_field`.
    pub immutable: &'a [&'a str],
    /// Keys whose strings (and everything below them) are free text.
    pub free: &'a [&'a str],
    /// Keys whose strings are document text, left to normalisation.
    pub document: &'a [&'a str],
}

/// Checks `bytes`: `invalid_json` with line and column, then `immutable_field` naming the first
/// server-owned field, then `invalid_characters` naming every refused field by its path
/// (`documents[2].name`).
pub fn check_json_body(bytes: &[u8], keys: BodyKeys<'_>) -> Result<()> {
    let found = Found::default();
    let mut parser = serde_json::Deserializer::from_slice(bytes);
    let walk = Walk {
        keys,
        found: &found,
        path: String::new(),
        key: String::new(),
        in_free: false,
        depth: 0,
    };
    walk.deserialize(&mut parser).and_then(|()| parser.end()).map_err(|e| {
        Error::new(
            ErrorCode::InvalidJson,
            format!("line {} column {}: {e}", e.line(), e.column()),
        )
    })?;
    if let Some(field) = found.immutable.into_inner() {
        let mut error = Error::new(ErrorCode::ImmutableField, format!("`{field}` is set by the server"));
        error.errors.push(FieldError::new(field, "is read-only"));
        return Err(error);
    }
    let errors = found.chars.into_inner();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(char_error(errors))
    }
}

#[derive(Default)]
struct Found {
    immutable: RefCell<Option<String>>,
    chars: RefCell<Vec<FieldError>>,
}

/// The walk at one value: where it is and what its key makes of its strings.
struct Walk<'k, 'f> {
    keys: BodyKeys<'k>,
    found: &'f Found,
    path: String,
    key: String,
    in_free: bool,
    depth: usize,
}

impl Walk<'_, '_> {
    fn child(&self, path: String, key: String) -> Self {
        let in_free = self.in_free || self.keys.free.contains(&key.as_str());
        Walk {
            keys: self.keys,
            found: self.found,
            path,
            key,
            in_free,
            depth: self.depth + 1,
        }
    }

    fn check(&self, value: &str) {
        if self.keys.document.contains(&self.key.as_str()) && !self.in_free {
            return;
        }
        let kind = if self.in_free { TextKind::Free } else { TextKind::Short };
        if let Some(c) = forbidden_char(value, kind) {
            let field = if self.path.is_empty() { "body" } else { &self.path };
            self.found.chars.borrow_mut().push(char_problem(field, c));
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, value: &str) -> Result<(), E> {
        self.check(value);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            // An element inherits its array's key: `documents[3]` is judged as `documents`.
            let child = self.child(format!("{}[{index}]", self.path), self.key.clone());
            if seq.next_element_seed(child)?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            let separator = if self.path.is_empty() { "" } else { "." };
            if let Some(c) = forbidden_char(&key, TextKind::Short) {
                // The key itself is refused: name it escaped, never echo the raw control.
                let named = format!("{}{separator}{}", self.path, key.escape_debug());
                self.found.chars.borrow_mut().push(char_problem(&named, c));
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            }
            if self.depth == 0 && self.keys.immutable.contains(&key.as_str()) {
                self.found.immutable.borrow_mut().get_or_insert_with(|| key.clone());
            }
            let path = format!("{}{separator}{key}", self.path);
            map.next_value_seed(self.child(path, key))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: BodyKeys<'static> = BodyKeys {
        immutable: &["id"],
        free: &["description", "meta"],
        document: &["text"],
    };

    fn check(body: serde_json::Value) -> Result<()> {
        check_json_body(&serde_json::to_vec(&body).unwrap(), KEYS)
    }

    #[test]
    fn bodies_are_checked_by_key_and_named_by_path() {
        let err = check(serde_json::json!({
            "name": "ok",
            "description": "two\nlines",
            "text": "nul \u{0} is dropped later",
            "documents": [{"name": "fine"}, {"name": "bad\u{0}"}],
            "meta": {"k\u{0}": 1, "note": {"address": "1 Road\nTown"}}
        }))
        .unwrap_err();
        assert_eq!(err.status(), 400);
        assert_eq!(err.code, ErrorCode::InvalidCharacters);
        let fields: Vec<_> = err.errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["documents[1].name", "meta.k\\0"]);
        assert!(check(serde_json::json!({"name": "a\nb"})).is_err());
        assert!(check(serde_json::json!([{"text": "a\u{0}"}, {"description": "x\ty"}])).is_ok());
        assert!(check(serde_json::json!({"documents": [{"meta": {"a": "\u{202E}"}}]})).is_err());
    }

    #[test]
    fn syntax_then_server_owned_fields_then_characters() {
        let syntax = check_json_body(br#"{"name": "a"#, KEYS).unwrap_err();
        assert_eq!(syntax.code, ErrorCode::InvalidJson);
        assert!(check_json_body(br#"{"a": 1} x"#, KEYS).is_err());
        let owned = check(serde_json::json!({"id": 3, "name": "\u{0}"})).unwrap_err();
        assert_eq!(owned.code, ErrorCode::ImmutableField);
        // Only the top-level object's fields are the server's.
        assert!(check(serde_json::json!({"documents": [{"id": 3}]})).is_ok());
        assert!(check(serde_json::json!([{"id": 3}])).is_ok());
    }
}
