//! The data that flows through a workflow: entries, each a JSON object and the files that came
//! with it, read and written by dot paths (`body.customer.name`, `analysis.segments.0.text`)
//! and rendered into templates (`Ticket from {{ body.from }}`).

use serde_json::{Map, Value};
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

/// The text a value renders to in a template: strings as they are, nothing for a missing
/// value or null, anything else as JSON.
pub fn render_value(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// `template` with each `{{ path }}` replaced by the entry's value there.
pub fn render(template: &str, object: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                out.push_str(&render_value(get(object, after[..end].trim())));
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
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
            render("From {{ body.from }} ({{body.n}}) {{ body.tags }} {{ gone }}!", &o),
            "From ann@example.com (3) [\"x\"] !"
        );
        assert_eq!(render("open {{ never closed", &o), "open {{ never closed");
    }
}
