//! Checks on user-supplied values that do not depend on storage.
//!
//! The character rule is one rule for both backends, applied before any value reaches SQL:
//! short fields (names, e-mails, passwords, query and path values) take no control characters
//! (C0, DEL, C1) and no bidirectional overrides or isolates (U+202A to U+202E, U+2066 to U+2069);
//! free-text fields (descriptions, examples) take newline, carriage return and tab besides.
//! Document text is not checked here: `lector_text::normalize` drops NUL from it. JSON bodies
//! are checked field by field in one streaming pass by [`crate::body`].

use crate::{Error, ErrorCode, FieldError};
use std::borrow::Cow;

pub const MIN_PASSWORD_CHARS: usize = 8;
pub const MAX_PASSWORD_CHARS: usize = 1024;
pub const MAX_EMAIL_CHARS: usize = 254;
pub const MAX_NAME_CHARS: usize = 120;
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
/// Longest document text, in characters (however it arrives: a body, a file, a labeled file).
pub const MAX_DOCUMENT_CHARS: usize = 1_000_000;
/// Longest title and text of a notification, whoever writes it: a client's update is refused
/// past them, and what the service writes itself is cut to them ([`shortened`]).
pub const MAX_NOTIFICATION_TITLE_CHARS: usize = 200;
pub const MAX_NOTIFICATION_TEXT_CHARS: usize = 2000;
/// Longest extension [`file_name`] keeps when it cuts a name; a longer one is part of the name.
const MAX_EXTENSION_CHARS: usize = 10;

/// Collects field problems so a request reports all of them at once.
#[derive(Debug, Default)]
pub struct Problems(pub Vec<FieldError>);

impl Problems {
    pub fn push(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, message));
    }

    /// Whether no problem was found yet.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn check(&mut self, ok: bool, field: &str, message: &str) {
        if !ok {
            self.push(field, message);
        }
    }

    pub fn email(&mut self, field: &str, value: &str) {
        self.check(is_email(value), field, "must be an e-mail address");
    }

    pub fn password(&mut self, field: &str, value: &str) {
        let n = value.chars().count();
        if n < MIN_PASSWORD_CHARS {
            self.push(field, format!("must have at least {MIN_PASSWORD_CHARS} characters"));
        } else if n > MAX_PASSWORD_CHARS {
            self.push(field, format!("must have at most {MAX_PASSWORD_CHARS} characters"));
        }
    }

    /// A required, trimmed, non-empty text of bounded length.
    pub fn name(&mut self, field: &str, value: &str, max_chars: usize) {
        if value.trim().is_empty() {
            self.push(field, "must not be empty");
        } else {
            self.max_len(field, value, max_chars);
        }
    }

    pub fn max_len(&mut self, field: &str, value: &str, max_chars: usize) {
        if value.chars().count() > max_chars {
            self.push(field, format!("must have at most {max_chars} characters"));
        }
    }

    /// `Ok` when nothing was found, else a 422 error listing every problem.
    pub fn finish(self) -> crate::Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(crate::Error::validation(self.0))
        }
    }
}

/// Which characters a text field may hold; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// Names, e-mails, passwords, parameters: one line, no controls, no bidi overrides.
    Short,
    /// Descriptions and examples: like `Short`, plus newline, carriage return and tab.
    Free,
}

/// The bidirectional embeddings, overrides and isolates, which make text display in an order
/// other than the one it is stored in.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Whether a field of this kind refuses `c`.
fn refuses(kind: TextKind, c: char) -> bool {
    let allowed_control = kind == TextKind::Free && matches!(c, '\n' | '\r' | '\t');
    (c.is_control() && !allowed_control) || is_bidi_control(c)
}

/// The first character of `value` that a field of this kind refuses.
pub fn forbidden_char(value: &str, kind: TextKind) -> Option<char> {
    value.chars().find(|&c| refuses(kind, c))
}

/// `value` without the characters a field of this kind refuses: for text the service writes
/// from what others sent (a workflow's notification made from a webhook's body), which must
/// hold to what a client's own write may (and to what PostgreSQL stores: no NUL).
pub fn without_forbidden(value: &str, kind: TextKind) -> std::borrow::Cow<'_, str> {
    match forbidden_char(value, kind) {
        None => std::borrow::Cow::Borrowed(value),
        Some(_) => std::borrow::Cow::Owned(value.chars().filter(|&c| !refuses(kind, c)).collect()),
    }
}

/// A 400 `invalid_characters` error for `field`, or `Ok` when the value is clean.
pub fn check_chars(field: &str, value: &str, kind: TextKind) -> crate::Result<()> {
    match forbidden_char(value, kind) {
        None => Ok(()),
        Some(c) => Err(char_error(vec![char_problem(field, c)])),
    }
}

pub(crate) fn char_problem(field: &str, c: char) -> FieldError {
    FieldError::new(field, format!("must not contain the character U+{:04X}", c as u32))
}

pub(crate) fn char_error(errors: Vec<FieldError>) -> Error {
    let detail = errors
        .iter()
        .map(|e| format!("{}: {}", e.field, e.message))
        .collect::<Vec<_>>()
        .join("; ");
    Error {
        errors,
        ..Error::new(ErrorCode::InvalidCharacters, detail)
    }
}

/// A pragmatic e-mail check: one `@`, a non-empty local part, a dotted domain, no spaces.
pub fn is_email(value: &str) -> bool {
    if value.len() > MAX_EMAIL_CHARS || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let Some((local, domain)) = value.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains("..")
}

/// E-mail addresses compare case-insensitively; they are stored in this form.
pub fn normalize_email(value: &str) -> String {
    value.trim().to_lowercase()
}

/// `text` in at most `max` characters: cut on a character boundary, an ellipsis ending it.
pub fn shortened(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some(_) => {
            let end = text.char_indices().nth(max.saturating_sub(1)).map_or(0, |(i, _)| i);
            Cow::Owned(format!("{}…", &text[..end]))
        }
    }
}

/// A file name a client sent, fit to show and store as any other name: without control or
/// bidi characters (dropped: a name is not refused for them, as a file's bytes are not; a name
/// of nothing else becomes `file`), and in at most [`MAX_NAME_CHARS`] characters, a longer one
/// cut in its stem (an ellipsis marks the cut) keeping its extension.
pub fn file_name(name: &str) -> Cow<'_, str> {
    let unfit = |c: char| c.is_control() || is_bidi_control(c);
    if name.chars().any(unfit) {
        let clean: String = name.chars().filter(|&c| !unfit(c)).collect();
        if clean.trim().is_empty() {
            return Cow::Borrowed("file");
        }
        return Cow::Owned(bounded_file_name(&clean).into_owned());
    }
    bounded_file_name(name)
}

fn bounded_file_name(name: &str) -> Cow<'_, str> {
    if name.chars().nth(MAX_NAME_CHARS).is_none() {
        return Cow::Borrowed(name);
    }
    let extension = name
        .rfind('.')
        .map(|dot| &name[dot..])
        .filter(|ext| (2..=MAX_EXTENSION_CHARS + 1).contains(&ext.chars().count()));
    let Some(extension) = extension else {
        return shortened(name, MAX_NAME_CHARS);
    };
    let stem = &name[..name.len() - extension.len()];
    let kept = shortened(stem, MAX_NAME_CHARS - extension.chars().count());
    Cow::Owned(format!("{kept}{extension}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        for ok in ["a@b.co", "first.last+tag@example.org"] {
            assert!(is_email(ok), "{ok}");
        }
        for bad in ["", "a", "a@b", "@b.co", "a@@b.co", "a b@c.de", "a@.b.co", "a@b..co"] {
            assert!(!is_email(bad), "{bad}");
        }
    }

    #[test]
    fn what_a_field_refuses_can_be_left_out() {
        assert_eq!(without_forbidden("from a\u{0}b\u{202E}", TextKind::Short), "from ab");
        assert_eq!(without_forbidden("line\none\t\u{0}", TextKind::Free), "line\none\t");
        assert_eq!(without_forbidden("line\none", TextKind::Short), "lineone");
        assert!(matches!(
            without_forbidden("clean", TextKind::Short),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn short_fields_refuse_controls_and_bidi_overrides() {
        for bad in [
            "a\u{0}b",
            "a\nb",
            "a\tb",
            "\u{7f}",
            "\u{85}",
            "\u{9f}",
            "\u{202E}evil",
            "\u{2066}x",
        ] {
            assert!(forbidden_char(bad, TextKind::Short).is_some(), "{bad:?}");
        }
        for ok in [
            "Ada",
            "caf\u{e9}",
            "e\u{301}",
            "\u{1F600} smile",
            "\u{645}\u{631}\u{62d}\u{628}\u{627}",
            "\u{200F}rlm",
        ] {
            assert_eq!(forbidden_char(ok, TextKind::Short), None, "{ok:?}");
        }
    }

    #[test]
    fn free_text_takes_line_breaks_and_tabs_only() {
        assert_eq!(forbidden_char("one\r\ntwo\tthree", TextKind::Free), None);
        for bad in ["a\u{0}", "a\u{1b}[31m", "\u{85}", "\u{202D}"] {
            assert!(forbidden_char(bad, TextKind::Free).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn shortened_cuts_on_a_character_boundary_within_the_limit() {
        assert_eq!(shortened("abc", 3), "abc");
        assert_eq!(shortened("abcd", 3), "ab…");
        let long = "é".repeat(5000);
        let cut = shortened(&long, MAX_NOTIFICATION_TEXT_CHARS);
        assert_eq!(cut.chars().count(), MAX_NOTIFICATION_TEXT_CHARS);
        assert!(cut.ends_with("é…"));
    }

    #[test]
    fn long_file_names_keep_their_extension() {
        assert_eq!(file_name("rechnung.pdf"), "rechnung.pdf");
        let long = format!("{}.pdf", "ü".repeat(30_000));
        let cut = file_name(&long);
        assert_eq!(cut.chars().count(), MAX_NAME_CHARS, "{cut}");
        assert!(cut.starts_with('ü') && cut.ends_with("ü….pdf"), "{cut}");
        // Without an extension worth keeping, the name is cut like any text.
        for name in ["x".repeat(300), format!("a.{}", "b".repeat(300))] {
            let cut = file_name(&name);
            assert_eq!(cut.chars().count(), MAX_NAME_CHARS, "{cut}");
            assert!(cut.ends_with('…'), "{cut}");
        }
        // Control and bidi characters are dropped.
        assert_eq!(file_name("inv\u{202E}fdp.exe\n.pdf"), "invfdp.exe.pdf");
        assert_eq!(file_name("a\tb.csv"), "ab.csv");
        assert_eq!(file_name("\u{202E}"), "file");
    }

    #[test]
    fn problems_collect_every_field() {
        let mut p = Problems::default();
        p.password("password", "short");
        p.email("email", "nope");
        p.name("name", "  ", 10);
        let err = p.finish().unwrap_err();
        assert_eq!(err.errors.len(), 3);
        assert_eq!(err.status(), 422);
    }
}
