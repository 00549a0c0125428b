//! JSON (an array) and JSONL (one item per line), each item an object or a string.
//!
//! Object keys become columns in the order they first appear (a JSON array takes every key of
//! every object; JSONL streams, so its first line fixes the columns and a later unknown key is an
//! error naming the line). Objects are read with their key order kept, without switching on
//! serde_json's `preserve_order` for the whole workspace. Values become cell strings: strings as
//! they are, numbers and booleans as written, null as empty, nested arrays and objects as compact
//! JSON, within the nesting-depth limit.

use std::collections::HashMap;
use std::fmt;
use std::io::Read;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::error::{Limit, Location, Result, TextError};
use crate::limits::Limits;
use crate::read::input::{LineReader, check_cell, strip_bom};
use crate::read::{Row, RowSource};

/// One item of a JSON array or one JSONL line.
enum Item {
    Text(String),
    Object(Vec<(String, Value)>),
    /// Anything else, by its kind ("a number"), to be refused with its position.
    Other(&'static str),
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Item, D::Error> {
        deserializer.deserialize_any(ItemVisitor)
    }
}

struct ItemVisitor;

impl<'de> Visitor<'de> for ItemVisitor {
    type Value = Item;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or a string")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> std::result::Result<Item, E> {
        Ok(Item::Text(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> std::result::Result<Item, E> {
        Ok(Item::Text(value))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Item, A::Error> {
        let mut fields = Vec::new();
        while let Some(field) = map.next_entry::<String, Value>()? {
            fields.push(field);
        }
        Ok(Item::Object(fields))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Item, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Item::Other("an array"))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Item, E> {
        Ok(Item::Other("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Item, E> {
        Ok(Item::Other("a number"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Item, E> {
        Ok(Item::Other("a number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Item, E> {
        Ok(Item::Other("a number"))
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Item, E> {
        Ok(Item::Other("null"))
    }
}

/// Turns serde_json's error into ours, with its line and column.
fn syntax_error(error: &serde_json::Error, line_offset: u64) -> TextError {
    let at = Location::JsonText {
        line: error.line() as u64 + line_offset,
        column: error.column() as u64,
    };
    let reason = error.to_string();
    // serde_json appends " at line L column C"; our location says that already.
    let reason = reason.split(" at line ").next().unwrap_or(&reason).to_owned();
    TextError::malformed(at, reason)
}

/// Nesting depth of a value: 0 for scalars, 1 for a flat array or object.
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// The cell text of a value found at `path`, `outer` levels deep.
fn cell(value: Value, outer: usize, limits: &Limits, path: impl Fn() -> Location) -> Result<String> {
    let text = match value {
        Value::String(text) => text,
        Value::Null => String::new(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        nested => {
            if outer + depth(&nested) > limits.max_json_depth {
                return Err(TextError::too_large(
                    Limit::JsonDepth,
                    limits.max_json_depth as u64,
                    Some(path()),
                ));
            }
            serde_json::to_string(&nested).map_err(|e| TextError::malformed(path(), e.to_string()))?
        }
    };
    check_cell(&text, limits, path)?;
    Ok(text)
}

/// The column names of objects and where each name sits.
#[derive(Default)]
struct Columns {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Columns {
    /// Adds a name unless known; refuses more than `max_columns`.
    fn add(&mut self, name: &str, limits: &Limits, at: impl Fn() -> Location) -> Result<usize> {
        if let Some(&index) = self.index.get(name) {
            return Ok(index);
        }
        if self.names.len() >= limits.max_columns {
            return Err(TextError::too_large(
                Limit::Columns,
                limits.max_columns as u64,
                Some(at()),
            ));
        }
        self.index.insert(name.to_owned(), self.names.len());
        self.names.push(name.to_owned());
        Ok(self.names.len() - 1)
    }
}

/// The kind of items a file holds; fixed by its first item.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Texts,
    Objects,
}

fn kind_of(item: &Item, at: impl Fn() -> Location) -> Result<Kind> {
    match item {
        Item::Text(_) => Ok(Kind::Texts),
        Item::Object(_) => Ok(Kind::Objects),
        Item::Other(kind) => Err(TextError::malformed(
            at(),
            format!("expected an object or a string, found {kind}"),
        )),
    }
}

fn check_kind(item: &Item, expected: Kind, at: impl Fn() -> Location) -> Result<()> {
    if kind_of(item, &at)? == expected {
        return Ok(());
    }
    let wanted = if expected == Kind::Texts {
        "a string like the first item"
    } else {
        "an object like the first item"
    };
    Err(TextError::malformed(at(), format!("expected {wanted}")))
}

/// Reads a JSON array into a header and rows (row numbers are array indices).
pub(crate) fn read_json(bytes: &[u8], limits: &Limits) -> Result<(Vec<String>, Vec<Row>)> {
    let bytes = strip_bom(bytes);
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[') {
        return Err(TextError::malformed(
            Location::JsonPath("$".into()),
            "expected an array of objects or of strings",
        ));
    }
    let items = array_items(bytes, limits.max_rows)?;
    let Some(first) = items.first() else {
        return Ok((Vec::new(), Vec::new()));
    };
    let kind = kind_of(first, || Location::JsonPath("$[0]".into()))?;
    let mut columns = Columns::default();
    for (index, item) in items.iter().enumerate() {
        let at = || Location::JsonPath(format!("$[{index}]"));
        check_kind(item, kind, at)?;
        if let Item::Object(fields) = item {
            for (name, _) in fields {
                columns.add(name, limits, at)?;
            }
        }
    }
    let width = if kind == Kind::Texts { 1 } else { columns.names.len() };
    if (items.len() as u64).saturating_mul(width as u64) > limits.max_cells {
        return Err(TextError::too_large(Limit::Cells, limits.max_cells, None));
    }
    let mut rows = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let cells = match item {
            Item::Text(text) => {
                check_cell(&text, limits, || Location::JsonPath(format!("$[{index}]")))?;
                vec![text]
            }
            Item::Object(fields) => object_cells(fields, &columns, 2, limits, |key| {
                Location::JsonPath(format!("$[{index}].{key}"))
            })?,
            Item::Other(_) => Vec::new(),
        };
        rows.push(Row {
            number: index as u64,
            cells,
        });
    }
    let header = if kind == Kind::Texts {
        vec!["0".to_owned()]
    } else {
        columns.names
    };
    Ok((header, rows))
}

/// The items of a JSON array, refused with 413 at the first item past `max_rows` while it is
/// read, so a file of millions of tiny items is not all parsed into memory before the count.
fn array_items(bytes: &[u8], max_rows: u64) -> Result<Vec<Item>> {
    let bounded = BoundedItems { max_rows };
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let read = (&bounded)
        .deserialize(&mut json)
        .and_then(|items| json.end().map(|()| items));
    match read {
        Ok(items) => Ok(items),
        Err(error) if error.to_string().starts_with(TOO_MANY_ITEMS) => {
            let at = Location::JsonPath(format!("$[{max_rows}]"));
            Err(TextError::too_large(Limit::Rows, max_rows, Some(at)))
        }
        Err(error) => Err(syntax_error(&error, 0)),
    }
}

/// The message `BoundedItems` stops with, told apart from a syntax error by `array_items`.
const TOO_MANY_ITEMS: &str = "more items than the row limit";

/// Reads an array's items, stopping at the one past `max_rows`.
struct BoundedItems {
    max_rows: u64,
}

impl<'de> DeserializeSeed<'de> for &BoundedItems {
    type Value = Vec<Item>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<Vec<Item>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for &BoundedItems {
    type Value = Vec<Item>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of objects or of strings")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Vec<Item>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Item>()? {
            if items.len() as u64 >= self.max_rows {
                return Err(de::Error::custom(TOO_MANY_ITEMS));
            }
            items.push(item);
        }
        Ok(items)
    }
}

/// The cells of an object in column order; absent keys give empty cells.
fn object_cells(
    fields: Vec<(String, Value)>,
    columns: &Columns,
    outer: usize,
    limits: &Limits,
    path: impl Fn(&str) -> Location,
) -> Result<Vec<String>> {
    let mut cells = vec![String::new(); columns.names.len()];
    for (name, value) in fields {
        let Some(&index) = columns.index.get(&name) else {
            return Err(TextError::malformed(
                path(&name),
                format!("key {name:?} is not one of the columns of the first line"),
            ));
        };
        cells[index] = cell(value, outer, limits, || path(&name))?;
    }
    Ok(cells)
}

/// JSONL, streamed line by line.
pub(crate) struct JsonlRows<R> {
    lines: LineReader<R>,
    kind: Kind,
    columns: Columns,
    pending: Option<Row>,
    limits: Limits,
}

impl<R: Read> JsonlRows<R> {
    pub(crate) fn open(reader: R, limits: &Limits) -> Result<Self> {
        let mut rows = JsonlRows {
            lines: LineReader::new(reader, limits),
            kind: Kind::Texts,
            columns: Columns::default(),
            pending: None,
            limits: limits.clone(),
        };
        if let Some((number, item)) = rows.next_item()? {
            let at = || Location::Line(number);
            rows.kind = kind_of(&item, at)?;
            match &item {
                Item::Object(fields) => {
                    for (name, _) in fields {
                        rows.columns.add(name, limits, at)?;
                    }
                }
                _ => {
                    rows.columns.add("0", limits, at)?;
                }
            }
            rows.pending = Some(rows.to_row(number, item)?);
        }
        Ok(rows)
    }

    pub(crate) fn header(&self) -> &[String] {
        &self.columns.names
    }

    /// The next non-blank line parsed as an item.
    fn next_item(&mut self) -> Result<Option<(u64, Item)>> {
        while let Some((number, line)) = self.lines.next_line()? {
            if line.trim().is_empty() {
                continue;
            }
            let item: Item = serde_json::from_str(&line).map_err(|e| syntax_error(&e, number - 1))?;
            return Ok(Some((number, item)));
        }
        Ok(None)
    }

    fn to_row(&self, number: u64, item: Item) -> Result<Row> {
        check_kind(&item, self.kind, || Location::Line(number))?;
        let cells = match item {
            Item::Object(fields) => object_cells(fields, &self.columns, 1, &self.limits, |_| Location::Line(number))?,
            Item::Text(text) => {
                check_cell(&text, &self.limits, || Location::Line(number))?;
                vec![text]
            }
            Item::Other(_) => Vec::new(),
        };
        Ok(Row { number, cells })
    }
}

impl<R: Read> RowSource for JsonlRows<R> {
    fn next_row(&mut self) -> Result<Option<Row>> {
        if let Some(row) = self.pending.take() {
            return Ok(Some(row));
        }
        match self.next_item()? {
            Some((number, item)) => self.to_row(number, item).map(Some),
            None => Ok(None),
        }
    }
}
