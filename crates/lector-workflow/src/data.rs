//! The data that flows through a workflow: entries, each a JSON object and the files that came
//! with it, read and written by dot paths (`body.customer.name`, `analysis.segments.0.text`)
//! and rendered into templates (`Ticket from {{ body.from }}`).

use crate::definition::MAX_RENDERED_BYTES;
use lector_core::{Error, ErrorCode, Result};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A file that came with a request (a form's file field, or a raw body).
#[derive(Debug, Clone, PartialEq)]
pub struct Binary {
    pub file_name: String,
    pub mime_type: String,
    pub bytes: Arc<Vec<u8>>,
}

impl Binary {
    /// What an execution's data keeps of the file: its name, type and size, not its bytes.
    pub fn summary(&self) -> Value {
        serde_json::json!({
            "file_name": self.file_name,
            "mime_type": self.mime_type,
            "size": self.bytes.len(),
        })
    }
}

/// One item of a workflow's data.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Entry {
    pub json: Map<String, Value>,
    pub binary: BTreeMap<String, Binary>,
}

impl Entry {
    /// The entry as an execution's data keeps it: its JSON, and its files summarised.
    pub fn recorded(&self) -> Value {
        let mut value = serde_json::json!({"json": self.json});
        if !self.binary.is_empty() {
            let files: Map<String, Value> = self.binary.iter().map(|(k, b)| (k.clone(), b.summary())).collect();
            value["binary"] = Value::Object(files);
        }
        value
    }
}

/// The value at a dot path of an object, if there is one.
pub fn get<'a>(object: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut keys = path.split('.');
    let mut current = object.get(keys.next()?)?;
    for key in keys {
        current = match current {
            Value::Object(map) => map.get(key)?,
            Value::Array(items) => items.get(key.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// Writes `value` at a dot path, making the objects on the way (an array or a plain value on
/// the way is replaced by an object).
pub fn set(object: &mut Map<String, Value>, path: &str, value: Value) {
    let mut keys: Vec<&str> = path.split('.').collect();
    let last = keys.pop().unwrap_or_default();
    let mut current = object;
    for key in keys {
        let slot = current
            .entry(key.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        current = match slot {
            Value::Object(map) => map,
            _ => unreachable!("made an object above"),
        };
    }
    current.insert(last.to_owned(), value);
}

/// `template` with each `{{ path }}` replaced by the entry's value there (a string as it is,
/// nothing for a missing value or null, anything else as JSON); refused (422) once the text
/// would pass [`MAX_RENDERED_BYTES`].
pub fn render(template: &str, object: &Map<String, Value>) -> Result<String> {
    render_with(template, object, |_, value| Ok(Cow::Borrowed(value)))
}

/// What a URL's value may keep as it is: the unreserved characters of RFC 3986.
const URL_VALUE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// A URL template rendered as [`render`] does, except that a caller's value cannot change the
/// address the template's author wrote. After the host (in the path, query or fragment) a
/// value is percent-encoded (`/`, `?`, `&`, `#` in it are data), and one that is `.` or `..`
/// in the path is refused, as it would climb it. In the host or port (after `://`, before the
/// path) a value may not hold `@`, `:`, `/`, `\`, `?`, `#`, `[`, `]`, `%` or white space, so
/// it cannot name another host, user or port; it is refused (422) if it does. A template that
/// starts with a placeholder (the scheme, or a whole URL made by an earlier step) is the
/// author's choice, left as it is: the outbound guard checks the address it makes.
pub fn render_url(template: &str, object: &Map<String, Value>) -> Result<String> {
    render_with(template, object, |before, value| match url_part(before) {
        UrlPart::Scheme => Ok(Cow::Borrowed(value)),
        UrlPart::Authority => {
            let steering = |c: char| "@:/\\?#[]%".contains(c) || c.is_whitespace();
            if value.contains(steering) {
                return Err(refused(format!(
                    "a value templated into a URL's host cannot hold {value:?}"
                )));
            }
            Ok(Cow::Borrowed(value))
        }
        UrlPart::Path if value == "." || value == ".." => Err(refused(format!(
            "a value templated into a URL's path cannot be {value:?}"
        ))),
        UrlPart::Path | UrlPart::After => Ok(Cow::Owned(utf8_percent_encode(value, URL_VALUE).to_string())),
    })
}

/// Whether a URL template lets the data name the address: a placeholder in its scheme, host
/// or port (or one that makes the whole URL). Then a refused address is the data's doing, not
/// the template's author's, who wrote no host.
pub fn address_from_data(template: &str) -> bool {
    // The first placeholder is the earliest: if it stands in the path or after, all do.
    template
        .find("{{")
        .is_some_and(|at| matches!(url_part(&template[..at]), UrlPart::Scheme | UrlPart::Authority))
}

/// Where in a URL the text after `before` stands.
enum UrlPart {
    /// No `://` yet: the scheme, or a whole URL.
    Scheme,
    /// The host and port (and what would be user information).
    Authority,
    Path,
    /// The query or the fragment.
    After,
}

fn url_part(before: &str) -> UrlPart {
    let Some((_, rest)) = before.split_once("://") else {
        return UrlPart::Scheme;
    };
    if rest.contains(['?', '#']) {
        UrlPart::After
    } else if rest.contains('/') {
        UrlPart::Path
    } else {
        UrlPart::Authority
    }
}

fn refused(detail: String) -> Error {
    Error::new(ErrorCode::ValidationFailed, detail)
}

/// [`render`] with each value passed through `escape` (given the text rendered before it).
fn render_with(
    template: &str,
    object: &Map<String, Value>,
    escape: impl for<'v> Fn(&str, &'v str) -> Result<Cow<'v, str>>,
) -> Result<String> {
    let mut out = String::with_capacity(template.len().min(MAX_RENDERED_BYTES));
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        push_bounded(&mut out, &rest[..start])?;
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let path = after[..end].trim();
                match get(object, path) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(text)) => {
                        let escaped = escape(&out, text)?;
                        push_bounded(&mut out, &escaped)?;
                    }
                    Some(other) => {
                        if json_size(other) > MAX_RENDERED_BYTES - out.len() {
                            return Err(too_long());
                        }
                        let text = other.to_string();
                        let escaped = escape(&out, &text)?;
                        push_bounded(&mut out, &escaped)?;
                    }
                }
                rest = &after[end + 2..];
            }
            None => {
                push_bounded(&mut out, &rest[start..])?;
                rest = "";
            }
        }
    }
    push_bounded(&mut out, rest)?;
    Ok(out)
}

fn push_bounded(out: &mut String, text: &str) -> Result<()> {
    if text.len() > MAX_RENDERED_BYTES - out.len() {
        return Err(too_long());
    }
    out.push_str(text);
    Ok(())
}

fn too_long() -> Error {
    Error::new(
        ErrorCode::ValidationFailed,
        format!("a template renders to more than {MAX_RENDERED_BYTES} bytes"),
    )
}

/// The length of a value written as compact JSON, counted without writing it out.
pub fn json_size<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // JSON values and maps always serialize, and the sink never fails.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("an object"),
        }
    }

    #[test]
    fn paths_reach_into_objects_and_arrays() {
        let o = object(json!({"body": {"items": [{"name": "a"}, {"name": "b"}]}}));
        assert_eq!(get(&o, "body.items.1.name"), Some(&json!("b")));
        assert_eq!(get(&o, "body.items.2.name"), None);
        assert_eq!(get(&o, "body.items.x"), None);
        assert_eq!(get(&o, "nothing"), None);
    }

    #[test]
    fn set_makes_the_way() {
        let mut o = object(json!({"a": 1}));
        set(&mut o, "a.b.c", json!("x"));
        set(&mut o, "d", json!(2));
        assert_eq!(Value::Object(o), json!({"a": {"b": {"c": "x"}}, "d": 2}));
    }

    #[test]
    fn templates_render_strings_plainly_and_the_rest_as_json() {
        let o = object(json!({"body": {"from": "ann@example.com", "n": 3, "tags": ["x"]}}));
        assert_eq!(
            render("From {{ body.from }} ({{body.n}}) {{ body.tags }} {{ gone }}!", &o).unwrap(),
            "From ann@example.com (3) [\"x\"] !"
        );
        assert_eq!(render("open {{ never closed", &o).unwrap(), "open {{ never closed");
    }

    #[test]
    fn a_template_may_not_render_past_the_cap() {
        let half = "x".repeat(MAX_RENDERED_BYTES / 2);
        let o = object(json!({"body": half, "list": [half]}));
        assert_eq!(render("{{body}}{{body}}", &o).unwrap().len(), MAX_RENDERED_BYTES);
        let error = render("{{body}}{{body}}!", &o).unwrap_err();
        assert_eq!(error.code, ErrorCode::ValidationFailed);
        assert_eq!(error.detail, "a template renders to more than 1048576 bytes");
        assert!(render("{{body}}{{list}}", &o).is_err(), "a JSON value counts too");
        // 1,250 placeholders over a 16 MiB body fail at the cap instead of building 20 GB.
        let big = object(json!({"body": "y".repeat(16 * 1024 * 1024)}));
        assert!(render(&"{{body}}".repeat(1250), &big).is_err());
    }

    #[test]
    fn a_url_template_encodes_what_lands_after_the_host() {
        let url = "https://crm.example/users/{{ body.id }}/profile?key=fixed&q={{ body.q }}";
        let rendered = |id: &str, q: &str| render_url(url, &object(json!({"body": {"id": id, "q": q}})));
        assert_eq!(
            rendered("42", "a b").unwrap(),
            "https://crm.example/users/42/profile?key=fixed&q=a%20b"
        );
        assert_eq!(
            rendered("../../admin/delete?x=", "a&b=c#frag").unwrap(),
            "https://crm.example/users/..%2F..%2Fadmin%2Fdelete%3Fx%3D/profile?key=fixed&q=a%26b%3Dc%23frag"
        );
        assert_eq!(
            rendered("%2e%2e", "é").unwrap(),
            "https://crm.example/users/%252e%252e/profile?key=fixed&q=%C3%A9"
        );
        for climbing in [".", ".."] {
            let error = rendered(climbing, "").unwrap_err();
            assert_eq!(error.code, ErrorCode::ValidationFailed, "{climbing}");
            assert!(rendered("7", climbing).is_ok(), "harmless in the query");
        }
        // A host or port may be templated, but a value there cannot name another host, user
        // or port; a whole URL is the author's choice, and the outbound guard checks it.
        let o = object(json!({"region": "eu", "port": "8443", "url": "https://x.example/a?b=c", "n": 7}));
        assert_eq!(
            render_url("https://api.{{ region }}.example:{{ port }}/v{{ n }}", &o).unwrap(),
            "https://api.eu.example:8443/v7"
        );
        assert_eq!(render_url("{{ url }}", &o).unwrap(), "https://x.example/a?b=c");
        for steering in ["1@evil.example", "evil.example/x", "x:1", "a b", "[::1]", "%40"] {
            let o = object(json!({"v": steering}));
            for template in [
                "https://api.example:{{ v }}/x",
                "https://api.example{{ v }}",
                "https://{{ v }}.example/",
            ] {
                let error = render_url(template, &o).unwrap_err();
                assert_eq!(error.code, ErrorCode::ValidationFailed, "{template} with {steering}");
            }
        }
    }

    /// Whose an address is: the data's when a placeholder stands in the scheme, host or port.
    #[test]
    fn an_address_comes_from_the_data_through_its_host() {
        for data in [
            "{{ url }}",
            "{{ scheme }}://api.example/x",
            "http://{{ body.host }}/x",
            "https://api.{{ region }}.example/",
            "https://api.example:{{ port }}/x",
            "https://api.example{{ rest }}",
        ] {
            assert!(address_from_data(data), "{data}");
        }
        for written in [
            "https://api.example/",
            "https://api.example/{{ id }}/x:{{ y }}",
            "http://127.0.0.1:9/x?host={{ host }}",
            "https://api.example#{{ f }}",
        ] {
            assert!(!address_from_data(written), "{written}");
        }
    }

    #[test]
    fn json_size_is_the_compact_length() {
        let value = json!({"a": [1, "two", null], "b": {"c": true}});
        assert_eq!(json_size(&value), value.to_string().len());
    }
}
