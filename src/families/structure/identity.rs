//! TL406: the stated trajectory's and the capture's ids against the identity the row's keys
//! derive (trajlint/builder/identity.py `rollout_identity`).
//!
//! `Err(())` is "not modelled": a key whose `str()` (`python_str`) this module does not write
//! exactly as Python does (a float, an array, an object), or an attempt index given as a
//! string. The proof then fails and Python decides.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::{integer, string, CAPTURE, STATED};

type Modelled<T> = Result<T, ()>;

/// True only when TL406 finds nothing: no compared id is a string, or the row derives no
/// identity, or each string id equals the derived one.
pub fn matches(row: &Map<String, Value>) -> bool {
    let mut found: Vec<(bool, &str)> = Vec::with_capacity(3); // (is the task id, the id)
    if let Some(Value::Object(stated)) = row.get(STATED) {
        found.extend(string(stated, "task_id").map(|id| (true, id)));
        found.extend(string(stated, "rollout_id").map(|id| (false, id)));
    }
    if let Some(Value::Object(capture)) = row.get(CAPTURE) {
        found.extend(string(capture, "rollout_id").map(|id| (false, id)));
    }
    if found.is_empty() {
        return true;
    }
    match rollout_identity(row) {
        Err(()) => false,
        Ok(None) => true,
        Ok(Some((task, rollout))) => found.iter().all(|&(is_task, id)| {
            id == if is_task {
                task.as_ref()
            } else {
                rollout.as_str()
            }
        }),
    }
}

/// `python_str` of the values whose `str()` is written here exactly.
fn python_str(value: &Value) -> Modelled<Cow<'_, str>> {
    match value {
        Value::String(s) => Ok(Cow::Borrowed(s)),
        Value::Bool(true) => Ok(Cow::Borrowed("True")),
        Value::Bool(false) => Ok(Cow::Borrowed("False")),
        Value::Null => Ok(Cow::Borrowed("None")),
        Value::Number(_) => match integer(Some(value)) {
            Some(Some(n)) => Ok(Cow::Owned(n.to_string())),
            _ => Err(()),
        },
        Value::Array(_) | Value::Object(_) => Err(()),
    }
}

fn present<'a>(row: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    row.get(key).filter(|value| !value.is_null())
}

fn task_id(row: &Map<String, Value>) -> Modelled<Option<Cow<'_, str>>> {
    for key in ["_ng_task_id", "task_id", "problem_id", "instance_id"] {
        if let Some(value) = present(row, key) {
            return python_str(value).map(Some);
        }
    }
    match row.get("_ng_task_index") {
        Some(index) => python_str(index).map(Some),
        None => Ok(None),
    }
}

/// `-a{n}` for a retry, "" for the first attempt, None when the attempt index is unusable.
fn attempt_suffix(row: &Map<String, Value>) -> Modelled<Option<String>> {
    let attempt = match row.get("_ng_attempt_index") {
        None | Some(Value::Null) => return Ok(Some(String::new())),
        Some(Value::Bool(b)) => i128::from(*b),
        Some(value @ Value::Number(_)) => match integer(Some(value)) {
            Some(Some(n)) => n,
            _ => return Err(()), // a float: Python takes an integral one as an int
        },
        Some(Value::Array(_) | Value::Object(_)) => return Ok(None),
        Some(Value::String(_)) => return Err(()), // Python's int() of a string
    };
    Ok(Some(if attempt > 0 {
        format!("-a{attempt}")
    } else {
        String::new()
    }))
}

/// `[A-Za-z0-9][A-Za-z0-9._-]*`, matched whole.
fn explicit_rollout_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphanumeric())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn rollout_id(row: &Map<String, Value>) -> Modelled<Option<String>> {
    let Some(suffix) = attempt_suffix(row)? else {
        return Ok(None);
    };
    if let Some(explicit) = present(row, "_ng_rollout_id") {
        return Ok(match explicit {
            Value::String(id) if explicit_rollout_id(id) => Some(format!("{id}{suffix}")),
            _ => None,
        });
    }
    match (row.get("_ng_task_index"), row.get("_ng_rollout_index")) {
        (Some(task), Some(rollout)) => Ok(Some(format!(
            "{}-{}{suffix}",
            python_str(task)?,
            python_str(rollout)?
        ))),
        _ => Ok(None),
    }
}

/// (task id, rollout id) as NeMo Gym's collector derives them, None when it derives none.
fn rollout_identity(row: &Map<String, Value>) -> Modelled<Option<(Cow<'_, str>, String)>> {
    if !row.contains_key("_ng_task_index") {
        return Ok(None);
    }
    let task = task_id(row)?;
    let rollout = rollout_id(row)?;
    Ok(task.zip(rollout))
}
