//! Running a workflow's steps over its entries, and the answer its webhook gives.
//!
//! The steps that reach outside (models, extraction, notifications, outbound calls) go through
//! [`Effects`], which the service implements with its store, model cache, sandbox and guard;
//! everything else (paths, templates, `set`, the order of things, what is recorded, the answer)
//! is here, where it is tested without a server.

use crate::data::{self, Binary, Entry};
use crate::definition::{
    Level, MAX_ANSWER_BYTES, MAX_DATA_GROWTH_BYTES, MAX_RECORD_BYTES, Method, ResponseData, Step, Trigger,
};
use lector_core::{Error, ErrorCode, Result};
use serde_json::{Map, Value, json};
use std::future::Future;

/// An outbound call of an `http_request` step.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpCall {
    pub method: Method,
    pub url: String,
    /// Whether the step's url template lets the data name the host ([`data::address_from_data`]):
    /// an address refused is then the call's data's fault, not the step's.
    pub address_from_data: bool,
    pub headers: Vec<(String, String)>,
    /// A JSON body, when the step sends its entry.
    pub body: Option<Vec<u8>>,
    /// Most bytes of the answer to read: an answer longer than this fails the call unread.
    pub max_answer_bytes: usize,
}

/// What the called address answered.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpAnswer {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// The steps' ways out of the workflow, implemented by the service for the workflow's
/// workspace and on behalf of the user who put it to work.
pub trait Effects: Sync {
    /// Analyses texts with a model: for each text, `{text, segments: [{text, span, tags:
    /// [{class, label, confidence}]}]}`, and the model's `{model, model_id, type}`.
    fn analyze(&self, model_id: i64, texts: Vec<String>, split: bool) -> impl Future<Output = Result<Analyzed>> + Send;
    /// Extracts fields from a file with a LABEL project's model.
    fn extract(&self, model_id: i64, file: &Binary) -> impl Future<Output = Result<Value>> + Send;
    /// Notifies a member of the workspace.
    fn notify(&self, user_id: i64, level: Level, message: String) -> impl Future<Output = Result<()>> + Send;
    /// Calls an address through the guard.
    fn http(&self, call: HttpCall) -> impl Future<Output = Result<HttpAnswer>> + Send;
}

/// An analysis's answer: the model and one document per text, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Analyzed {
    pub model: Value,
    pub documents: Vec<Value>,
}

/// A finished run: the last step's entries and what each step made of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    pub entries: Vec<Entry>,
    /// `[{step, type, entries}]`: the input first (step 0, type webhook), then each step's output.
    pub record: Vec<Value>,
}

/// A run stopped by a failing step.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// The step that failed, from 1.
    pub step: usize,
    pub kind: &'static str,
    pub error: Error,
    /// What the steps before it made.
    pub record: Vec<Value>,
}

impl Failed {
    /// The message an execution's record and the webhook's answer carry.
    pub fn message(&self) -> String {
        format!("step {} ({}) failed: {}", self.step, self.kind, self.error.detail)
    }
}

/// What the steps made, kept within [`MAX_RECORD_BYTES`]: a step whose entries would pass it is
/// recorded by its size alone (`omitted_bytes`), so twenty steps over a large body are not
/// twenty copies of it in memory and in one database row.
#[derive(Default)]
struct Record {
    steps: Vec<Value>,
    bytes: usize,
}

impl Record {
    fn push(&mut self, step: usize, kind: &str, entries: &[Entry]) {
        let entries: Vec<Value> = entries.iter().map(Entry::recorded).collect();
        let size = data::json_size(&entries);
        if self.bytes.saturating_add(size) > MAX_RECORD_BYTES {
            self.steps
                .push(json!({"step": step, "type": kind, "omitted_bytes": size}));
            return;
        }
        self.bytes += size;
        self.steps.push(json!({"step": step, "type": kind, "entries": entries}));
    }
}

/// Runs `steps` in order over the webhook's entry. The entries' JSON may grow by at most
/// [`MAX_DATA_GROWTH_BYTES`] over the input's; a step that passes it fails the run.
pub async fn run<E: Effects>(steps: &[Step], input: Entry, effects: &E) -> std::result::Result<Finished, Failed> {
    let limit = data::json_size(&input.json).saturating_add(MAX_DATA_GROWTH_BYTES);
    let mut entries = vec![input];
    let mut record = Record::default();
    record.push(0, "webhook", &entries);
    for (i, step) in steps.iter().enumerate() {
        let outcome = run_step(step, entries, effects, limit)
            .await
            .and_then(|next| within(next, limit));
        match outcome {
            Ok(next) => entries = next,
            Err(error) => {
                return Err(Failed {
                    step: i + 1,
                    kind: step.kind(),
                    error,
                    record: record.steps,
                });
            }
        }
        record.push(i + 1, step.kind(), &entries);
    }
    Ok(Finished {
        entries,
        record: record.steps,
    })
}

/// A problem with the data an entry brought (a missing text, a missing file): the caller's.
fn unprocessable(detail: String) -> Error {
    Error::new(ErrorCode::ValidationFailed, detail)
}

/// The entries, if their JSON holds at most `limit` bytes.
fn within(entries: Vec<Entry>, limit: usize) -> Result<Vec<Entry>> {
    if entries_size(&entries) > limit {
        return Err(too_much_data(limit));
    }
    Ok(entries)
}

/// The bytes of the entries' JSON together.
fn entries_size(entries: &[Entry]) -> usize {
    entries
        .iter()
        .fold(0usize, |sum, entry| sum.saturating_add(data::json_size(&entry.json)))
}

fn too_much_data(limit: usize) -> Error {
    unprocessable(format!(
        "the workflow's data would pass {limit} bytes (what the webhook brought and {MAX_DATA_GROWTH_BYTES} \
         bytes more)"
    ))
}

async fn run_step<E: Effects>(step: &Step, mut entries: Vec<Entry>, effects: &E, limit: usize) -> Result<Vec<Entry>> {
    match step {
        Step::Analyze {
            model_id,
            text,
            split,
            into,
        } => {
            let texts = entries
                .iter()
                .map(|entry| match data::get(&entry.json, text) {
                    Some(Value::String(found)) if !found.trim().is_empty() => Ok(found.clone()),
                    Some(Value::String(_)) => Err(unprocessable(format!("{text} is empty"))),
                    Some(_) => Err(unprocessable(format!("{text} is not a text"))),
                    None => Err(unprocessable(format!("the request has no {text}"))),
                })
                .collect::<Result<Vec<_>>>()?;
            let analyzed = effects.analyze(*model_id, texts, *split).await?;
            for (entry, document) in entries.iter_mut().zip(analyzed.documents) {
                data::set(&mut entry.json, into, with_top_tag(&analyzed.model, document));
            }
        }
        Step::Extract { model_id, file, into } => {
            for entry in &mut entries {
                let binary = entry.binary.get(file).ok_or_else(|| {
                    unprocessable(format!(
                        "the request has no file `{file}` (the step's `file`: a form's file field by its name, \
                             or `data` for a raw body)"
                    ))
                })?;
                let extracted = effects.extract(*model_id, binary).await?;
                data::set(&mut entry.json, into, extracted);
            }
        }
        Step::Notify {
            user_id,
            message,
            level,
        } => {
            for entry in &entries {
                effects
                    .notify(*user_id, *level, data::render(message, &entry.json)?)
                    .await?;
            }
        }
        Step::HttpRequest {
            method,
            url,
            headers,
            send_entry,
            into,
        } => {
            // Each answer is read only as far as the run's data has room left, so a large answer
            // fails its call before it is parsed (`MAX_ANSWER_BYTES` at the most).
            let mut room = limit.saturating_sub(entries_size(&entries));
            for entry in &mut entries {
                let call = HttpCall {
                    method: *method,
                    url: data::render_url(url, &entry.json)?,
                    address_from_data: data::address_from_data(url),
                    headers: headers
                        .iter()
                        .map(|(name, value)| Ok((name.clone(), data::render(value, &entry.json)?)))
                        .collect::<Result<_>>()?,
                    body: send_entry.then(|| Value::Object(entry.json.clone()).to_string().into_bytes()),
                    max_answer_bytes: room.min(MAX_ANSWER_BYTES),
                };
                let answer = effects.http(call).await?;
                if answer.body.len() > room.min(MAX_ANSWER_BYTES) {
                    return Err(too_much_data(limit));
                }
                room -= answer.body.len();
                data::set(&mut entry.json, into, answer_value(answer));
            }
        }
        Step::Set { fields, keep_only_set } => {
            // What the step writes is counted as it goes, so copies of a large value stop at the
            // limit instead of after the step.
            let mut written = 0usize;
            for entry in &mut entries {
                let source = entry.json.clone();
                if *keep_only_set {
                    entry.json = Map::new();
                }
                for mapping in fields {
                    let value = match (&mapping.value, &mapping.from) {
                        (Some(Value::String(template)), _) => Value::String(data::render(template, &source)?),
                        (Some(value), _) => value.clone(),
                        (None, Some(from)) => data::get(&source, from).cloned().unwrap_or(Value::Null),
                        (None, None) => Value::Null,
                    };
                    written = written.saturating_add(data::json_size(&value));
                    if written > limit {
                        return Err(too_much_data(limit));
                    }
                    data::set(&mut entry.json, &mapping.name, value);
                }
            }
        }
    }
    Ok(entries)
}

/// An analysed document with its model and its most confident tag (`class`, `label`,
/// `confidence`; null when nothing was tagged).
fn with_top_tag(model: &Value, mut document: Value) -> Value {
    let top = document["segments"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|segment| segment["tags"].as_array().into_iter().flatten())
        .max_by(|a, b| {
            let (a, b) = (
                a["confidence"].as_f64().unwrap_or(0.0),
                b["confidence"].as_f64().unwrap_or(0.0),
            );
            a.total_cmp(&b)
        })
        .cloned();
    if let Value::Object(map) = &mut document {
        if let Value::Object(model) = model {
            for (key, value) in model {
                map.insert(key.clone(), value.clone());
            }
        }
        for key in ["class", "label", "confidence"] {
            let value = top.as_ref().map_or(Value::Null, |tag| tag[key].clone());
            map.insert(key.into(), value);
        }
    }
    document
}

/// `{status, body}`: the body as JSON when it is JSON, else as text.
fn answer_value(answer: HttpAnswer) -> Value {
    let body = serde_json::from_slice::<Value>(&answer.body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&answer.body).into_owned()));
    json!({"status": answer.status, "body": body})
}

/// What a webhook answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Json(Value),
    Text(String),
    Empty,
}

/// The answer of `immediately`.
pub fn started() -> Reply {
    Reply::Json(json!({"message": "Workflow was started"}))
}

/// The answer of `last_step` for the last step's entries.
pub fn reply(trigger: &Trigger, entries: &[Entry]) -> std::result::Result<Reply, String> {
    match trigger.response_data {
        ResponseData::NoData => Ok(Reply::Empty),
        ResponseData::AllEntries => Ok(Reply::Json(Value::Array(
            entries.iter().map(|e| Value::Object(e.json.clone())).collect(),
        ))),
        ResponseData::FirstEntryJson => {
            let first = entries.first().map(|e| &e.json);
            match (trigger.property(), first) {
                (None, Some(json)) => Ok(Reply::Json(Value::Object(json.clone()))),
                (None, None) => Ok(Reply::Json(json!({}))),
                (Some(property), Some(json)) => match data::get(json, property) {
                    Some(Value::String(text)) => Ok(Reply::Text(text.clone())),
                    Some(value) => Ok(Reply::Json(value.clone())),
                    None => Err(format!("the first entry has no property {property}")),
                },
                (Some(property), None) => Err(format!("no entry to answer {property} from")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::Definition;
    use std::sync::Mutex;

    /// Effects that answer from fixed rules and remember what they were asked.
    #[derive(Default)]
    struct Fake {
        notes: Mutex<Vec<(i64, String)>>,
        calls: Mutex<Vec<HttpCall>>,
        /// Answer calls with this many bytes of JSON, whatever the call allows.
        answer_bytes: Option<usize>,
    }

    impl Effects for Fake {
        async fn analyze(&self, model_id: i64, texts: Vec<String>, _split: bool) -> Result<Analyzed> {
            if model_id == 404 {
                return Err(Error::not_found("model"));
            }
            let documents = texts
                .into_iter()
                .map(|text| {
                    let class = if text.contains("invoice") { "billing" } else { "other" };
                    json!({"text": text, "segments": [{"text": text, "span": [0, 1], "tags": [
                        {"class": "other", "label": null, "confidence": 0.3},
                        {"class": class, "label": null, "confidence": 0.6}
                    ]}]})
                })
                .collect();
            Ok(Analyzed {
                model: json!({"model": "Tickets", "model_id": model_id, "type": "CLASS"}),
                documents,
            })
        }

        async fn extract(&self, _model_id: i64, file: &Binary) -> Result<Value> {
            Ok(json!({"file_name": file.file_name, "size": file.bytes.len()}))
        }

        async fn notify(&self, user_id: i64, _level: Level, message: String) -> Result<()> {
            self.notes.lock().unwrap().push((user_id, message));
            Ok(())
        }

        async fn http(&self, call: HttpCall) -> Result<HttpAnswer> {
            self.calls.lock().unwrap().push(call);
            let body = match self.answer_bytes {
                Some(n) => format!("[{}0]", "0,".repeat(n.saturating_sub(3) / 2)).into_bytes(),
                None => br#"{"ticket": 7}"#.to_vec(),
            };
            Ok(HttpAnswer {
                status: 201,
                content_type: Some("application/json".into()),
                body,
            })
        }
    }

    fn input(body: Value) -> Entry {
        let mut entry = Entry::default();
        entry.json.insert("body".into(), body);
        entry
    }

    fn definition(value: Value) -> Definition {
        serde_json::from_value(value).unwrap()
    }

    #[tokio::test]
    async fn an_email_is_analysed_and_its_class_answered_as_text() {
        let d = definition(json!({
            "trigger": {"path": "mail", "response_mode": "last_step", "property_name": "data"},
            "steps": [
                {"type": "analyze", "model_id": 3},
                {"type": "set", "fields": [{"name": "data", "from": "analysis.class"}], "keep_only_set": true}
            ]
        }));
        let fake = Fake::default();
        let done = run(&d.steps, input(json!({"text": "my invoice is wrong"})), &fake)
            .await
            .unwrap();
        assert_eq!(reply(&d.trigger, &done.entries), Ok(Reply::Text("billing".into())));
        assert_eq!(done.record.len(), 3);
        assert_eq!(done.record[1]["entries"][0]["json"]["analysis"]["model_id"], 3);
        assert_eq!(done.record[1]["entries"][0]["json"]["analysis"]["confidence"], 0.6);
    }

    #[tokio::test]
    async fn a_failing_step_stops_the_run_and_says_which() {
        let d = definition(json!({
            "trigger": {"path": "mail"},
            "steps": [
                {"type": "notify", "user_id": 1, "message": "from {{ body.from }}"},
                {"type": "analyze", "model_id": 404},
                {"type": "notify", "user_id": 1, "message": "never"}
            ]
        }));
        let fake = Fake::default();
        let failed = run(&d.steps, input(json!({"text": "x", "from": "ann"})), &fake)
            .await
            .unwrap_err();
        assert_eq!((failed.step, failed.kind), (2, "analyze"));
        assert_eq!(failed.message(), "step 2 (analyze) failed: model not found");
        assert_eq!(*fake.notes.lock().unwrap(), vec![(1, "from ann".to_owned())]);
        assert_eq!(failed.record.len(), 2);
    }

    #[tokio::test]
    async fn missing_input_is_the_callers_problem() {
        let steps = definition(json!({"trigger": {"path": "x"}, "steps": [{"type": "analyze", "model_id": 1}]})).steps;
        let failed = run(&steps, input(json!({"txt": "x"})), &Fake::default())
            .await
            .unwrap_err();
        assert_eq!(failed.error.code, ErrorCode::ValidationFailed);
        assert_eq!(failed.error.detail, "the request has no body.text");
        let files = definition(json!({"trigger": {"path": "x"}, "steps": [{"type": "extract", "model_id": 1}]})).steps;
        let failed = run(&files, input(json!({})), &Fake::default()).await.unwrap_err();
        assert!(
            failed.error.detail.starts_with("the request has no file `data`"),
            "{}",
            failed.error.detail
        );
    }

    #[tokio::test]
    async fn a_call_reads_no_more_than_the_runs_room_for_data() {
        let steps = definition(json!({"trigger": {"path": "x"}, "steps": [
            {"type": "http_request", "url": "https://crm.example/a"}
        ]}))
        .steps;
        let fake = Fake::default();
        run(&steps, input(json!({"id": 1})), &fake).await.unwrap();
        assert_eq!(fake.calls.lock().unwrap()[0].max_answer_bytes, MAX_ANSWER_BYTES);
        // An answer longer than the call allowed is not parsed: the step fails.
        let flooding = Fake {
            answer_bytes: Some(MAX_ANSWER_BYTES + 10),
            ..Fake::default()
        };
        let failed = run(&steps, input(json!({"id": 1})), &flooding).await.unwrap_err();
        assert_eq!((failed.step, failed.kind), (1, "http_request"));
        assert!(failed.error.detail.contains("would pass"), "{}", failed.error.detail);
    }

    #[tokio::test]
    async fn calls_render_their_templates_and_keep_the_answer() {
        let steps = definition(json!({"trigger": {"path": "x"}, "steps": [{
            "type": "http_request", "method": "POST", "url": "https://crm.example/{{ body.id }}",
            "headers": {"X-From": "{{ body.from }}"}, "send_entry": true
        }]}))
        .steps;
        let fake = Fake::default();
        let done = run(&steps, input(json!({"id": 9, "from": "ann"})), &fake)
            .await
            .unwrap();
        let call = fake.calls.lock().unwrap()[0].clone();
        assert_eq!(call.url, "https://crm.example/9");
        assert_eq!(call.headers, vec![("X-From".to_owned(), "ann".to_owned())]);
        assert_eq!(call.body.unwrap(), br#"{"body":{"from":"ann","id":9}}"#.to_vec());
        assert_eq!(
            done.entries[0].json["response"],
            json!({"status": 201, "body": {"ticket": 7}})
        );
    }

    #[tokio::test]
    async fn set_writes_values_templates_and_copies() {
        let steps = definition(json!({"trigger": {"path": "x"}, "steps": [{"type": "set", "fields": [
            {"name": "greeting", "value": "Hello {{ body.name }}"},
            {"name": "meta.n", "value": 3},
            {"name": "copy", "from": "body.name"}
        ]}]}))
        .steps;
        let done = run(&steps, input(json!({"name": "Ann"})), &Fake::default())
            .await
            .unwrap();
        let json = Value::Object(done.entries[0].json.clone());
        assert_eq!(json["greeting"], "Hello Ann");
        assert_eq!(json["meta"]["n"], 3);
        assert_eq!(json["copy"], "Ann");
        assert_eq!(json["body"]["name"], "Ann");
    }

    #[tokio::test]
    async fn a_template_that_renders_past_the_cap_fails_its_step() {
        let many = "{{body}}".repeat(1249);
        let d = definition(json!({"trigger": {"path": "x"}, "steps": [
            {"type": "notify", "user_id": 1, "message": "fine"},
            {"type": "set", "fields": [{"name": "huge", "value": many}]}
        ]}));
        let mut problems = lector_core::validate::Problems::default();
        d.check(&mut problems, false);
        assert!(
            problems.0.is_empty(),
            "the definition itself is allowed: {:?}",
            problems.0
        );
        let failed = run(&d.steps, input(json!("b".repeat(1000))), &Fake::default())
            .await
            .unwrap_err();
        assert_eq!((failed.step, failed.kind), (2, "set"));
        assert_eq!(failed.error.code, ErrorCode::ValidationFailed);
        assert_eq!(
            failed.message(),
            "step 2 (set) failed: a template renders to more than 1048576 bytes"
        );
        assert_eq!(failed.record.len(), 2);
    }

    #[tokio::test]
    async fn a_field_fed_to_itself_stops_at_the_cap() {
        let mut steps = vec![json!({"type": "set", "fields": [{"name": "a", "value": "{{ body }}"}]})];
        steps.extend((0..19).map(|_| json!({"type": "set", "fields": [{"name": "a", "value": "{{a}}{{a}}"}]})));
        let d = definition(json!({"trigger": {"path": "x"}, "steps": steps}));
        // 4 KiB doubled at each step passes 1 MiB at the ninth doubling (step 10).
        let failed = run(&d.steps, input(json!("c".repeat(4096))), &Fake::default())
            .await
            .unwrap_err();
        assert_eq!((failed.step, failed.kind), (10, "set"));
        assert_eq!(failed.error.detail, "a template renders to more than 1048576 bytes");
        // Calls and notifications render their templates under the same cap.
        let call = definition(json!({"trigger": {"path": "x"}, "steps": [
            {"type": "http_request", "method": "GET", "url": "https://crm.example/{{body}}{{body}}"}
        ]}));
        let fake = Fake::default();
        let failed = run(&call.steps, input(json!("d".repeat(600_000))), &fake)
            .await
            .unwrap_err();
        assert_eq!(failed.kind, "http_request");
        assert!(fake.calls.lock().unwrap().is_empty(), "no call was made");
    }

    #[tokio::test]
    async fn the_record_keeps_steps_within_its_bound() {
        let copy = json!({"type": "set", "fields": [{"name": "copy", "from": "body"}]});
        let d = definition(json!({"trigger": {"path": "x"}, "steps": [copy.clone(), copy.clone(), copy]}));
        // 1 MiB of body: the input (1 MiB) and the first step (2 MiB) fit in 4 MiB, the later
        // steps (2 MiB each) do not.
        let done = run(&d.steps, input(json!("f".repeat(1024 * 1024))), &Fake::default())
            .await
            .unwrap();
        assert_eq!(done.record.len(), 4);
        assert!(done.record[0]["entries"].is_array() && done.record[1]["entries"].is_array());
        for step in &done.record[2..] {
            assert!(step.get("entries").is_none(), "{}", step["step"]);
            assert!(step["omitted_bytes"].as_u64().unwrap() > 2 * 1024 * 1024);
        }
        assert!(data::json_size(&done.record) < MAX_RECORD_BYTES + 1024);
        // The run's own data is whole: only the record leaves steps out.
        assert_eq!(done.entries[0].json["copy"].as_str().map(str::len), Some(1024 * 1024));
    }

    #[tokio::test]
    async fn copies_stop_once_the_data_passes_its_bound() {
        let fields: Vec<Value> = (0..40)
            .map(|i| json!({"name": format!("copy{i}"), "from": "body"}))
            .collect();
        let d = definition(json!({"trigger": {"path": "x"}, "steps": [{"type": "set", "fields": fields}]}));
        let body = "e".repeat(1024 * 1024);
        let input = input(json!(body));
        let limit = data::json_size(&input.json) + MAX_DATA_GROWTH_BYTES;
        let failed = run(&d.steps, input, &Fake::default()).await.unwrap_err();
        assert_eq!((failed.step, failed.kind), (1, "set"));
        assert_eq!(failed.error.code, ErrorCode::ValidationFailed);
        assert_eq!(
            failed.error.detail,
            format!("the workflow's data would pass {limit} bytes (what the webhook brought and 33554432 bytes more)")
        );
        // Fewer copies stay within it.
        let few: Vec<Value> = (0..8)
            .map(|i| json!({"name": format!("copy{i}"), "from": "body"}))
            .collect();
        let d = definition(json!({"trigger": {"path": "x"}, "steps": [{"type": "set", "fields": few}]}));
        let done = run(&d.steps, super::tests::input(json!(body)), &Fake::default())
            .await
            .unwrap();
        assert_eq!(done.entries[0].json["copy7"].as_str().map(str::len), Some(1024 * 1024));
    }

    #[test]
    fn replies_follow_the_response_settings() {
        let entries = vec![input(json!({"a": 1})), input(json!({"a": 2}))];
        let trigger = |v: Value| definition(json!({"trigger": v})).trigger;
        let all = trigger(json!({"path": "x", "response_mode": "last_step", "response_data": "all_entries"}));
        assert_eq!(
            reply(&all, &entries),
            Ok(Reply::Json(json!([{"body": {"a": 1}}, {"body": {"a": 2}}])))
        );
        let first = trigger(json!({"path": "x", "response_mode": "last_step"}));
        assert_eq!(reply(&first, &entries), Ok(Reply::Json(json!({"body": {"a": 1}}))));
        let property = trigger(json!({"path": "x", "response_mode": "last_step", "property_name": "body"}));
        assert_eq!(reply(&property, &entries), Ok(Reply::Json(json!({"a": 1}))));
        let missing = trigger(json!({"path": "x", "response_mode": "last_step", "property_name": "data"}));
        assert!(reply(&missing, &entries).is_err());
        let none = trigger(json!({"path": "x", "response_mode": "last_step", "response_data": "no_data"}));
        assert_eq!(reply(&none, &entries), Ok(Reply::Empty));
        assert_eq!(started(), Reply::Json(json!({"message": "Workflow was started"})));
    }
}
