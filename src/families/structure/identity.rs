//! TL406: the stated trajectory's and the capture's ids against the identity the row's keys
//! derive (trajlint/builder/identity.py `rollout_identity`).
//!
//! `Err(())` is "not modelled": a key whose `str()` (`python_str`) this module does not write
//! exactly as Python does (a float, an array, an object), or an attempt index given as a
//! string. The proof then fails and Python decides.

use std::borrow::Cow;

use crate::doc::{Json, Object, Value};

use super::{integer, string, CAPTURE, STATED};

type Modelled<T> = Result<T, ()>;

/// True only when TL406 finds nothing: no compared id is a string, or the row derives no
/// identity, or each string id equals the derived one.
pub fn matches(row: Object<'_>) -> bool {
    let mut found: Vec<(bool, &str)> = Vec::with_capacity(3); // (is the task id, the id)
    if let Some(stated) = row.get(STATED).and_then(Value::as_object) {
        found.extend(string(stated, "task_id").map(|id| (true, id)));
        found.extend(string(stated, "rollout_id").map(|id| (false, id)));
    }
    if let Some(capture) = row.get(CAPTURE).and_then(Value::as_object) {
        found.extend(string(capture, "rollout_id").map(|id| (false, id)));
    }
    if found.is_empty() {
        return true;
    }
    // `rollout_identity`: with `_ng_task_index` present the task id is always derived, so the
    // identity is None exactly when the rollout id is; the task id is derived only when compared
    // (a dispatched task given as an object is no string to write).
    if !row.contains_key("_ng_task_index") {
        return true;
    }
    let rollout = match rollout_id(row) {
        Err(()) => return false,
        Ok(None) => return true,
        Ok(Some(rollout)) => rollout,
    };
    let mut task: Option<Modelled<Option<Cow<'_, str>>>> = None;
    found.iter().all(|&(is_task, id)| {
        if !is_task {
            return id == rollout;
        }
        matches!(task.get_or_insert_with(|| task_id(row)), Ok(Some(task)) if id == task.as_ref())
    })
}

/// `python_str` of the values whose `str()` is written here exactly.
fn python_str(value: Value<'_>) -> Modelled<Cow<'_, str>> {
    match value.view() {
        Json::String(s) => Ok(Cow::Borrowed(s)),
        Json::Bool(true) => Ok(Cow::Borrowed("True")),
        Json::Bool(false) => Ok(Cow::Borrowed("False")),
        Json::Null => Ok(Cow::Borrowed("None")),
        Json::Number(_) => match integer(Some(value)) {
            Some(Some(n)) => Ok(Cow::Owned(n.to_string())),
            _ => Err(()),
        },
        Json::Array(_) | Json::Object(_) => {
            let mut out = String::new();
            python_repr(value, &mut out)?;
            Ok(Cow::Owned(out))
        }
    }
}

/// Python's `repr()` of a JSON value (what `str()` of a list or a dict writes for its items), for
/// strings of ASCII only (beyond it, which characters Python escapes depends on its Unicode
/// tables), integers, booleans, null, and lists and objects of these. Nesting is bounded by the
/// parser's depth limit.
fn python_repr(value: Value<'_>, out: &mut String) -> Modelled<()> {
    match value.view() {
        Json::String(s) => repr_str(s, out)?,
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_repr(item, out)?;
            }
            out.push(']');
        }
        Json::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_str(key, out)?;
                out.push_str(": ");
                python_repr(item, out)?;
            }
            out.push('}');
        }
        _ => out.push_str(&python_str(value)?),
    }
    Ok(())
}

fn repr_str(s: &str, out: &mut String) -> Modelled<()> {
    if !s.is_ascii() {
        return Err(());
    }
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c < ' ' || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    Ok(())
}

fn present<'d>(row: Object<'d>, key: &str) -> Option<Value<'d>> {
    row.get(key).filter(|value| !value.is_null())
}

fn task_id(row: Object<'_>) -> Modelled<Option<Cow<'_, str>>> {
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
fn attempt_suffix(row: Object<'_>) -> Modelled<Option<String>> {
    let value = row.get("_ng_attempt_index");
    let attempt = match value.map(Value::view) {
        None | Some(Json::Null) => return Ok(Some(String::new())),
        Some(Json::Bool(b)) => i128::from(b),
        Some(Json::Number(_)) => match integer(value) {
            Some(Some(n)) => n,
            _ => return Err(()), // a float: Python takes an integral one as an int
        },
        Some(Json::Array(_) | Json::Object(_)) => return Ok(None),
        Some(Json::String(_)) => return Err(()), // Python's int() of a string
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

fn rollout_id(row: Object<'_>) -> Modelled<Option<String>> {
    let Some(suffix) = attempt_suffix(row)? else {
        return Ok(None);
    };
    if let Some(explicit) = present(row, "_ng_rollout_id") {
        return Ok(match explicit.as_str() {
            Some(id) if explicit_rollout_id(id) => Some(format!("{id}{suffix}")),
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
