//! TL301-TL304 (`trajlint/check/rules/counts.py`, `trajlint/check/countfields.py`): every count,
//! duration and latency of the row is a number within its bound, written as the JSON integer a
//! count must be; no total is below its parts; nothing completes before it starts.
//!
//! Every rule of the family finds at least one thing on a row exactly when one item of the walks
//! below breaks its check (the rules only merge a copy with its source, never drop both), so the
//! proof checks item by item and needs no pairing. What `non-integer-count` reports of a count
//! NeMo Gym's lax validation coerces depends on the build (its coerced pointers): the proof does
//! not model it, so any such value (a float, a boolean or a string where a count belongs) is not
//! proved.

use crate::doc::{items, Json, Number, Object, Value};

/// One count field (`countfields.Count`): its name, whether it counts things (an integer), and
/// its lower bound.
struct Field {
    name: &'static str,
    integer: bool,
    minimum: i64,
}

const fn count(name: &'static str) -> Field {
    Field {
        name,
        integer: true,
        minimum: 0,
    }
}

const fn measure(name: &'static str) -> Field {
    Field {
        name,
        integer: false,
        minimum: 0,
    }
}

const CAPTURE_CALL: [Field; 9] = [
    count("call_index"),
    count("cache_creation_tokens"),
    count("tokens_in"),
    count("tokens_out"),
    count("tokens_reasoning"),
    count("tokens_total"),
    count("cached_tokens"),
    measure("latency_total_ms"),
    measure("latency_ttft_ms"),
];
const CAPTURE_METRICS: [Field; 7] = [
    count("tokens_in"),
    count("tokens_out"),
    count("tokens_reasoning"),
    count("tokens_total"),
    count("cached_tokens"),
    count("num_calls"),
    measure("latency_total_ms"),
];
const DURATION: [Field; 1] = [measure("duration_ms")];
const SANDBOX: [Field; 3] = [
    measure("wall_time_s"),
    measure("cpu_time_s"),
    measure("peak_memory_mib"),
];
const COMPACTION: [Field; 2] = [count("tokens_before"), count("tokens_after")];
const TURN: [Field; 2] = [
    Field {
        name: "turn_no",
        integer: true,
        minimum: 1,
    },
    count("step_count"),
];
const TOKEN_STATS: [Field; 5] = [
    count("prompt_tokens"),
    count("completion_tokens"),
    count("reasoning_tokens"),
    count("total_tokens"),
    count("cached_tokens"),
];
const TTFT: [Field; 1] = [measure("latency_ttft_ms")];

const CAPTURE_TOTAL: [&str; 3] = ["tokens_in", "tokens_out", "tokens_total"];
const STATS_TOTAL: [&str; 3] = ["prompt_tokens", "completion_tokens", "total_tokens"];

pub fn clean(row: Object<'_>) -> bool {
    capture_clean(row) && observations_clean(row) && trajectory_clean(row) && verifiers_clean(row)
}

fn capture_clean(row: Object<'_>) -> bool {
    let Some(capture) = row.get("ng_model_call_capture").and_then(Value::as_object) else {
        return true;
    };
    let calls_clean = objects(capture.get("calls"))
        .all(|call| item_clean(call, &CAPTURE_CALL, Some(&CAPTURE_TOTAL), true));
    calls_clean
        && capture
            .get("metrics")
            .and_then(Value::as_object)
            .is_none_or(|metrics| {
                item_clean(metrics, &CAPTURE_METRICS, Some(&CAPTURE_TOTAL), false)
            })
}

fn observations_clean(row: Object<'_>) -> bool {
    let Some(observations) = row.get("ng_agent_observations").and_then(Value::as_object) else {
        return true;
    };
    objects(observations.get("records")).all(|record| {
        let Some(kind) = record.get("kind").and_then(Value::as_str) else {
            return true;
        };
        match kind {
            "agent_invocation" => counts_clean(record, &DURATION),
            "tool_call" => item_clean(record, &DURATION, None, true),
            "sandbox" => counts_clean(record, &SANDBOX),
            "context_compaction" => counts_clean(record, &COMPACTION),
            _ => true,
        }
    })
}

fn trajectory_clean(row: Object<'_>) -> bool {
    let Some(stated) = row.get("ng_trajectory").and_then(Value::as_object) else {
        return true;
    };
    objects(stated.get("invocations")).all(|invocation| counts_clean(invocation, &DURATION))
        && objects(stated.get("turns")).all(|turn| counts_clean(turn, &TURN))
        && objects(stated.get("model_calls")).all(|call| {
            item_clean(call, &DURATION, None, true)
                && call
                    .get("response_metadata")
                    .and_then(Value::as_object)
                    .is_none_or(|metadata| counts_clean(metadata, &TTFT))
                && call
                    .get("token_stats")
                    .and_then(Value::as_object)
                    .is_none_or(|stats| item_clean(stats, &TOKEN_STATS, Some(&STATS_TOTAL), false))
        })
        && objects(stated.get("tool_calls")).all(|tool| item_clean(tool, &DURATION, None, true))
}

fn verifiers_clean(row: Object<'_>) -> bool {
    objects(row.get("ng_verifier_invocations"))
        .all(|verifier| item_clean(verifier, &DURATION, None, true))
}

/// The objects of a list (`walk.items`: anything else in it, or anything but a list, is skipped).
fn objects(list: Option<Value<'_>>) -> impl Iterator<Item = Object<'_>> {
    items(list).filter_map(Value::as_object)
}

/// `counts_clean`, then `parts_within_total` of the names of `total` and, when `times`,
/// `times_in_order` of `started_at` and `completed_at`, all read in one walk of the item's
/// members: a document holds no repeated key, so each name the walk meets is the member `get`
/// finds, and a name it never meets is one `get` finds nothing of. A lookup a name walked the
/// members once a name.
fn item_clean(item: Object<'_>, fields: &[Field], total: Option<&[&str; 3]>, times: bool) -> bool {
    // The lengths of the names looked for, one bit each (all are under 64 bytes): most members
    // are told apart by length alone, without comparing a name.
    let bit = |name: &str| 1u64 << name.len();
    let mut lengths = fields.iter().fold(0, |bits, field| bits | bit(field.name));
    if let Some(names) = total {
        lengths |= names.iter().fold(0, |bits, &name| bits | bit(name));
    }
    if times {
        lengths |= bit("started_at") | bit("completed_at");
    }
    let mut parts = [None; 3];
    let (mut started, mut completed) = (None, None);
    for (key, value) in item {
        if lengths.checked_shr(key.len() as u32).unwrap_or(0) & 1 == 0 {
            continue;
        }
        if let Some(field) = fields.iter().find(|field| field.name == key) {
            if !count_clean(value, field) {
                return false;
            }
        }
        if let Some(at) = total.and_then(|names| names.iter().position(|&name| name == key)) {
            parts[at] = Some(value);
        }
        if times {
            match key {
                "started_at" => started = Some(value),
                "completed_at" => completed = Some(value),
                _ => {}
            }
        }
    }
    (total.is_none() || parts_within_total(parts.map(|part| part.and_then(Value::as_u64))))
        && (!times || times_in_order(started, completed))
}

fn counts_clean(item: Object<'_>, fields: &[Field]) -> bool {
    fields.iter().all(|field| match item.get(field.name) {
        None => true,
        Some(value) => count_clean(value, field),
    })
}

/// Neither `negative-count` nor `non-integer-count` reports the value (`count_defects`).
fn count_clean(value: Value<'_>, field: &Field) -> bool {
    match value.view() {
        Json::Number(number) => {
            if let Some(unsigned) = number.as_u64() {
                field.minimum <= 0 || unsigned >= field.minimum as u64
            } else if let Some(signed) = number.as_i64() {
                signed >= field.minimum
            } else {
                // A float: `non-integer-count` for a count (unless the build coerced it, which
                // is not modelled), else only its bound. The bounds are 0 and 1, exact as f64.
                // (serde_json reads `-0` as a float where orjson reads an integer: a count
                // written so is left to Python, a measure is 0 either way.)
                !field.integer && number.as_f64().is_some_and(|f| f >= field.minimum as f64)
            }
        }
        // A boolean or a numeric string is lax for a count (and a string is not modelled);
        // for a measure, neither is a number, so neither rule reads it.
        Json::Bool(_) | Json::String(_) => !field.integer,
        // null (no value) and arrays or objects (`lax_kind` is None, never negative).
        Json::Null | Json::Array(_) | Json::Object(_) => true,
    }
}

/// `token-total-inconsistent`: no total below input + output when all three are usable counts
/// (JSON integers >= 0; `values.nonnegative_int`).
fn parts_within_total(parts: [Option<u64>; 3]) -> bool {
    match (parts[0], parts[1], parts[2]) {
        (Some(tokens_in), Some(tokens_out), Some(total)) => {
            u128::from(total) >= u128::from(tokens_in) + u128::from(tokens_out)
        }
        _ => true,
    }
}

/// `time-reversed`: not completed before started, when both are numbers (not booleans).
fn times_in_order(started: Option<Value<'_>>, completed: Option<Value<'_>>) -> bool {
    match (
        started.and_then(Value::as_number),
        completed.and_then(Value::as_number),
    ) {
        (Some(started), Some(completed)) => not_before(completed, started).unwrap_or(false),
        _ => true,
    }
}

/// Whether `a >= b` as Python compares the numbers (exactly, an int with a float too), or None
/// when the answer would need more than this models.
fn not_before(a: Number, b: Number) -> Option<bool> {
    match (exact_int(a), exact_int(b)) {
        (Some(x), Some(y)) => Some(x >= y),
        (None, None) => Some(a.as_f64()? >= b.as_f64()?),
        (Some(x), None) => Some(small_float(x)? >= b.as_f64()?),
        (None, Some(y)) => Some(a.as_f64()? >= small_float(y)?),
    }
}

fn exact_int(number: Number) -> Option<i128> {
    number
        .as_i64()
        .map(i128::from)
        .or_else(|| number.as_u64().map(i128::from))
}

/// An integer as the f64 that equals it, when there is one this cheap to be sure of (|x| <= 2^53).
fn small_float(x: i128) -> Option<f64> {
    const LIMIT: i128 = 1 << 53;
    (-LIMIT..=LIMIT).contains(&x).then_some(x as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proves(json: &str) -> bool {
        crate::families::proves(clean, json)
    }

    fn turn(fields: &str) -> String {
        format!(r#"{{"ng_trajectory": {{"turns": [{{{fields}}}]}}}}"#)
    }

    fn verifier(fields: &str) -> String {
        format!(r#"{{"ng_verifier_invocations": [{{{fields}}}]}}"#)
    }

    #[test]
    fn counts_are_integers_within_their_bounds() {
        assert!(proves(&turn(r#""turn_no": 1, "step_count": 0"#)));
        assert!(!proves(&turn(r#""turn_no": 0"#)));
        assert!(!proves(&turn(r#""step_count": -1"#)));
        assert!(!proves(&turn(r#""step_count": 1.0"#)));
        assert!(!proves(&turn(r#""step_count": true"#)));
        assert!(proves(&turn(r#""step_count": null"#)));
        assert!(proves(&turn(r#""step_count": [-1]"#)));
    }

    /// `-0` reads as a float: a count written so is left to Python; a measure is 0 either way.
    #[test]
    fn negative_zero() {
        assert!(!proves(&turn(r#""step_count": -0"#)));
        assert!(proves(&verifier(r#""duration_ms": -0"#)));
        assert!(proves(&verifier(
            r#""duration_ms": -0.0, "started_at": 0, "completed_at": -0"#
        )));
        assert!(!proves(&verifier(r#""duration_ms": -0.5"#)));
    }

    #[test]
    fn totals_never_overflow() {
        let metrics = |tokens_out: &str| {
            format!(
                r#"{{"ng_model_call_capture": {{"metrics": {{"tokens_in": 18446744073709551615, "tokens_out": {tokens_out}, "tokens_total": 18446744073709551615}}}}}}"#
            )
        };
        assert!(!proves(&metrics("1")));
        assert!(proves(&metrics("0")));
    }

    #[test]
    fn times_compare_as_python_compares_them() {
        let times = |started: &str, completed: &str| {
            verifier(&format!(
                r#""started_at": {started}, "completed_at": {completed}"#
            ))
        };
        assert!(proves(&times("1", "1.0")));
        assert!(!proves(&times("2", "1.5")));
        assert!(proves(&times(
            "-9223372036854775808",
            "18446744073709551615"
        )));
        // Beyond 2^53 an integer and a float are not compared here: left to Python.
        assert!(!proves(&times("9007199254740993", "9007199254740992.0")));
        assert!(proves(&times("true", "false"))); // booleans are no times
    }
}
