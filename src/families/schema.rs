//! TL101-TL105 and TL107: the row and its sections against the packaged JSON Schemas, and values
//! NeMo Gym reads but never writes.
//!
//! The Python rules validate with jsonschema-rs, the Python binding of the `jsonschema` crate;
//! the core validates with the same crate at the same version (`JSONSCHEMA`), on the same
//! documents (`DOCUMENTS`, the files of `schemas/` compiled in, which a test compares with the
//! packaged ones), registered under their `$id`s and never fetching anything. So a value is valid
//! here exactly when it is valid there.
//!
//! A row is proved clean when Python could find nothing:
//! - every key of the row is valid against its property in `rollout-row.schema.json`. The row
//!   schema's object-level keywords are only `type: object`, `required` (the two indices, below)
//!   and `additionalProperties: true`, so that is the whole row valid, which is the envelope
//!   (`row-schema`) valid and each section valid against its own document (`capture-schema` ...
//!   `verifier-schema`), a section's property being a reference to that document (or to it or
//!   null, for the observations). A row schema with any other object-level keyword proves nothing;
//! - both indices present (else a `row-schema` warning) and written as NeMo Gym writes them (else
//!   `noncanonical-value`): the task index a non-negative integer or a string, the rollout index
//!   a non-negative integer;
//! - no `ng_trajectory` or `ng_perf` written as null (`noncanonical-value`);
//! - no scalar of the trajectory or observations that NeMo Gym's lax validation would coerce
//!   (`trajlint.contract.lax`): every such field absent, null or of the JSON type NeMo Gym
//!   writes. Such a value the schema may still accept (`12.0` is an integer to JSON Schema); the
//!   build then reports it as coerced, and `noncanonical-value` warns.

use crate::hash::HashMap;
use std::sync::OnceLock;

use jsonschema::{Registry, Validator};
use serde_json::{json, Map, Value};

use crate::doc::schema::DocJson;
use crate::doc::{Json, Object};
use crate::families::Row;

/// The version of the `jsonschema` crate (Cargo.toml pins it): that of the jsonschema-rs Python
/// package the Python rules validate with. The fast path proves this family only when they agree.
pub const JSONSCHEMA: &str = "0.61.2";

/// The packaged schemas, by file name, as compiled in.
pub const DOCUMENTS: [(&str, &str); 8] = [
    (
        "agent-observations.schema.json",
        include_str!("../../schemas/agent-observations.schema.json"),
    ),
    (
        "common.schema.json",
        include_str!("../../schemas/common.schema.json"),
    ),
    (
        "conversation-item.schema.json",
        include_str!("../../schemas/conversation-item.schema.json"),
    ),
    (
        "model-call-capture.schema.json",
        include_str!("../../schemas/model-call-capture.schema.json"),
    ),
    (
        "report.schema.json",
        include_str!("../../schemas/report.schema.json"),
    ),
    (
        "rollout-row.schema.json",
        include_str!("../../schemas/rollout-row.schema.json"),
    ),
    (
        "trajectory.schema.json",
        include_str!("../../schemas/trajectory.schema.json"),
    ),
    (
        "verifier-invocations.schema.json",
        include_str!("../../schemas/verifier-invocations.schema.json"),
    ),
];

const ROW: &str = "rollout-row.schema.json";
const INDICES: [&str; 2] = ["_ng_task_index", "_ng_rollout_index"];

/// A validator for each property of the row schema.
struct RowSchema {
    properties: HashMap<String, Validator<DocJson>>,
    /// A row valid here has its trajectory, observations and capture gaps valid on their own
    /// documents (`sections_follow`).
    sections_follow: bool,
}

/// The row schema's validators, built once; None when the documents hold something this proof
/// does not model (it then proves nothing).
fn row_schema() -> Option<&'static RowSchema> {
    static SCHEMA: OnceLock<Option<RowSchema>> = OnceLock::new();
    SCHEMA.get_or_init(build).as_ref()
}

fn build() -> Option<RowSchema> {
    let packaged = packaged()?;
    let (row_uri, row) = packaged.document(ROW)?;
    let properties = modelled_row(row)?;
    let mut validators = HashMap::default();
    for name in properties.keys() {
        // A reference into the row schema, as the Python rules make one for a part of a schema.
        let part = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": format!("{row_uri}#/properties/{name}"),
        });
        validators.insert(name.clone(), packaged.validator(&part)?);
    }
    let capture = packaged
        .document(CAPTURE_DOCUMENT)
        .map(|(_, document)| document);
    Some(RowSchema {
        properties: validators,
        sections_follow: capture.is_some_and(|capture| sections_follow(properties, capture)),
    })
}

/// The packaged documents, parsed, and the registry of every one under its `$id`, made once
/// for the families that validate (this one and health): parsing the documents and preparing
/// the registry is a third of what compiling the validators costs a process on its first row.
pub(crate) struct Packaged {
    /// (file name, `$id`, document) of each of `DOCUMENTS`.
    documents: Vec<(&'static str, String, Value)>,
    registry: Registry<'static>,
}

impl Packaged {
    /// The `$id` and the document of the packaged file `name`.
    pub(crate) fn document(&self, name: &str) -> Option<(&str, &Value)> {
        self.documents
            .iter()
            .find(|(file, _, _)| *file == name)
            .map(|(_, uri, document)| (uri.as_str(), document))
    }

    /// A validator of `schema`, as `trajlint.contract.validate` makes one for jsonschema-rs: its
    /// references resolved in the registry, offline.
    pub(crate) fn validator(&self, schema: &Value) -> Option<Validator<DocJson>> {
        jsonschema::options_for::<DocJson>()
            .with_registry(&self.registry)
            .offline()
            .build(schema)
            .ok()
    }
}

/// `Packaged`, or None when a document does not parse or register (nothing is then proved).
pub(crate) fn packaged() -> Option<&'static Packaged> {
    static PACKAGED: OnceLock<Option<Packaged>> = OnceLock::new();
    PACKAGED
        .get_or_init(|| {
            let mut documents = Vec::with_capacity(DOCUMENTS.len());
            for (name, text) in DOCUMENTS {
                let document: Value = serde_json::from_str(text).ok()?;
                let uri = document.get("$id")?.as_str()?.to_owned();
                documents.push((name, uri, document));
            }
            let registry = Registry::new()
                .extend(
                    documents
                        .iter()
                        .map(|(_, uri, document)| (uri.clone(), document.clone())),
                )
                .ok()?
                .prepare()
                .ok()?;
            Some(Packaged {
                documents,
                registry,
            })
        })
        .as_ref()
}

const CAPTURE_DOCUMENT: &str = "model-call-capture.schema.json";

/// Whether the row schema says of the trajectory, the observations and the capture exactly what
/// their own documents say (a reference to the document, with annotations beside it; the
/// observations may also be null), and the capture document of its gaps that each is an
/// `ObservationGap`: then a row whose properties all validate here has each of these valid on
/// the documents the health family validates them with (`Row::sections_valid`).
fn sections_follow(properties: &Map<String, Value>, capture: &Value) -> bool {
    const ANNOTATIONS: [&str; 3] = ["description", "title", "default"];
    let refers = |schema: &Value, target: &str| {
        schema.as_object().is_some_and(|schema| {
            schema.get("$ref") == Some(&json!(target))
                && schema
                    .keys()
                    .all(|key| key == "$ref" || ANNOTATIONS.contains(&key.as_str()))
        })
    };
    let nullable = |schema: &Value, target: &str| {
        schema.as_object().is_some_and(|schema| {
            schema
                .get("anyOf")
                .and_then(Value::as_array)
                .is_some_and(|options| {
                    options.len() == 2
                        && refers(&options[0], target)
                        && options[1] == json!({"type": "null"})
                })
                && schema
                    .keys()
                    .all(|key| key == "anyOf" || ANNOTATIONS.contains(&key.as_str()))
        })
    };
    let gaps = capture
        .pointer("/properties/gaps/items")
        .is_some_and(|items| refers(items, "common.schema.json#/$defs/ObservationGap"));
    properties
        .get("ng_trajectory")
        .is_some_and(|s| refers(s, "trajectory.schema.json"))
        && properties
            .get("ng_agent_observations")
            .is_some_and(|s| nullable(s, "agent-observations.schema.json"))
        && properties
            .get("ng_model_call_capture")
            .is_some_and(|s| refers(s, CAPTURE_DOCUMENT))
        && gaps
}

/// `clean`, and, when it proves the row and its schema lets it, the sections' validity kept for
/// the health family, which would validate them again.
pub fn clean_row(row: &Row<'_>) -> bool {
    let proved = clean(row.doc);
    if proved && row_schema().is_some_and(|schema| schema.sections_follow) {
        row.sections_proved_valid();
    }
    proved
}

/// The row schema's properties, when what it says of the row as a whole is what `clean` checks
/// key by key: an object, any other key allowed, at most the two indices required.
fn modelled_row(row: &Value) -> Option<&Map<String, Value>> {
    let row = row.as_object()?;
    for (keyword, value) in row {
        let modelled = match keyword.as_str() {
            "$schema" => value == "https://json-schema.org/draft/2020-12/schema",
            "$id" | "$defs" | "title" | "description" | "properties" => true,
            "type" => value == "object",
            "additionalProperties" => value == &Value::Bool(true),
            "required" => value
                .as_array()
                .is_some_and(|keys| keys.iter().all(|key| INDICES.iter().any(|i| key == i))),
            _ => false,
        };
        if !modelled {
            return None;
        }
    }
    let properties = row.get("properties")?.as_object()?;
    // Property names go into a JSON pointer and a URI fragment as they are.
    properties
        .keys()
        .all(|name| {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        })
        .then_some(properties)
}

pub fn clean(row: Object<'_>) -> bool {
    let Some(schema) = row_schema() else {
        return false;
    };
    canonical_indices(row)
        && !row.get("ng_trajectory").is_some_and(|v| v.is_null())
        && !row.get("ng_perf").is_some_and(|v| v.is_null())
        && !lax::coerced(row)
        && row.iter().all(|(key, value)| {
            schema
                .properties
                .get(key)
                .is_none_or(|validator| validator.is_valid(value))
        })
}

/// Both indices present, each as NeMo Gym writes it (`trajlint.check.noncanonical._index`).
fn canonical_indices(row: Object<'_>) -> bool {
    let task = match row.get("_ng_task_index").map(|v| v.view()) {
        Some(Json::Number(n)) => n.is_u64(),
        Some(Json::String(_)) => true,
        _ => false,
    };
    let rollout = row.get("_ng_rollout_index").is_some_and(|v| v.is_u64());
    task && rollout
}

/// The scalars NeMo Gym's lax validation would coerce (`trajlint.contract.lax`).
mod lax {
    use crate::doc::{Json, Object, Value};

    #[derive(Clone, Copy)]
    enum Kind {
        Integer,
        Number,
        Boolean,
    }
    use Kind::{Boolean, Integer, Number};

    type Fields = &'static [(&'static str, Kind)];

    // `trajlint.contract.lax.SCALARS`, model by model (a test derives rows from that table).
    const AGENT_INVOCATION: Fields = &[("duration_ms", Number)];
    const TOOL_CALL_OBSERVATION: Fields = &[
        ("started_at", Number),
        ("completed_at", Number),
        ("duration_ms", Number),
    ];
    const SANDBOX_OBSERVATION: Fields = &[
        ("exit_code", Integer),
        ("wall_time_s", Number),
        ("cpu_time_s", Number),
        ("peak_memory_mib", Number),
    ];
    const CONTEXT_COMPACTION_OBSERVATION: Fields = &[
        ("observed_at", Number),
        ("tokens_before", Integer),
        ("tokens_after", Integer),
    ];
    const TRAJECTORY_TURN: Fields = &[
        ("turn_no", Integer),
        ("timestamp", Number),
        ("resolved", Boolean),
        ("step_count", Integer),
    ];
    const TRAJECTORY_MODEL_CALL: Fields = &[
        ("started_at", Number),
        ("completed_at", Number),
        ("duration_ms", Number),
    ];
    const TRAJECTORY_RESPONSE_METADATA: Fields = &[
        ("status_code", Integer),
        ("upstream_attempted", Boolean),
        ("upstream_status_code", Integer),
        ("latency_ttft_ms", Number),
    ];
    const TRAJECTORY_TOKEN_STATS: Fields = &[
        ("prompt_tokens", Integer),
        ("completion_tokens", Integer),
        ("reasoning_tokens", Integer),
        ("total_tokens", Integer),
        ("cached_tokens", Integer),
    ];
    const TRAJECTORY_TOOL_CALL: Fields = &[
        ("started_at", Number),
        ("completed_at", Number),
        ("duration_ms", Number),
    ];

    const RECORD_MODELS: [(&str, Fields); 4] = [
        ("agent_invocation", AGENT_INVOCATION),
        ("tool_call", TOOL_CALL_OBSERVATION),
        ("sandbox", SANDBOX_OBSERVATION),
        ("context_compaction", CONTEXT_COMPACTION_OBSERVATION),
    ];
    const STATED_MODELS: [(&str, Fields); 4] = [
        ("invocations", AGENT_INVOCATION),
        ("turns", TRAJECTORY_TURN),
        ("model_calls", TRAJECTORY_MODEL_CALL),
        ("tool_calls", TRAJECTORY_TOOL_CALL),
    ];
    const CALL_PARTS: [(&str, Fields); 2] = [
        ("response_metadata", TRAJECTORY_RESPONSE_METADATA),
        ("token_stats", TRAJECTORY_TOKEN_STATS),
    ];

    /// Whether the value is of the JSON type NeMo Gym writes for `kind` (a boolean is no
    /// number, a float no integer: Python's `type(value) in written`).
    fn written(value: Value<'_>, kind: Kind) -> bool {
        match (value.view(), kind) {
            (Json::Number(n), Integer) => n.is_u64() || n.is_i64(),
            (Json::Number(_), Number) | (Json::Bool(_), Boolean) => true,
            _ => false,
        }
    }

    fn odd(item: Object<'_>, fields: Fields) -> bool {
        fields.iter().any(|(name, kind)| {
            item.get(name)
                .is_some_and(|value| !value.is_null() && !written(value, *kind))
        })
    }

    fn objects<'a>(section: Object<'a>, part: &str) -> impl Iterator<Item = Object<'a>> {
        crate::doc::items(section.get(part)).filter_map(Value::as_object)
    }

    /// Whether the build would find a value NeMo Gym reads only by coercing it (or one it
    /// rejects: either way the row is not proved here).
    pub fn coerced(row: Object<'_>) -> bool {
        if let Some(stated) = row.get("ng_trajectory").and_then(Value::as_object) {
            for (part, fields) in STATED_MODELS {
                for item in objects(stated, part) {
                    if odd(item, fields) {
                        return true;
                    }
                    if part == "model_calls" {
                        for (sub, sub_fields) in CALL_PARTS {
                            if item
                                .get(sub)
                                .and_then(Value::as_object)
                                .is_some_and(|inner| odd(inner, sub_fields))
                            {
                                return true;
                            }
                        }
                    }
                }
            }
        }
        if let Some(bundle) = row.get("ng_agent_observations").and_then(Value::as_object) {
            for record in objects(bundle, "records") {
                let model = match record.get("kind").and_then(Value::as_str) {
                    Some(kind) => RECORD_MODELS
                        .iter()
                        .find(|(name, _)| *name == kind)
                        .map(|(_, fields)| *fields),
                    _ => None,
                };
                if model.is_some_and(|fields| odd(record, fields)) {
                    return true;
                }
            }
        }
        false
    }
}
