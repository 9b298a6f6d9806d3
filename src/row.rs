//! One rollout row in the core: parsed once, its evidence named, and the families of rules it is
//! proved clean of.
//!
//! The core never explains a defect. It proves a row clean of a family of rules, or it says
//! nothing and the Python path (the reference) checks the row and explains what it finds. A
//! family that is unsure answers "not proved": that costs speed, never correctness.

use std::cell::Cell;

use crate::doc::{Json, Object, Value};
use crate::families::{self, Row};
use crate::strict;

/// The top-level keys the run-level rules read of a row proved clean (its identity): the core
/// hands their JSON text back, so the Python path derives the identity from them exactly as it
/// does from a whole row.
pub const IDENTITY_KEYS: [&str; 9] = [
    "_ng_task_index",
    "_ng_rollout_index",
    "_ng_rollout_id",
    "_ng_attempt_index",
    "_ng_task_id",
    "task_id",
    "problem_id",
    "instance_id",
    "stage_index",
];

/// Evidence bits, in the order of `trajlint.check.fast.EVIDENCE`.
pub const CAPTURE: u32 = 1;
pub const OBSERVATIONS: u32 = 2;
pub const TRAJECTORY: u32 = 4;
pub const VERIFIERS: u32 = 8;
pub const MODEL_CALLS: u32 = 16;

/// Lines longer than this are never parsed here: a document takes one 32-byte node a value, up
/// to ~16 times its line (an array of one-digit numbers), and the Python path that takes the line instead holds
/// its own parse alone, never both. Rollout rows are tens to hundreds of kilobytes.
pub const MAX_PROVED_LINE: usize = 8 * 1024 * 1024;

/// `f` of the row of a line that orjson reads exactly as written (no repeated key, no integer
/// beyond 64 bits), that is a JSON object and that nests no deeper than serde_json reads; None
/// for any other line, and for a line over `MAX_PROVED_LINE` bytes.
pub fn with_row<T>(line: &[u8], f: impl FnOnce(&Row<'_>) -> T) -> Option<T> {
    if line.len() > MAX_PROVED_LINE {
        return None;
    }
    let text = std::str::from_utf8(line).ok()?;
    // The scan's vectors are this thread's, from row to row; taken out of the cell while in use,
    // so a nested call (there is none) would only start from empty vectors.
    let mut spare = SPARE.take();
    let (_, doc) = strict::scan_doc_reusing(text, &mut spare);
    let result = doc
        .as_ref()
        .and_then(|doc| Some(f(&Row::new(text, doc.root().as_object()?))));
    if let Some(doc) = doc {
        spare.recycle(doc);
    }
    SPARE.set(spare.trimmed());
    result
}

thread_local! {
    static SPARE: Cell<strict::Spare> = Cell::new(strict::Spare::default());
}

/// The evidence the row holds: a section present and not null, and model calls to judge.
pub fn evidence(row: Object<'_>) -> u32 {
    let mut bits = 0;
    for (key, bit) in [
        ("ng_model_call_capture", CAPTURE),
        ("ng_agent_observations", OBSERVATIONS),
        ("ng_trajectory", TRAJECTORY),
        ("ng_verifier_invocations", VERIFIERS),
    ] {
        if row.get(key).is_some_and(|v| !v.is_null()) {
            bits |= bit;
        }
    }
    if holds_calls(row, "ng_model_call_capture", "calls")
        || holds_calls(row, "ng_trajectory", "model_calls")
    {
        bits |= MODEL_CALLS;
    }
    bits
}

fn holds_calls(row: Object<'_>, section: &str, part: &str) -> bool {
    row.get(section)
        .and_then(|s| s.get(part))
        .and_then(Value::as_array)
        .is_some_and(|items| !items.is_empty())
}

/// The JSON text of the row's identity keys that it holds, in `IDENTITY_KEYS` order: each value
/// as the line writes it, so that the Python path reads it exactly as it reads the whole line.
pub fn identity(row: Object<'_>) -> Vec<(&'static str, String)> {
    IDENTITY_KEYS
        .iter()
        .filter_map(|&key| Some((key, row.get(key)?.raw().to_owned())))
        .collect()
}

/// Parts of a row that the run still reads of a line proved clean of every other rule: (section,
/// key, the bit of `extracted`'s `wanted` asking for it). TL503 lists the gaps the row carries (in
/// `trajlint.row.walk.gaps` order); the health report's verdict line names the stated rollout id.
pub const EXTRACTS: [(&str, &str, u32); 4] = [
    ("ng_agent_observations", "gaps", GAPS),
    ("ng_model_call_capture", "gaps", GAPS),
    ("ng_trajectory", "gaps", GAPS),
    ("ng_trajectory", "rollout_id", STATED_ID),
];

/// Bits of `extracted`'s `wanted`.
pub const GAPS: u32 = 1;
pub const STATED_ID: u32 = 2;

/// The JSON text of each part of `EXTRACTS` that `wanted` asks for and the row holds (its
/// section an object that has the key), as (section, key, text), as the line writes it.
pub fn extracted(row: Object<'_>, wanted: u32) -> Vec<(&'static str, &'static str, String)> {
    let mut parts = Vec::new();
    for (section, key, bit) in EXTRACTS {
        if wanted & bit == 0 {
            continue;
        }
        let section_value = row.get(section).map(Value::view);
        if let Some(Json::Object(members)) = section_value {
            if let Some(value) = members.get(key) {
                parts.push((section, key, value.raw().to_owned()));
            }
        }
    }
    parts
}

/// The families of `wanted` (bits of `families`) that the row is proved clean of.
pub fn clean_families(row: &Row<'_>, wanted: u32) -> u32 {
    let mut clean = 0;
    for (bit, proves) in families::ALL {
        if wanted & bit != 0 && proves(row) {
            clean |= bit;
        }
    }
    clean
}
