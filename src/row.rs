//! One rollout row in the core: parsed once, its evidence named, and the families of rules it is
//! proved clean of.
//!
//! The core never explains a defect. It proves a row clean of a family of rules, or it says
//! nothing and the Python path (the reference) checks the row and explains what it finds. A
//! family that is unsure answers "not proved": that costs speed, never correctness.

use serde_json::{Map, Value};

use crate::families;
use crate::strict;
use crate::value;

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

/// Lines longer than this are never parsed here: a parsed row takes up to ~40 times its line in
/// memory (an array of small numbers), and the Python path that takes the line instead holds
/// its own parse alone, never both. Rollout rows are tens to hundreds of kilobytes.
pub const MAX_PROVED_LINE: usize = 8 * 1024 * 1024;

/// The row of a line that orjson reads exactly as written (no repeated key, no integer beyond 64
/// bits) and that is a JSON object; None for any other line, and for a line over
/// `MAX_PROVED_LINE` bytes.
pub fn parse(line: &[u8]) -> Option<Map<String, Value>> {
    if line.len() > MAX_PROVED_LINE {
        return None;
    }
    // UTF-8 is checked once, for the scan and the parse both.
    let text = std::str::from_utf8(line).ok()?;
    if strict::scan_text(text) != 0 {
        return None;
    }
    match value::from_str(text) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// The evidence the row holds: a section present and not null, and model calls to judge.
pub fn evidence(row: &Map<String, Value>) -> u32 {
    let mut bits = 0;
    for (key, bit) in [
        ("ng_model_call_capture", CAPTURE),
        ("ng_agent_observations", OBSERVATIONS),
        ("ng_trajectory", TRAJECTORY),
        ("ng_verifier_invocations", VERIFIERS),
    ] {
        if !matches!(row.get(key), None | Some(Value::Null)) {
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

fn holds_calls(row: &Map<String, Value>, section: &str, part: &str) -> bool {
    matches!(
        row.get(section).and_then(|s| s.get(part)),
        Some(Value::Array(items)) if !items.is_empty()
    )
}

/// The JSON text of the row's identity keys that it holds, in `IDENTITY_KEYS` order; None when
/// some identity value holds a negative zero. serde_json reads both `-0` and `-0.0` as the float
/// -0.0, while orjson reads `-0` as the integer 0, and the two name different rollouts: the text
/// no longer tells which the line wrote, so such a row is not proved and the Python path reads it.
pub fn identity(row: &Map<String, Value>) -> Option<Vec<(&'static str, String)>> {
    let mut pairs = Vec::new();
    for key in IDENTITY_KEYS {
        if let Some(value) = row.get(key) {
            if holds_negative_zero(value) {
                return None;
            }
            pairs.push((key, value.to_string()));
        }
    }
    Some(pairs)
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
/// section an object that has the key), as (section, key, text); None when one holds a negative
/// zero (see `identity`).
pub fn extracted(
    row: &Map<String, Value>,
    wanted: u32,
) -> Option<Vec<(&'static str, &'static str, String)>> {
    let mut parts = Vec::new();
    for (section, key, bit) in EXTRACTS {
        if wanted & bit == 0 {
            continue;
        }
        if let Some(value) = row
            .get(section)
            .and_then(Value::as_object)
            .and_then(|s| s.get(key))
        {
            if holds_negative_zero(value) {
                return None;
            }
            parts.push((section, key, value.to_string()));
        }
    }
    Some(parts)
}

/// Whether a float -0.0 is anywhere in `value`. Iterative: no value can overflow the stack.
fn holds_negative_zero(value: &Value) -> bool {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Number(number)
                if number
                    .as_f64()
                    .is_some_and(|x| x == 0.0 && x.is_sign_negative()) =>
            {
                return true;
            }
            Value::Array(items) => pending.extend(items),
            Value::Object(members) => pending.extend(members.values()),
            _ => {}
        }
    }
    false
}

/// The families of `wanted` (bits of `families`) that the row is proved clean of.
pub fn clean_families(row: &Map<String, Value>, wanted: u32) -> u32 {
    let mut clean = 0;
    for (bit, proves) in families::ALL {
        if wanted & bit != 0 && proves(row) {
            clean |= bit;
        }
    }
    clean
}
