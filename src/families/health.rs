//! TL601-TL609: NeMo Gym 0.7.0's nine rollout health checks (`trajlint.health`), and the row's
//! judgement the run's health report is made of: which checks are unobserved on the row, and the
//! numbers of its `Digest` (`trajlint.health.view`).
//!
//! Modelled: rows whose build takes the stated trajectory's turns (an `ng_trajectory` object that
//! NeMo Gym accepts whole: valid against its schema, its record invariants holding, no value its
//! lax validation would coerce), and rows with no `ng_trajectory` object, whose turns the build
//! makes from the evidence (`built_turns`). Agent observations, when the row has them, must be
//! accepted whole too; the invocations they add and the join of their references with the
//! captured calls are modelled, and a join that records a reference gap is not. Every other row
//! answers None and the Python path judges it.
//!
//! On such a row the build's calls are the stated calls, each merged with the captured call of
//! its id, then the other captured calls (`build::ledger`); each call's metadata and token counts
//! are read here as `project_call` and `merge_into` make them: the capture's value where it has
//! one, else the stated one.

use crate::hash::{HashMap, HashSet};
use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::json;

use crate::build::ledger::{self, Kind, Ledger, RefKey, CAPTURE, OBSERVATIONS, STATED};
use crate::build::turns::{self, truthy};
use crate::doc::schema::DocJson;
use crate::doc::{self, Children, Json, Object, Value};
use crate::families::schema;
use crate::families::Row;

/// Bits of `Judgement::unobserved`, in the order of `trajlint.health.checks.ROW_CHECKS`.
pub const MISSING_TURNS: u32 = 1;
pub const ENDED_ON_FAILURE: u32 = 1 << 1;
pub const HOLLOW_TURN: u32 = 1 << 2;
pub const ZERO_COMPLETION: u32 = 1 << 3;
pub const MISSING_COUNTS: u32 = 1 << 4;
pub const CAPTURE_MISMATCH: u32 = 1 << 5;
pub const CALL_FAILED: u32 = 1 << 6;
pub const TOKEN_MISMATCH: u32 = 1 << 7;
pub const RUNAWAY: u32 = 1 << 8;

/// `trajlint.health.view.Digest`, field for field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Digest {
    pub calls: u64,
    pub successful_turn_calls: u64,
    pub policy_calls_observed: bool,
    /// (str(status_code) or "unknown", failed calls), sorted by status.
    pub failed_by_status: Vec<(String, u64)>,
    pub ended_on_error: bool,
    pub duplicated_calls: u64,
    pub transcript_prompt: u64,
    pub transcript_completion: u64,
    pub capture_prompt: u64,
    pub capture_completion: u64,
    pub stated_invalid: bool,
}

/// What a row proved clean of TL601-TL609 gives the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// Bit i: `ROW_CHECKS[i]` is unobserved on the row.
    pub unobserved: u32,
    pub digest: Digest,
}

pub fn clean(row: &Row<'_>) -> bool {
    judge(row).is_some()
}

// -- the schemas the build reads the stated trajectory and capture gaps with --------------------

struct Schemas {
    trajectory: Validator<DocJson>,
    observations: Validator<DocJson>,
    gap: Validator<DocJson>,
}

fn schemas() -> Option<&'static Schemas> {
    static SCHEMAS: OnceLock<Option<Schemas>> = OnceLock::new();
    SCHEMAS.get_or_init(make_schemas).as_ref()
}

/// As `trajlint.contract.validate` makes them for jsonschema-rs: the document itself, and a
/// reference to a part of one, resolved in a registry of every packaged document, offline.
fn make_schemas() -> Option<Schemas> {
    let packaged = schema::packaged()?;
    let (_, trajectory) = packaged.document("trajectory.schema.json")?;
    let (_, observations) = packaged.document("agent-observations.schema.json")?;
    let (common, _) = packaged.document("common.schema.json")?;
    let gap = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("{common}#/$defs/ObservationGap"),
    });
    Some(Schemas {
        trajectory: packaged.validator(trajectory)?,
        observations: packaged.validator(observations)?,
        gap: packaged.validator(&gap)?,
    })
}

// -- values as Python reads them ------------------------------------------------------------------

fn object(value: Option<Value<'_>>) -> Option<Object<'_>> {
    value.and_then(Value::as_object)
}

fn list(value: Option<Value<'_>>) -> Children<'_> {
    doc::items(value)
}

fn string(value: Option<Value<'_>>) -> Option<&str> {
    value.and_then(Value::as_str)
}

/// `nonnegative_int`: a JSON integer >= 0.
fn count(value: Option<Value<'_>>) -> Option<u64> {
    value.and_then(Value::as_u64)
}

/// A JSON integer (Python `type(v) is int`).
fn integer(value: Option<Value<'_>>) -> Option<i128> {
    let value = value?;
    value
        .as_i64()
        .map(i128::from)
        .or_else(|| value.as_u64().map(i128::from))
}

/// A `-0` or `-0.0`: serde_json reads both as the float -0.0, orjson reads `-0` as the integer
/// 0, and the text no longer tells which the line wrote. A count or status read from such a
/// value is not modelled.
fn negative_zero(value: Option<Value<'_>>) -> bool {
    value
        .and_then(Value::as_f64)
        .is_some_and(|x| x == 0.0 && x.is_sign_negative())
}

/// Python `str.isspace` of one character: Unicode White_Space and the four separators
/// U+001C-U+001F.
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

// `trajlint.health.checks`: what a model said, and tool calls.
const TOOL_CALL_TYPES: [&str; 13] = [
    "function_call",
    "tool_call",
    "tool_use",
    "mcp_call",
    "mcp_list_tools",
    "mcp_approval_request",
    "file_search_call",
    "web_search_call",
    "computer_call",
    "image_generation_call",
    "code_interpreter_call",
    "local_shell_call",
    "custom_tool_call",
];
const SAYING_KEYS: [&str; 9] = [
    "text",
    "content",
    "output_text",
    "answer",
    "refusal",
    "encrypted_content",
    "reasoning",
    "reasoning_content",
    "summary",
];

/// `says_something`: text anywhere through the keys that carry it; `thinking` adds Anthropic's
/// `thinking` key and a `redacted_thinking` block's data.
fn says_something(value: Option<Value<'_>>, thinking: bool) -> bool {
    let mut stack: Vec<Value> = value.into_iter().collect();
    while let Some(value) = stack.pop() {
        match value.view() {
            Json::String(text) if !text.chars().all(py_space) => return true,
            Json::Array(items) => stack.extend(items),
            Json::Object(map) => {
                if thinking && map.get("type").and_then(Value::as_str) == Some("redacted_thinking")
                {
                    stack.extend(map.get("data"));
                }
                for key in SAYING_KEYS {
                    stack.extend(map.get(key));
                }
                if thinking {
                    stack.extend(map.get("thinking"));
                }
            }
            _ => {}
        }
    }
    false
}

fn has_tool_call(value: Option<Value<'_>>) -> bool {
    let mut stack: Vec<Value> = value.into_iter().collect();
    while let Some(value) = stack.pop() {
        match value.view() {
            Json::Array(items) => stack.extend(items),
            Json::Object(map) => {
                let typed = map
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|kind| TOOL_CALL_TYPES.contains(&kind));
                if typed || truthy(map.get("tool_calls")) {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

fn response_has_content(response: Option<Value<'_>>) -> bool {
    let Some(response) = response.and_then(Value::as_object) else {
        return false;
    };
    if ["output_text", "content", "output"]
        .iter()
        .any(|key| says_something(response.get(key), false))
    {
        return true;
    }
    // `response.get("choices") or ()`: a value that is no list is iterated by Python; a truthy
    // string or object is not modelled.
    let choices = response.get("choices");
    let choices = match choices.map(Value::view) {
        Some(Json::Array(items)) => items.iter(),
        _ if !truthy(choices) => list(None),
        _ => return true, // not modelled: refuse through the caller
    };
    for choice in choices.filter_map(Value::as_object) {
        let message = choice.get("message");
        let content = match message.and_then(Value::as_object) {
            Some(m) => m.get("content"),
            None => message,
        };
        if says_something(choice.get("text"), false) || says_something(content, false) {
            return true;
        }
    }
    false
}

/// A response whose `choices` `response_has_content` does not model.
fn odd_choices(response: Option<Value<'_>>) -> bool {
    match response.and_then(Value::as_object) {
        Some(r) => {
            let choices = r.get("choices");
            !choices.is_some_and(Value::is_array) && truthy(choices)
        }
        None => false,
    }
}

// -- the build's calls ----------------------------------------------------------------------------

const FAILED_RESPONSE_STATUSES: [&str; 3] = ["failed", "error", "cancelled"];
const LENGTH_LIMITS: [&str; 3] = ["length", "max_output_tokens", "max_tokens"];

/// One call of the build, as `merge_into(canonical.model_call(stated), project_call(captured))`
/// (or either alone) holds it, in the fields the checks read.
#[derive(Default)]
struct Call<'a> {
    model_call_id: Option<&'a str>,
    /// None: null. A number exactly representable as f64 (else the row is refused).
    started_at: Option<f64>,
    response: Option<Value<'a>>,
    status_code: Option<i128>,
    response_status: Option<&'a str>,
    error_category: Option<&'a str>,
    finish_reason: Option<&'a str>,
    response_id: Option<&'a str>,
    model_ref: Option<(&'a str, &'a str)>,
    prompt: Option<u64>,
    completion: Option<u64>,
}

impl Call<'_> {
    fn failed(&self) -> bool {
        self.status_code.is_some_and(|s| s >= 400)
            || self.error_category.is_some_and(|c| !c.is_empty())
            || self
                .response_status
                .is_some_and(|s| FAILED_RESPONSE_STATUSES.contains(&s))
    }

    fn successful(&self) -> bool {
        !self.failed() && self.status_code.is_none_or(|s| (200..400).contains(&s))
    }

    /// `_call_identity`. An id's identity ("call:" and the id) equals no response's ("response:"
    /// and more), so it is kept as the id alone, unwritten; a response's is written out, since
    /// colons in its parts can make two different parts read as one identity.
    fn identity(&self) -> Option<Identity<'_>> {
        if let Some(id) = self.model_call_id.filter(|id| !id.is_empty()) {
            return Some(Identity::Call(id));
        }
        let response_id = self.response_id.filter(|id| !id.is_empty())?;
        Some(Identity::Response(match self.model_ref {
            Some((kind, name)) => format!("response:{kind}:{name}:{response_id}"),
            None => format!("response::{response_id}"),
        }))
    }
}

/// A call's identity (`Call::identity`): equal exactly when `_call_identity`'s strings are.
#[derive(PartialEq, Eq, Hash)]
enum Identity<'a> {
    Call(&'a str),
    Response(String),
}

/// A time as Python compares it, when f64 holds it exactly.
fn time(value: Value<'_>) -> Option<f64> {
    if let Some(x) = value.as_i64() {
        return (x.unsigned_abs() <= 1 << 53).then_some(x as f64);
    }
    if let Some(x) = value.as_u64() {
        return (x <= 1 << 53).then_some(x as f64);
    }
    value.as_f64()
}

/// The stated call's fields (`canonical.model_call` of a call proved valid by the ledger).
fn stated_call(call: Object<'_>) -> Option<Call<'_>> {
    let meta = object(call.get("response_metadata"));
    let get = |key: &str| meta.and_then(|m| m.get(key)).filter(|v| !v.is_null());
    let tokens = object(call.get("token_stats"));
    Some(Call {
        model_call_id: string(call.get("model_call_id")),
        started_at: match call.get("started_at").filter(|v| !v.is_null()) {
            Some(v) => Some(time(v)?),
            None => None,
        },
        response: call.get("response").filter(|v| !v.is_null()),
        status_code: integer(get("status_code")),
        response_status: string(get("response_status")),
        error_category: string(get("error_category")),
        finish_reason: string(get("finish_reason")),
        response_id: string(get("response_id")),
        model_ref: ledger::server_key(get("model_ref")),
        prompt: count(tokens.and_then(|t| t.get("prompt_tokens"))),
        completion: count(tokens.and_then(|t| t.get("completion_tokens"))),
    })
}

/// `project_call` merged over `base` (the stated call, or nothing): each projected value that is
/// not None wins.
fn merge_captured<'a>(mut call: Call<'a>, raw: Object<'a>) -> Option<Call<'a>> {
    let get = |key: &str| raw.get(key);
    if ["status_code", "tokens_in", "tokens_out"]
        .iter()
        .any(|key| negative_zero(get(key)))
    {
        return None;
    }
    if let Some(id) = string(get("model_call_id")) {
        call.model_call_id = Some(id);
    }
    if let Some(v) = get("started_at").filter(|v| v.is_number()) {
        call.started_at = Some(time(v)?);
    }
    let response = get("response").filter(|v| !v.is_null());
    if let Some(r) = response.or_else(|| get("response_raw").filter(|v| !v.is_null())) {
        call.response = Some(r);
    }
    if let Some(s) = integer(get("status_code")) {
        call.status_code = Some(s);
    }
    let status = string(get("response_status"))
        .or_else(|| response.and_then(|r| string(r.as_object()?.get("status"))));
    if let Some(s) = status {
        call.response_status = Some(s);
    }
    if let Some(c) = string(get("error_category")) {
        call.error_category = Some(c);
    }
    if let Some(f) = string(get("finish_reason")) {
        call.finish_reason = Some(f);
    }
    if let Some(r) = string(get("response_id")) {
        call.response_id = Some(r);
    }
    let model_ref = object(get("model_ref")).filter(|r| {
        r.get("type").and_then(Value::as_str) == Some("responses_api_models")
            && r.get("name").is_some_and(Value::is_string)
    });
    if let Some(r) = model_ref {
        call.model_ref = Some(("responses_api_models", r.get("name")?.as_str()?));
    }
    if let Some(n) = count(get("tokens_in")) {
        call.prompt = Some(n);
    }
    if let Some(n) = count(get("tokens_out")) {
        call.completion = Some(n);
    }
    Some(call)
}

fn build_calls<'a>(row: Object<'a>, ledger: &Ledger<'a>) -> Option<Vec<Call<'a>>> {
    // By position: the ledger's positions index the whole lists.
    let stated: Option<Vec<Value>> =
        object(row.get(STATED)).map(|s| list(s.get("model_calls")).collect());
    let captured: Option<Vec<Value>> =
        object(row.get(CAPTURE)).map(|c| list(c.get("calls")).collect());
    let mut calls = Vec::with_capacity(ledger.calls.len());
    for entry in &ledger.calls {
        let mut call = match entry.stated {
            Some(i) => stated_call(stated.as_deref()?.get(i)?.as_object()?)?,
            None => Call::default(),
        };
        if let Some(k) = entry.capture {
            call = merge_captured(call, captured.as_deref()?.get(k)?.as_object()?)?;
        }
        calls.push(call);
    }
    Some(calls)
}

// -- the stated trajectory ------------------------------------------------------------------------

/// Scalars NeMo Gym's lax validation would coerce (`trajlint.contract.lax.SCALARS`, the stated
/// trajectory's models): (part, fields that must be integers, fields that must be numbers,
/// fields that must be booleans).
type Fields = (
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);
const INVOCATION: Fields = (&[], &["duration_ms"], &[]);
const TURN: Fields = (&["turn_no", "step_count"], &["timestamp"], &["resolved"]);
const MODEL_CALL: Fields = (&[], &["started_at", "completed_at", "duration_ms"], &[]);
const METADATA: Fields = (
    &["status_code", "upstream_status_code"],
    &["latency_ttft_ms"],
    &["upstream_attempted"],
);
const TOKEN_STATS: Fields = (
    &[
        "prompt_tokens",
        "completion_tokens",
        "reasoning_tokens",
        "total_tokens",
        "cached_tokens",
    ],
    &[],
    &[],
);
const TOOL_CALL: Fields = (&[], &["started_at", "completed_at", "duration_ms"], &[]);

const TOOL_OBSERVATION: Fields = (&[], &["started_at", "completed_at", "duration_ms"], &[]);
const COMPACTION: Fields = (&["tokens_before", "tokens_after"], &["observed_at"], &[]);
const SANDBOX: Fields = (
    &["exit_code"],
    &["wall_time_s", "cpu_time_s", "peak_memory_mib"],
    &[],
);

fn written(item: Object<'_>, (integers, numbers, booleans): Fields) -> bool {
    let ok = |names: &[&str], is: fn(Value<'_>) -> bool| {
        names
            .iter()
            .all(|name| item.get(name).is_none_or(|v| v.is_null() || is(v)))
    };
    ok(integers, |v| v.is_i64() || v.is_u64())
        && ok(numbers, |v| v.is_number())
        && ok(booleans, |v| v.is_boolean())
}

fn as_written(stated: Object<'_>) -> bool {
    let items = |part: &str| list(stated.get(part)).filter_map(Value::as_object);
    items("invocations").all(|i| written(i, INVOCATION))
        && items("turns").all(|t| written(t, TURN))
        && items("tool_calls").all(|t| written(t, TOOL_CALL))
        && items("model_calls").all(|c| {
            written(c, MODEL_CALL)
                && object(c.get("response_metadata")).is_none_or(|m| written(m, METADATA))
                && object(c.get("token_stats")).is_none_or(|t| written(t, TOKEN_STATS))
        })
}

/// A string or null, as a key Python compares; None for any other value (not modelled).
fn text_key(value: Option<Value<'_>>) -> Option<Option<&str>> {
    match value.map(Value::view) {
        None | Some(Json::Null) => Some(None),
        Some(Json::String(s)) => Some(Some(s)),
        _ => None,
    }
}

/// `_record_invariants_hold`; None when a value it compares is not modelled.
fn invariants_hold(stated: Object<'_>) -> Option<bool> {
    let objects = |part: &str| -> Option<Vec<Object>> {
        match stated.get(part).map(Value::view) {
            None => Some(Vec::new()),
            Some(Json::Array(items)) => Some(items.iter().filter_map(Value::as_object).collect()),
            _ => None,
        }
    };
    let mut invocations = HashSet::default();
    for inv in objects("invocations")? {
        if !invocations.insert(text_key(inv.get("invocation_id"))?) {
            return Some(false);
        }
    }
    let mut ids = HashSet::default();
    for call in objects("model_calls")? {
        if let Some(id) = text_key(call.get("model_call_id"))?.filter(|id| !id.is_empty()) {
            if !ids.insert(id) {
                return Some(false);
            }
        }
    }
    let identity = (
        text_key(stated.get("task_id"))?,
        text_key(stated.get("rollout_id"))?,
    );
    let mut keys = HashSet::default();
    for turn in objects("turns")? {
        let turn_no = match turn.get("turn_no").filter(|v| !v.is_null()) {
            None => None,
            other => Some(integer(other)?),
        };
        if !keys.insert((text_key(turn.get("invocation_id"))?, turn_no)) {
            return Some(false);
        }
        let own = (
            text_key(turn.get("task_id"))?,
            text_key(turn.get("rollout_id"))?,
        );
        if own != identity {
            return Some(false);
        }
    }
    Some(true)
}

// -- the agent observations ---------------------------------------------------------------------

/// What the observations add to the build the view reads: the invocations they add (those the
/// stated trajectory does not hold), each with its references, and the gap codes they carry.
struct Observed<'a> {
    references: Vec<RefKey<'a>>,
    codes: Vec<&'a str>,
}

/// `_bundle_invariants_hold` over agent invocation records: unique ids and no parent cycle.
/// None when an id is not modelled.
fn bundle_invariants_hold(records: &[Object<'_>]) -> Option<bool> {
    let mut parents: HashMap<Option<&str>, Option<&str>> = HashMap::default();
    let mut order = Vec::new();
    for record in records {
        if string(record.get("kind")) != Some("agent_invocation") {
            continue;
        }
        let id = text_key(record.get("invocation_id"))?;
        let parent = text_key(record.get("parent_invocation_id"))?;
        if parents.insert(id, parent).is_some() {
            return Some(false);
        }
        order.push(id);
    }
    let mut cleared = HashSet::default();
    for start in order {
        let mut seen = HashSet::default();
        let mut node = start;
        while let Some(id) = node.filter(|n| !cleared.contains(n)) {
            let Some(parent) = parents.get(&Some(id)) else {
                break;
            };
            if !seen.insert(id) {
                return Some(false);
            }
            node = *parent;
        }
        cleared.extend(seen);
    }
    Some(true)
}

/// The observations' part of the build (`take_observations` and `join`), for a bundle NeMo Gym
/// accepts whole with no compaction record; None for any other bundle, and when the join would
/// record a reference gap (`trajectory-capture-mismatch` reports it, or the row is not judged).
fn observed<'a>(
    row: Object<'a>,
    bundle: Value<'a>,
    stated: Option<Object<'a>>,
    ledger: &Ledger<'a>,
    schemas: &Schemas,
    // The schema family proved the bundle valid (`Row::sections_valid`).
    valid: bool,
) -> Option<Observed<'a>> {
    let section = bundle.as_object()?;
    let records: Vec<Object> = match section.get("records").map(Value::view) {
        None => Vec::new(),
        Some(Json::Array(items)) => items.iter().map(Value::as_object).collect::<Option<_>>()?,
        _ => return None,
    };
    for record in &records {
        let fields = match string(record.get("kind"))? {
            "agent_invocation" => INVOCATION,
            "tool_call" => TOOL_OBSERVATION,
            "sandbox" => SANDBOX,
            "context_compaction" => COMPACTION,
            _ => return None,
        };
        if !written(*record, fields) {
            return None;
        }
    }
    if !(valid || schemas.observations.is_valid(bundle)) || !bundle_invariants_hold(&records)? {
        return None;
    }
    let joined = object(row.get(CAPTURE)).is_some();
    let mut codes = Vec::new();
    for gap in list(section.get("gaps")) {
        let code = string(gap.as_object()?.get("code"))?;
        if !(joined && REFERENCE_GAPS.contains(&code)) {
            codes.push(code); // a capture present rejoins the calls: the join writes its own
        }
    }
    let known: HashSet<Option<&str>> = list(stated.and_then(|s| s.get("invocations")))
        .filter_map(Value::as_object)
        .map(|inv| string(inv.get("invocation_id")))
        .collect();
    // The calls each client session names, in order (`_sessions`).
    let captured: Option<Vec<Value>> =
        object(row.get(CAPTURE)).map(|c| list(c.get("calls")).collect());
    let mut sessions: HashMap<&str, Vec<usize>> = HashMap::default();
    for (position, entry) in ledger.calls.iter().enumerate() {
        let raw = entry
            .capture
            .and_then(|k| captured.as_deref()?.get(k)?.as_object());
        if let Some(session) = raw.and_then(|raw| string(raw.get("client_session_id"))) {
            sessions.entry(session).or_default().push(position);
        }
    }
    // The join matches references among the captured calls only.
    let matches = |key: Option<RefKey<'a>>| -> Vec<usize> {
        ledger
            .index
            .matches(key)
            .unwrap_or(&[])
            .iter()
            .copied()
            .filter(|&i| ledger.calls[i].capture.is_some())
            .collect()
    };
    let mut owned: HashMap<usize, Option<&str>> = HashMap::default();
    let mut references = Vec::new();
    for record in records
        .iter()
        .filter(|r| string(r.get("kind")) == Some("agent_invocation"))
    {
        let owner = string(record.get("invocation_id"));
        let added = !known.contains(&owner);
        let mut keys: Vec<Option<RefKey<'a>>> = list(record.get("model_calls"))
            .filter(|r| r.is_object())
            .map(ledger::ref_key)
            .collect();
        if !joined {
            if added {
                references.extend(keys.into_iter().flatten());
            }
            continue;
        }
        let mut referenced: HashSet<usize> = keys.iter().flat_map(|k| matches(*k)).collect();
        for &position in owner
            .and_then(|o| sessions.get(o))
            .map_or(&[][..], Vec::as_slice)
        {
            let entry = &ledger.calls[position];
            if let Some(id) = entry.model_call_id {
                if !referenced.contains(&position) {
                    let key = Some(RefKey {
                        call_id: Some(id),
                        server: None,
                        response_id: None,
                    });
                    keys.push(key);
                    referenced.extend(matches(key));
                }
            }
        }
        for key in keys {
            let [one] = matches(key)[..] else {
                return None; // model_call_reference_unmatched or _ambiguous
            };
            if owned.insert(one, owner).is_some() {
                return None; // model_call_reference_conflict
            }
            if added {
                // The join rewrites the reference to the call it resolves to.
                let entry = &ledger.calls[one];
                references.push(RefKey {
                    call_id: entry.model_call_id,
                    server: entry.server,
                    response_id: entry.response_id,
                });
            }
        }
    }
    if joined {
        // A compaction's references: each must name one captured call, owned by no other
        // invocation (else the join records a reference gap).
        for record in records
            .iter()
            .filter(|r| string(r.get("kind")) == Some("context_compaction"))
        {
            let owner = string(record.get("invocation_id"));
            let helpers = match record.get("model_calls").map(Value::view) {
                None | Some(Json::Null) => list(None),
                Some(Json::Array(items)) => items.iter(),
                _ => return None,
            };
            let markers = ["before_model_call", "after_model_call"]
                .into_iter()
                .filter_map(|name| record.get(name).filter(|r| !r.is_null()));
            for reference in helpers.chain(markers) {
                let [one] = matches(ledger::ref_key(reference))[..] else {
                    return None;
                };
                if owned.get(&one).is_some_and(|o| *o != owner) {
                    return None;
                }
            }
        }
    }
    Some(Observed { references, codes })
}

// -- the view -------------------------------------------------------------------------------------

const REFERENCE_GAPS: [&str; 3] = [
    "model_call_reference_unmatched",
    "model_call_reference_ambiguous",
    "model_call_reference_conflict",
];
const INCOMPLETE_CALL_GAPS: [&str; 4] = [
    "model_calls_unavailable",
    "model_call_capture_incomplete",
    "model_call_capture_records_unreadable",
    "model_call_capture_unreadable",
];

/// References (deduplicated) and the calls they resolve to.
#[derive(Default)]
struct Bindings {
    references: usize,
    matched: Vec<usize>,
    missing: usize,
    duplicated: usize,
}

impl Bindings {
    fn complete(&self) -> bool {
        self.references > 0 && self.missing == 0 && self.duplicated == 0
    }
}

/// `_refs`: the usable references of the items' `model_calls`, each form once.
fn refs<'a>(items: &[Object<'a>], seen: &mut HashSet<RefKey<'a>>, out: &mut Vec<RefKey<'a>>) {
    for item in items {
        for reference in list(item.get("model_calls")) {
            let Some(key) = ledger::ref_key(reference) else {
                continue;
            };
            if usable(&key) && seen.insert(key) {
                out.push(key);
            }
        }
    }
}

fn bind<'a>(ledger: &Ledger<'a>, keys: &[RefKey<'a>]) -> Bindings {
    let mut bindings = Bindings {
        references: keys.len(),
        ..Bindings::default()
    };
    for key in keys {
        match ledger.index.matches(Some(*key)).unwrap_or(&[]) {
            [] => bindings.missing += 1,
            [one] => bindings.matched.push(*one),
            _ => bindings.duplicated += 1,
        }
    }
    // Sorted, each call once: a few positions sort for less than a set costs to build.
    bindings.matched.sort_unstable();
    bindings.matched.dedup();
    bindings
}

/// `_usage` of the row's `response`: the transcript's (prompt, completion) counts.
/// None when a count is written as a negative zero (not modelled).
fn transcript(row: Object<'_>) -> Option<(Option<u64>, Option<u64>)> {
    let Some(usage) = object(row.get("response")).and_then(|r| object(r.get("usage"))) else {
        return Some((None, None));
    };
    let pick = |first: &str, second: &str| {
        let value = usage.get(first).or_else(|| usage.get(second));
        (!negative_zero(value)).then(|| count(value))
    };
    Some((
        pick("input_tokens", "prompt_tokens")?,
        pick("output_tokens", "completion_tokens")?,
    ))
}

/// `ended_on_failure` of one model's chain of calls (positions into `calls`).
fn chain_ended_on_failure(calls: &[Call<'_>], chain: &[usize]) -> bool {
    let failed = chain.iter().filter(|&&i| calls[i].failed()).count();
    if failed == 0 {
        return false;
    }
    if failed == chain.len() {
        return true;
    }
    if chain.iter().any(|&i| calls[i].started_at.is_none()) {
        return false;
    }
    // The last of `sorted(chain, key=(started_at or 0.0, position))`.
    let last = chain.iter().copied().max_by(|&a, &b| {
        let (ta, tb) = (
            calls[a].started_at.unwrap_or(0.0),
            calls[b].started_at.unwrap_or(0.0),
        );
        // JSON holds no NaN; -0.0 equals 0.0, as in Python.
        ta.partial_cmp(&tb)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    last.is_some_and(|i| calls[i].failed())
}

/// The row's judgement: Some only when Python finds no finding of TL601-TL609 on it.
pub fn judge(shared: &Row<'_>) -> Option<Judgement> {
    let row = shared.doc;
    let schemas = schemas()?;
    // `Evidence.stated`: the row carries an `ng_trajectory` object, whose turns the build takes.
    let stated = match row.get(STATED) {
        Some(value) => match value.view() {
            Json::Object(stated) => {
                if !as_written(stated)
                    || !invariants_hold(stated)?
                    || !(shared.sections_valid() || schemas.trajectory.is_valid(value))
                {
                    return None;
                }
                Some(stated)
            }
            _ => None,
        },
        None => None,
    };
    let ledger = shared.ledger()?;
    let calls = build_calls(row, ledger)?;
    let observed = match row.get(OBSERVATIONS).filter(|b| b.is_object()) {
        Some(bundle) => observed(
            row,
            bundle,
            stated,
            ledger,
            schemas,
            shared.sections_valid(),
        )?,
        None => Observed {
            references: Vec::new(),
            codes: Vec::new(),
        },
    };

    // The build's gap codes, of those the view reads.
    let mut codes: HashSet<&str> = HashSet::default();
    let mut reference_gaps = 0usize;
    let stated_gaps = list(stated.and_then(|s| s.get("gaps"))).filter_map(Value::as_object);
    let capture = row.get(CAPTURE);
    let capture_gaps =
        list(object(capture).and_then(|c| c.get("gaps"))).filter(|gap| gap.is_object());
    for gap in capture_gaps {
        if !(shared.sections_valid() || schemas.gap.is_valid(gap)) {
            continue; // `model_call_capture_gap_invalid`, which no check reads
        }
        codes.insert(string(gap.get("code"))?);
        reference_gaps += REFERENCE_GAPS.contains(&string(gap.get("code"))?) as usize;
    }
    for gap in stated_gaps {
        let code = string(gap.get("code"))?;
        codes.insert(code);
        reference_gaps += REFERENCE_GAPS.contains(&code) as usize;
    }
    for code in &observed.codes {
        codes.insert(code);
        reference_gaps += REFERENCE_GAPS.contains(code) as usize;
    }
    if calls.is_empty() {
        codes.insert("model_calls_unavailable");
    }

    let mut seen = HashSet::default();
    let turns = match stated {
        Some(stated) => stated_turns(stated, &mut seen),
        None => built_turns(row, ledger, &calls, &mut seen)?,
    };
    if stated.is_none() && turns.count == 0 {
        codes.insert("turns_unavailable");
    }
    let invocations: Vec<Object> = list(stated.and_then(|s| s.get("invocations")))
        .filter_map(Value::as_object)
        .collect();

    let turns_observed = turns.count > 0 || !codes.contains("turns_unavailable");
    let incomplete: Vec<&str> = INCOMPLETE_CALL_GAPS
        .iter()
        .copied()
        .filter(|c| codes.contains(c))
        .collect();
    let capture_damaged = match capture.map(Value::view) {
        None | Some(Json::Null) => false,
        Some(Json::Object(c)) => match c.get("calls").map(Value::view) {
            Some(Json::Array(items)) => !items.iter().all(Value::is_object),
            _ => true,
        },
        Some(_) => true,
    };
    let calls_observed =
        incomplete.is_empty() || (incomplete == ["model_calls_unavailable"] && capture_damaged);
    let scope_complete = !codes.contains("turn_model_call_scope_incomplete");

    let turn_keys = &turns.keys;
    let turn_bindings = bind(ledger, turn_keys);
    let mut invocation_keys = Vec::new();
    refs(&invocations, &mut seen, &mut invocation_keys);
    for key in observed.references {
        if usable(&key) && seen.insert(key) {
            invocation_keys.push(key);
        }
    }
    let owned = if invocation_keys.is_empty() {
        None
    } else {
        let mut all = turn_keys.clone();
        all.extend(invocation_keys);
        Some(bind(ledger, &all))
    };
    let owned = owned.as_ref().unwrap_or(&turn_bindings);
    let usage = transcript(row)?;
    // `matched` is sorted.
    let bound = |i: &usize| turn_bindings.matched.binary_search(i).is_ok();
    let helpers: Vec<usize> = ledger
        .calls
        .iter()
        .enumerate()
        .filter(|(i, e)| {
            !bound(i) && e.claimed_as(Kind::Compaction) && !e.claimed_as(Kind::Verifier)
        })
        .map(|(i, _)| i)
        .collect();
    let mut spending: Vec<usize> = turn_bindings
        .matched
        .iter()
        .copied()
        .chain(helpers)
        .collect();
    spending.sort_unstable();

    // Evidence.
    let model_calls = calls_observed && !calls.is_empty();
    let call_references = owned.references > 0 || reference_gaps > 0;
    let owned_calls = !owned.matched.is_empty();
    let turn_usage = !turn_bindings.matched.is_empty()
        && scope_complete
        && turn_bindings.complete()
        && usage.0.is_some()
        && usage.1.is_some()
        && spending
            .iter()
            .all(|&i| calls[i].prompt.is_some() && calls[i].completion.is_some());
    let kept_responses = !owned.matched.iter().any(|&i| {
        calls[i].response.is_none()
            && calls[i]
                .finish_reason
                .is_some_and(|r| LENGTH_LIMITS.contains(&r))
    });

    // The calls per model they went to (`HealthView.chains`).
    let mut chains: HashMap<Option<ledger::Server>, Vec<usize>> = HashMap::default();
    for (position, call) in calls.iter().enumerate() {
        chains.entry(call.model_ref).or_default().push(position);
    }
    let any_failed = calls.iter().any(Call::failed);
    let ended_on_error = any_failed
        && chains
            .iter()
            .any(|(_, chain)| chain_ended_on_failure(&calls, chain));

    // The checks, in `ROW_CHECKS` order: a finding refuses the row.
    let mut unobserved = 0;
    let checks: [(u32, bool); 9] = [
        (MISSING_TURNS, turns_observed),
        (ENDED_ON_FAILURE, model_calls),
        (HOLLOW_TURN, turns_observed),
        (ZERO_COMPLETION, calls_observed && owned_calls),
        (MISSING_COUNTS, calls_observed && owned_calls),
        (CAPTURE_MISMATCH, calls_observed && call_references),
        (CALL_FAILED, calls_observed && owned_calls),
        (TOKEN_MISMATCH, calls_observed && turn_usage),
        (RUNAWAY, calls_observed && owned_calls && kept_responses),
    ];
    for (check, observed) in checks {
        if !observed {
            unobserved |= check;
            continue;
        }
        let found = match check {
            MISSING_TURNS => !turns.active,
            ENDED_ON_FAILURE => ended_on_error,
            HOLLOW_TURN => turns.hollow,
            ZERO_COMPLETION => owned
                .matched
                .iter()
                .any(|&i| calls[i].completion == Some(0)),
            MISSING_COUNTS => owned
                .matched
                .iter()
                .any(|&i| calls[i].prompt.is_none() || calls[i].completion.is_none()),
            CAPTURE_MISMATCH => owned.missing + owned.duplicated + reference_gaps > 0,
            CALL_FAILED => owned.matched.iter().any(|&i| calls[i].failed()),
            TOKEN_MISMATCH => {
                let mut sums = (0u64, 0u64);
                for &i in &spending {
                    sums.0 = sums.0.checked_add(calls[i].prompt.unwrap_or(0))?;
                    sums.1 = sums.1.checked_add(calls[i].completion.unwrap_or(0))?;
                }
                usage != (Some(sums.0), Some(sums.1))
            }
            _ => owned.matched.iter().any(|&i| {
                let call = &calls[i];
                if odd_choices(call.response) {
                    return true; // not modelled: refuse the row
                }
                call.finish_reason
                    .is_some_and(|r| LENGTH_LIMITS.contains(&r))
                    && !response_has_content(call.response)
            }),
        };
        if found {
            return None;
        }
    }

    // The digest.
    let mut failed: HashMap<String, u64> = HashMap::default();
    let mut identities = HashSet::default();
    let (mut duplicated, mut prompt_sum, mut completion_sum) = (0u64, 0u64, 0u64);
    for call in &calls {
        if call.failed() {
            let key = call
                .status_code
                .map_or_else(|| "unknown".to_owned(), |s| s.to_string());
            *failed.entry(key).or_default() += 1;
        }
        if let Some(identity) = call.identity() {
            duplicated += u64::from(!identities.insert(identity));
        }
        prompt_sum = prompt_sum.checked_add(call.prompt.unwrap_or(0))?;
        completion_sum = completion_sum.checked_add(call.completion.unwrap_or(0))?;
    }
    let mut failed_by_status: Vec<(String, u64)> = failed.into_iter().collect();
    failed_by_status.sort();
    let digest = Digest {
        calls: calls.len() as u64,
        successful_turn_calls: turn_bindings
            .matched
            .iter()
            .filter(|&&i| calls[i].successful())
            .count() as u64,
        policy_calls_observed: scope_complete && turn_bindings.complete(),
        failed_by_status,
        ended_on_error,
        duplicated_calls: duplicated,
        transcript_prompt: usage.0.unwrap_or(0),
        transcript_completion: usage.1.unwrap_or(0),
        capture_prompt: prompt_sum,
        capture_completion: completion_sum,
        stated_invalid: false,
    };
    Some(Judgement { unobserved, digest })
}

/// `turn_says_something` of a recorded turn: its own message, reasoning or tool call.
fn turn_says_something(turn: Object<'_>) -> bool {
    let answer = turn.get("answer");
    says_something(answer, true)
        || says_something(turn.get("reasoning_content"), true)
        || has_tool_call(answer)
}

// -- the turns ------------------------------------------------------------------------------------

fn kind(map: Object<'_>) -> Option<&str> {
    map.get("type").and_then(Value::as_str)
}

/// What the checks read of the build's turns.
struct Turns<'a> {
    count: usize,
    /// The usable references of the turns' `model_calls`, each form once (`_refs`).
    keys: Vec<RefKey<'a>>,
    /// Some turn has model activity: a usable reference, or something said (`_missing_turns`).
    active: bool,
    /// Some turn says nothing (`_hollow`).
    hollow: bool,
}

/// The stated trajectory's turns, judged as recorded.
fn stated_turns<'a>(stated: Object<'a>, seen: &mut HashSet<RefKey<'a>>) -> Turns<'a> {
    let turns: Vec<Object> = list(stated.get("turns"))
        .filter_map(Value::as_object)
        .collect();
    let mut keys = Vec::new();
    refs(&turns, seen, &mut keys);
    let active = turns.iter().any(|turn| {
        let names_a_call =
            list(turn.get("model_calls")).any(|r| ledger::ref_key(r).is_some_and(|k| usable(&k)));
        names_a_call || turn_says_something(*turn)
    });
    Turns {
        count: turns.len(),
        keys,
        active,
        hollow: !turns.iter().all(|turn| turn_says_something(*turn)),
    }
}

/// A reference that names a call: by id, or by model and response id (`nemo_gym_label`).
fn usable(key: &RefKey<'_>) -> bool {
    key.call_id.is_some() || (key.server.is_some() && key.response_id.is_some())
}

/// The turns the build makes from the evidence when nothing is stated (`_Builder.turns`): one per
/// call an agent invocation owns, in the ledger's order, each referencing its own call by
/// {model_call_id, model_ref, response_id}. Such a turn is judged by the calls that reference
/// matches (`turn_says_something(..., recorded=False)`): its own, and any other holding the same
/// id, model and response id. None when a turn's owner is not modelled (`turns::expected`).
fn built_turns<'a>(
    row: Object<'a>,
    ledger: &Ledger<'a>,
    calls: &[Call<'a>],
    seen: &mut HashSet<RefKey<'a>>,
) -> Option<Turns<'a>> {
    let expected = turns::expected(row, ledger)?;
    let mut said: Vec<Option<bool>> = vec![None; calls.len()];
    let mut says = |i: usize| *said[i].get_or_insert_with(|| response_says(calls[i].response));
    let mut found = Turns {
        count: 0,
        keys: Vec::new(),
        active: false,
        hollow: false,
    };
    for (i, entry) in ledger.calls.iter().enumerate() {
        if expected[i].is_none() {
            continue;
        }
        found.count += 1;
        // The reference's form: the projection keeps a model_ref only of a model server, and the
        // ledger reads empty ids as absent, as `ref_key` does.
        let key = RefKey {
            call_id: entry.model_call_id,
            server: entry.server,
            response_id: entry.response_id,
        };
        if usable(&key) && seen.insert(key) {
            found.keys.push(key);
        }
        let said = says(i)
            || ledger
                .index
                .matches(Some(key))
                .unwrap_or(&[])
                .iter()
                .any(|&j| says(j));
        found.active |= usable(&key) || said;
        found.hollow |= !said;
    }
    Some(found)
}

/// Whether a built turn's call says something: its response's answer, reasoning or tool calls
/// as `turn_content` splits them (Responses `output` items, Chat Completions `choices[0].message`,
/// Anthropic Messages `content` blocks), read by `says_something` and `has_tool_call` with the
/// thinking keys. A tool call counted by `turn_content` is one `has_tool_call` finds in the answer.
fn response_says(response: Option<Value<'_>>) -> bool {
    let Some(response) = response.and_then(Value::as_object) else {
        return false;
    };
    // Items of a list, split into reasoning and answer: the answer's items are tool calls too.
    let items_say = |items: doc::Array<'_>, reasoning: &dyn Fn(Object<'_>) -> bool| {
        items.iter().any(|item| match item.view() {
            Json::Object(map) if reasoning(map) => says_something(Some(item), true),
            Json::Object(_) => says_something(Some(item), true) || has_tool_call(Some(item)),
            _ => false,
        })
    };
    if let Some(Json::Array(output)) = response.get("output").map(Value::view) {
        return items_say(output, &|item| kind(item) == Some("reasoning"));
    }
    if let Some(Json::Array(choices)) = response.get("choices").map(Value::view) {
        if let Some(Json::Object(choice)) = choices.first().map(Value::view) {
            // `message or {}`: a message that is no object says nothing.
            let Some(message) = choice.get("message") else {
                return false;
            };
            let Json::Object(fields) = message.view() else {
                return false;
            };
            // `reasoning_content or reasoning`; the answer is the message without both.
            let first = fields.get("reasoning_content");
            let reasoning = if truthy(first) {
                first
            } else {
                fields.get("reasoning")
            };
            let answer_says = (kind(fields) == Some("redacted_thinking")
                && says_something(fields.get("data"), true))
                || SAYING_KEYS
                    .iter()
                    .chain(&["thinking"])
                    .filter(|key| !matches!(**key, "reasoning_content" | "reasoning"))
                    .any(|key| says_something(fields.get(key), true));
            return answer_says || says_something(reasoning, true) || has_tool_call(Some(message));
        }
    }
    if let Some(Json::Array(blocks)) = response.get("content").map(Value::view) {
        return items_say(blocks, &|block| {
            matches!(kind(block), Some("thinking" | "redacted_thinking"))
        });
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::parsed;

    fn says(response: serde_json::Value) -> bool {
        response_says(Some(parsed(&response.to_string())))
    }

    #[test]
    fn what_a_built_turn_says_in_each_dialect() {
        // Responses: text, reasoning and tool calls say something; whitespace does not (U+001C is
        // whitespace to Python's `str.isspace`, U+200B is not).
        assert!(says(
            json!({"output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}]})
        ));
        assert!(!says(
            json!({"output": [{"type": "message", "content": [{"type": "output_text", "text": " \u{1c}\u{3000}"}]}]})
        ));
        assert!(says(
            json!({"output": [{"type": "message", "content": [{"text": "\u{200b}"}]}]})
        ));
        assert!(says(
            json!({"output": [{"type": "reasoning", "summary": [{"text": "r"}]}]})
        ));
        assert!(says(
            json!({"output": [{"type": "function_call", "name": "f"}]})
        ));
        // A reasoning item is read for what it says, not for tool calls.
        assert!(!says(
            json!({"output": [{"type": "reasoning", "tool_calls": [1]}]})
        ));
        assert!(says(
            json!({"output": [{"type": "message", "tool_calls": [1]}]})
        ));
        assert!(!says(json!({"output": ["loose text", 1]})));
        // Chat: `reasoning_content or reasoning`, and the message without either.
        assert!(!says(
            json!({"choices": [{"message": {"reasoning_content": " ", "reasoning": "r"}}]})
        ));
        assert!(says(
            json!({"choices": [{"message": {"reasoning_content": "", "reasoning": "r"}}]})
        ));
        assert!(says(
            json!({"choices": [{"message": {"content": null, "tool_calls": [{}]}}]})
        ));
        assert!(!says(
            json!({"choices": [{"message": {"content": null, "tool_calls": []}}]})
        ));
        assert!(says(
            json!({"choices": [{"message": {"type": "redacted_thinking", "data": "x"}}]})
        ));
        assert!(!says(json!({"choices": [{"message": "hello"}]})));
        assert!(!says(json!({"choices": [{"text": "hello"}]})));
        // A first choice that is no object: the Anthropic blocks are read instead.
        assert!(says(
            json!({"choices": ["x"], "content": [{"type": "text", "text": "hi"}]})
        ));
        // Anthropic: thinking blocks are reasoning, tool_use a tool call.
        assert!(says(
            json!({"content": [{"type": "thinking", "thinking": "t"}]})
        ));
        assert!(!says(
            json!({"content": [{"type": "thinking", "thinking": " "}]})
        ));
        assert!(says(json!({"content": [{"type": "tool_use", "id": "t"}]})));
        // No dialect: nothing said, whatever the response holds.
        assert!(!says(json!({"output_text": "hello"})));
        assert!(!says(json!({"content": "hello"})));
        assert!(!response_says(None));
    }

    #[test]
    fn a_row_without_a_stated_trajectory_is_judged_on_its_built_turns() {
        let row = |response: serde_json::Value| -> Object<'static> {
            let row = json!({
                "ng_model_call_capture": {"calls": [{
                    "model_call_id": "a", "call_index": 0, "tokens_in": 3, "tokens_out": 2,
                    "model_ref": {"type": "responses_api_models", "name": "policy"},
                    "status_code": 200, "response": response,
                }]},
                "ng_agent_observations": {"source": "test", "records": [{
                    "kind": "agent_invocation", "invocation_id": "i", "conversation": [],
                    "model_calls": [{"model_call_id": "a", "model_ref": null, "response_id": null}],
                }]},
                "response": {"usage": {"input_tokens": 3, "output_tokens": 2}},
            });
            parsed(&row.to_string()).as_object().expect("an object")
        };
        let judge = |row: Object<'static>| judge(&Row::new("", row));
        let judged = judge(row(
            json!({"output": [{"type": "function_call", "name": "f"}]}),
        ))
        .expect("a healthy row");
        assert_eq!(judged.unobserved, 0);
        assert_eq!(judged.digest.successful_turn_calls, 1);
        assert!(judged.digest.policy_calls_observed);
        assert!(!judged.digest.stated_invalid);
        // A hollow turn is agent-turn-hollow's finding.
        assert!(judge(row(json!({"output": [{"type": "message", "content": []}]}))).is_none());
    }

    /// A row the schema family proves is judged the same whether the judge validates its
    /// sections again or takes the schema family's word (`Row::sections_valid`), on every line
    /// of the corpora.
    #[test]
    fn the_schema_familys_word_on_the_sections_judges_as_validating_them() {
        let mut taken = 0;
        for text in crate::corpus::lines() {
            let (_, Some(doc)) = crate::strict::scan_doc(&text) else {
                continue;
            };
            let Some(object) = doc.root().as_object() else {
                continue;
            };
            let shared = Row::new(&text, object);
            if !crate::families::schema::clean_row(&shared) {
                continue;
            }
            assert!(
                shared.sections_valid(),
                "the packaged schemas let the word be taken"
            );
            assert_eq!(judge(&shared), judge(&Row::new(&text, object)), "{text}");
            taken += 1;
        }
        assert!(taken >= 10, "{taken} rows");
    }
}
