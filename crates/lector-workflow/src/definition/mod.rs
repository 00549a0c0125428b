//! What a workflow is: a webhook trigger (its path, methods, how it answers and whom it lets
//! in) and the ordered steps each method leads to. The same types are read from requests,
//! stored as JSON and served; [`Definition::check`] holds every rule and bound, so a stored
//! definition is always one the runner can run.

use lector_core::validate::Problems;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most steps one method leads to.
pub const MAX_STEPS: usize = 20;
/// Longest webhook path, in characters.
pub const MAX_PATH_CHARS: usize = 200;
/// Longest template (a notification's message, a URL, a header value, a set value).
pub const MAX_TEMPLATE_CHARS: usize = 2000;
/// Most bytes one template may render to. Each `{{ path }}` brings its whole value, so a
/// template of many placeholders over a large body (or `set` steps that feed a field to itself)
/// would otherwise grow without bound; a step whose template passes it fails the run.
pub const MAX_RENDERED_BYTES: usize = 1024 * 1024;
/// Most bytes of JSON a run's steps may add to what its webhook brought (its entries' JSON
/// together); a step that passes it fails the run.
pub const MAX_DATA_GROWTH_BYTES: usize = 32 * 1024 * 1024;
/// Most bytes of one `http_request` answer a run reads (less when the run's data has less room
/// left): what is read is parsed as JSON, which takes many times its bytes in memory, so an
/// address answering a large body fails its step instead of filling the server's memory.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// What an execution keeps of its steps' entries (JSON bytes); a step past it is recorded by
/// its size alone.
pub const MAX_RECORD_BYTES: usize = 4 * 1024 * 1024;
/// Most fields one `set` step writes, and most headers one `http_request` sends.
pub const MAX_FIELDS: usize = 50;
/// Longest data path (`body.customer.name`), in characters.
pub const MAX_DATA_PATH_CHARS: usize = 200;
/// The most requests a minute a trigger may allow.
pub const MAX_RATE_PER_MINUTE: u32 = 600_000;

/// The HTTP methods a webhook may listen to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
    Head,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Head => "HEAD",
        }
    }

    /// The method of a request, if a webhook may listen to it.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "GET" => Method::Get,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            "HEAD" => Method::Head,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a webhook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseMode {
    /// At once, with `{"message": "Workflow was started"}`; the steps run after.
    #[default]
    Immediately,
    /// When the last step has finished, with what `response_data` says.
    LastStep,
}

/// What a webhook answers once its last step has finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseData {
    /// Every entry's JSON, as an array.
    AllEntries,
    /// The first entry's JSON (or, with a property name, that property's value).
    #[default]
    FirstEntryJson,
    /// An empty body.
    NoData,
}

/// Who may call a webhook, besides anyone who knows its address.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct Authentication {
    /// none, header or basic.
    #[serde(rename = "type", default)]
    pub kind: AuthKind,
    /// Header authentication: the header's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Header authentication: the value the header must carry. Only in requests: it is
    /// stored as a salted digest and never served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Basic authentication: the user name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Basic authentication: the password. Only in requests, like `value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthKind {
    #[default]
    None,
    Header,
    Basic,
}

impl Authentication {
    /// The secret a request brought (a header's value, a password), taken out so that the
    /// definition can be stored and served without it.
    pub fn take_secret(&mut self) -> Option<String> {
        match self.kind {
            AuthKind::None => None,
            AuthKind::Header => self.value.take(),
            AuthKind::Basic => self.password.take(),
        }
    }
}

/// The webhook a workflow starts from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// The address's path after `/webhook/` (letters, digits, `-`, `_`, `.`, `~` and inner
    /// slashes).
    pub path: String,
    /// The method listened to, when `multiple_methods` is false (default GET).
    #[serde(default = "default_method")]
    pub http_method: Method,
    /// Whether the webhook listens to several methods (`http_methods`).
    #[serde(default)]
    pub multiple_methods: bool,
    /// The methods listened to, when `multiple_methods` is true (default GET and POST).
    #[serde(default = "default_methods")]
    pub http_methods: Vec<Method>,
    #[serde(default)]
    pub response_mode: ResponseMode,
    #[serde(default)]
    pub response_data: ResponseData,
    /// With `first_entry_json`: answer this property of the first entry (empty means `data`),
    /// as plain text when it is a string; a call whose run has no such property is answered
    /// 422 naming `property_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub property_name: Option<String>,
    /// The status of a successful answer (default 200); a 204 or 304 answers no body.
    #[serde(default = "default_response_code")]
    pub response_code: u16,
    #[serde(default)]
    pub authentication: Authentication,
    /// Requests a minute the webhook serves, on each node (default 600).
    #[serde(default = "default_rate")]
    pub rate_limit_per_minute: u32,
}

fn default_method() -> Method {
    Method::Get
}

fn default_methods() -> Vec<Method> {
    vec![Method::Get, Method::Post]
}

fn default_response_code() -> u16 {
    200
}

fn default_rate() -> u32 {
    600
}

impl Trigger {
    /// The methods the webhook listens to, each once, in order.
    pub fn methods(&self) -> Vec<Method> {
        if !self.multiple_methods {
            return vec![self.http_method];
        }
        let mut methods = self.http_methods.clone();
        methods.sort();
        methods.dedup();
        methods
    }

    /// The property the first entry is answered by, if any.
    pub fn property(&self) -> Option<&str> {
        self.property_name
            .as_deref()
            .map(|name| if name.trim().is_empty() { "data" } else { name })
    }
}

/// What the notify step's notification is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    #[default]
    Info,
    Warning,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Info => "INFO",
            Level::Warning => "WARNING",
        }
    }
}

/// One field a `set` step writes: a fixed `value` (strings may hold `{{ path }}`
/// placeholders) or the value found `from` a path of the entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldMapping {
    /// Where to write, as a path (`customer.name`).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// One step of a workflow. Each runs once for every entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Tags the text at `text` (default `body.text`) with a READY model; the result goes to
    /// `into` (default `analysis`): the segments with their tags and the most confident tag
    /// (`class`, `label`, `confidence`).
    Analyze {
        model_id: i64,
        #[serde(default = "default_text_path")]
        text: String,
        /// Split the text into sentences (default true).
        #[serde(default = "yes")]
        split: bool,
        #[serde(default = "default_analysis")]
        into: String,
    },
    /// Extracts the fields of a LABEL project's model from the uploaded file `file` (a form's
    /// file field, or `data` for a raw body); the result goes to `into` (default `extraction`).
    Extract {
        model_id: i64,
        #[serde(default = "default_file")]
        file: String,
        #[serde(default = "default_extraction")]
        into: String,
    },
    /// Notifies a member of the workspace; `message` may hold `{{ path }}` placeholders.
    Notify {
        user_id: i64,
        message: String,
        #[serde(default)]
        level: Level,
    },
    /// Calls an address (through the guard against server-side request forgery); the answer
    /// `{status, body}` goes to `into` (default `response`). The URL and header values may
    /// hold placeholders; `send_entry` sends the entry's JSON as the body.
    HttpRequest {
        #[serde(default = "default_method")]
        method: Method,
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        #[serde(default)]
        send_entry: bool,
        #[serde(default = "default_response")]
        into: String,
    },
    /// Shapes the entry: writes each field; with `keep_only_set` the entry keeps only them.
    Set {
        fields: Vec<FieldMapping>,
        #[serde(default)]
        keep_only_set: bool,
    },
}

fn yes() -> bool {
    true
}
fn default_text_path() -> String {
    "body.text".into()
}
fn default_analysis() -> String {
    "analysis".into()
}
fn default_file() -> String {
    "data".into()
}
fn default_extraction() -> String {
    "extraction".into()
}
fn default_response() -> String {
    "response".into()
}

impl Step {
    /// The step's type as written.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::Analyze { .. } => "analyze",
            Step::Extract { .. } => "extract",
            Step::Notify { .. } => "notify",
            Step::HttpRequest { .. } => "http_request",
            Step::Set { .. } => "set",
        }
    }

    /// The models the step uses.
    pub fn model_id(&self) -> Option<i64> {
        match self {
            Step::Analyze { model_id, .. } | Step::Extract { model_id, .. } => Some(*model_id),
            _ => None,
        }
    }
}

/// A workflow's trigger and steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Definition {
    pub trigger: Trigger,
    /// The steps every method leads to, unless `steps_by_method` names it.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// With multiple methods: the steps a method leads to instead of `steps`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub steps_by_method: BTreeMap<Method, Vec<Step>>,
}

impl Definition {
    /// The steps a request of `method` runs.
    pub fn steps_for(&self, method: Method) -> &[Step] {
        self.steps_by_method.get(&method).unwrap_or(&self.steps)
    }

    /// Every step, of every method.
    pub fn all_steps(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().chain(self.steps_by_method.values().flatten())
    }

    /// Every rule and bound; problems are named by field (`trigger.path`, `steps[2].model_id`).
    /// `has_secret` says whether a secret is stored already (an update may leave it out).
    pub fn check(&self, problems: &mut Problems, has_secret: bool) {
        self.check_against(problems, has_secret, None);
    }

    /// [`Definition::check`] of an update: `stored_key_name` is the key header name of the
    /// stored definition, which stays accepted as it was saved (see `Authentication::check`).
    fn check_against(&self, problems: &mut Problems, has_secret: bool, stored_key_name: Option<&str>) {
        self.trigger.check(problems, has_secret, stored_key_name);
        check_steps("steps", &self.steps, problems);
        let methods = self.trigger.methods();
        for (method, steps) in &self.steps_by_method {
            let field = format!("steps_by_method.{method}");
            if !methods.contains(method) {
                problems.push(&field, format!("the webhook does not listen to {method}"));
            }
            check_steps(&field, steps, problems);
        }
    }
}

/// A checked definition ready to store: its JSON without the secret, the secret's digest, and
/// the (method, path) pairs it listens on.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub json: String,
    pub auth_digest: Option<String>,
    pub routes: Vec<(String, String)>,
}

impl Definition {
    /// Checks the definition (422 naming every problem) and takes its secret out. An update
    /// (`previous`: the stored definition and digest) may leave the secret out to keep it, as
    /// long as the authentication's type stays.
    pub fn prepare(mut self, previous: Option<(&Definition, Option<&str>)>) -> lector_core::Result<Prepared> {
        let kept = previous
            .filter(|(old, _)| old.trigger.authentication.kind == self.trigger.authentication.kind)
            .and_then(|(_, digest)| digest)
            .filter(|_| self.trigger.authentication.kind != AuthKind::None);
        let stored_key_name = previous.and_then(|(old, _)| old.trigger.authentication.name.as_deref());
        let mut problems = Problems::default();
        self.check_against(&mut problems, kept.is_some(), stored_key_name);
        problems.finish()?;
        let auth_digest = match self.trigger.authentication.take_secret().filter(|s| !s.is_empty()) {
            Some(secret) => Some(crate::admission::digest(&secret)),
            None => kept.map(str::to_owned),
        };
        let routes = self
            .trigger
            .methods()
            .into_iter()
            .map(|m| (m.as_str().to_owned(), self.trigger.path.clone()))
            .collect();
        let json = serde_json::to_string(&self).map_err(|_| lector_core::Error::internal())?;
        Ok(Prepared {
            json,
            auth_digest,
            routes,
        })
    }
}

impl Trigger {
    fn check(&self, problems: &mut Problems, has_secret: bool, stored_key_name: Option<&str>) {
        if let Err(why) = check_path(&self.path) {
            problems.push("trigger.path", why);
        }
        if self.multiple_methods {
            problems.check(
                !self.http_methods.is_empty(),
                "trigger.http_methods",
                "must name a method",
            );
        }
        problems.check(
            (200..=599).contains(&self.response_code),
            "trigger.response_code",
            "must be an HTTP status from 200 to 599",
        );
        if let Some(name) = &self.property_name {
            check_data_path(problems, "trigger.property_name", name, true);
            problems.check(
                self.response_data == ResponseData::FirstEntryJson && self.response_mode == ResponseMode::LastStep,
                "trigger.property_name",
                "answers a property only with response_mode last_step and response_data first_entry_json",
            );
        }
        problems.check(
            (1..=MAX_RATE_PER_MINUTE).contains(&self.rate_limit_per_minute),
            "trigger.rate_limit_per_minute",
            "must be from 1 to 600000",
        );
        self.authentication.check(problems, has_secret, stored_key_name);
    }
}

impl Authentication {
    /// `stored_key_name`: the key header name stored before this update, if any.
    fn check(&self, problems: &mut Problems, has_secret: bool, stored_key_name: Option<&str>) {
        let field = "trigger.authentication";
        let given = |value: &Option<String>| value.as_deref().is_some_and(|v| !v.is_empty());
        match self.kind {
            AuthKind::None => problems.check(
                self.name.is_none() && self.value.is_none() && self.user.is_none() && self.password.is_none(),
                field,
                "type none takes no name, value, user or password",
            ),
            AuthKind::Header => {
                let name = self.name.as_deref().unwrap_or_default();
                // No `_`: nginx and other proxies drop such headers by default
                // (`underscores_in_headers off`), and every call would then answer 401. A name
                // saved before that rule stays as it is (its callers and proxy may well pass it):
                // an update that keeps it, as one leaving `authentication` out does, is accepted.
                let kept = stored_key_name == Some(name);
                problems.check(
                    !name.is_empty()
                        && name.len() <= 100
                        && name.bytes().all(|b| is_inbound_name_byte(b) || (kept && b == b'_')),
                    &format!("{field}.name"),
                    "must be a header name of letters, digits and - (at most 100); no `_`: proxies such as nginx \
                     drop such headers by default",
                );
                problems.check(
                    !name.eq_ignore_ascii_case("authorization") && !name.eq_ignore_ascii_case("content-type"),
                    &format!("{field}.name"),
                    "must not be Authorization or Content-Type",
                );
                problems.check(
                    given(&self.value) || has_secret,
                    &format!("{field}.value"),
                    "is required",
                );
                problems.check(
                    self.user.is_none() && self.password.is_none(),
                    field,
                    "type header takes name and value",
                );
                check_secret(problems, &format!("{field}.value"), &self.value);
            }
            AuthKind::Basic => {
                let user = self.user.as_deref().unwrap_or_default();
                problems.check(
                    !user.is_empty()
                        && user.chars().count() <= 120
                        && !user.contains(':')
                        && !user.chars().any(char::is_control),
                    &format!("{field}.user"),
                    "must be a user name of at most 120 characters, without ':'",
                );
                problems.check(
                    given(&self.password) || has_secret,
                    &format!("{field}.password"),
                    "is required",
                );
                problems.check(
                    self.name.is_none() && self.value.is_none(),
                    field,
                    "type basic takes user and password",
                );
                check_secret(problems, &format!("{field}.password"), &self.password);
            }
        }
    }
}

fn check_secret(problems: &mut Problems, field: &str, secret: &Option<String>) {
    if let Some(secret) = secret {
        problems.check(
            secret.chars().count() <= 1024 && !secret.chars().any(char::is_control),
            field,
            "at most 1024 characters, no control characters",
        );
    }
}

/// A byte of a header name a caller sends through the proxies in front of the service.
fn is_inbound_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// A byte of a header name a step sends out: `_` too, which the called service may want.
fn is_outbound_name_byte(b: u8) -> bool {
    is_inbound_name_byte(b) || b == b'_'
}

/// Whether `path` may be a webhook's path: 1 to 200 characters of letters, digits, `-`, `_`,
/// `.`, `~`, with single inner slashes and no `.` or `..` segment.
pub fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() || path.chars().count() > MAX_PATH_CHARS {
        return Err(format!("must have 1 to {MAX_PATH_CHARS} characters"));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '/');
    if !path.chars().all(allowed) {
        return Err("may hold ASCII letters and digits, '-', '_', '.', '~' and '/' only".into());
    }
    if path.split('/').any(|segment| matches!(segment, "" | "." | "..")) {
        return Err("must not start or end with '/', hold '//', or a '.' or '..' segment".into());
    }
    Ok(())
}

fn check_steps(field: &str, steps: &[Step], problems: &mut Problems) {
    problems.check(steps.len() <= MAX_STEPS, field, "at most 20 steps");
    for (i, step) in steps.iter().enumerate().take(MAX_STEPS) {
        let at = |name: &str| format!("{field}[{i}].{name}");
        match step {
            Step::Analyze {
                model_id, text, into, ..
            } => {
                problems.check(*model_id > 0, &at("model_id"), "must be a model's id");
                check_data_path(problems, &at("text"), text, false);
                check_data_path(problems, &at("into"), into, false);
            }
            Step::Extract { model_id, file, into } => {
                problems.check(*model_id > 0, &at("model_id"), "must be a model's id");
                problems.check(
                    !file.is_empty() && file.chars().count() <= 120,
                    &at("file"),
                    "must name a file of the request (1 to 120 characters)",
                );
                check_data_path(problems, &at("into"), into, false);
            }
            Step::Notify { user_id, message, .. } => {
                problems.check(*user_id > 0, &at("user_id"), "must be a user's id");
                problems.check(!message.trim().is_empty(), &at("message"), "must not be empty");
                check_template(problems, &at("message"), message);
            }
            Step::HttpRequest { url, headers, into, .. } => {
                check_template(problems, &at("url"), url);
                // A URL made whole by an earlier step (`{{ url }}`) is checked as the address
                // it renders to, by the outbound guard (`data::render_url`).
                problems.check(
                    url.starts_with("https://") || url.starts_with("http://") || url.starts_with("{{"),
                    &at("url"),
                    "must be an http or https address, or start with a placeholder",
                );
                problems.check(headers.len() <= MAX_FIELDS, &at("headers"), "at most 50 headers");
                for (name, value) in headers {
                    problems.check(
                        !name.is_empty() && name.len() <= 100 && name.bytes().all(is_outbound_name_byte),
                        &at("headers"),
                        "header names are letters, digits, '-' and '_' (at most 100)",
                    );
                    check_template(problems, &at("headers"), value);
                    problems.check(
                        !value.chars().any(|c| c.is_control() && c != '\t'),
                        &at("headers"),
                        "header values hold no control characters (but tabs)",
                    );
                }
                check_data_path(problems, &at("into"), into, false);
            }
            Step::Set { fields, .. } => {
                problems.check(!fields.is_empty(), &at("fields"), "must name a field");
                problems.check(fields.len() <= MAX_FIELDS, &at("fields"), "at most 50 fields");
                for (j, mapping) in fields.iter().enumerate().take(MAX_FIELDS) {
                    let field = format!("{field}[{i}].fields[{j}]");
                    check_data_path(problems, &format!("{field}.name"), &mapping.name, false);
                    match (&mapping.value, &mapping.from) {
                        (Some(_), None) => {}
                        (None, Some(from)) => check_data_path(problems, &format!("{field}.from"), from, false),
                        _ => problems.push(&field, "takes either value or from"),
                    }
                    if let Some(value) = &mapping.value {
                        let size = serde_json::to_string(value).map_or(usize::MAX, |s| s.len());
                        problems.check(
                            size <= 10_000,
                            &format!("{field}.value"),
                            "at most 10,000 bytes of JSON",
                        );
                    }
                }
            }
        }
    }
}

fn check_template(problems: &mut Problems, field: &str, text: &str) {
    problems.check(
        text.chars().count() <= MAX_TEMPLATE_CHARS,
        field,
        "at most 2000 characters",
    );
    problems.check(!text.contains('\0'), field, "must not hold NUL");
}

/// A data path: dot-separated keys (array positions as numbers), at most 200 characters.
fn check_data_path(problems: &mut Problems, field: &str, path: &str, empty_ok: bool) {
    if empty_ok && path.trim().is_empty() {
        return;
    }
    let ok = !path.is_empty()
        && path.chars().count() <= MAX_DATA_PATH_CHARS
        && path
            .split('.')
            .all(|key| !key.is_empty() && !key.chars().any(|c| c.is_control() || c.is_whitespace()));
    problems.check(
        ok,
        field,
        "must be a path of dot-separated keys (body.text), at most 200 characters",
    );
}

#[cfg(test)]
mod tests;
