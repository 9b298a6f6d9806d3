//! The join of the observed invocations to the captured calls (`_Builder.join` in
//! trajlint.builder.steps): the gaps it writes, which NeMo Gym writes into the trajectory too.
//!
//! It runs on a row whose observations and capture are both objects. Only the observed agent
//! invocations the build keeps take part; the caller proves every one of them valid
//! (`ledger::proved_valid_invocation`), so that the calls they own are Python's. Compaction
//! records are all joined, valid or not: a record the build leaves out only adds gaps here, so
//! the gaps found are a superset of Python's. `gaps` answers None for a shape it does not model.

use crate::hash::{HashMap, HashSet};

use crate::build::ledger::{
    list, object, objects, ref_key, string, Ledger, RefKey, CAPTURE, OBSERVATIONS,
};
use crate::doc::{Json, Object, Value};

pub const UNMATCHED: &str = "model_call_reference_unmatched";
pub const AMBIGUOUS: &str = "model_call_reference_ambiguous";
pub const CONFLICT: &str = "model_call_reference_conflict";
pub const UNAVAILABLE: &str = "model_call_ownership_unavailable";

/// A gap (`code`, `invocation_id`, `detail`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap<'a> {
    pub code: &'static str,
    pub invocation: Option<&'a str>,
    pub detail: Option<String>,
}

fn gap<'a>(code: &'static str, invocation: Option<&'a str>, detail: Option<String>) -> Gap<'a> {
    Gap {
        code,
        invocation,
        detail,
    }
}

/// What a reference finds among the captured calls.
#[derive(Clone, Copy)]
enum Matched {
    Nothing,
    One(usize),
    Several,
}

/// How a join gap names a reference: its id, else its response id.
fn label<'a>(key: Option<RefKey<'a>>) -> Option<&'a str> {
    key.and_then(|k| k.call_id.or(k.response_id))
}

/// Python's `str()` of a captured call's `call_index`, for the shapes whose text is certain.
fn index_text(value: Option<Value<'_>>) -> Option<String> {
    match value.map(Value::view) {
        None | Some(Json::Null) => Some("None".to_owned()),
        Some(Json::Number(n)) if n.is_i64() || n.is_u64() => Some(n.to_serde().to_string()),
        Some(Json::String(s)) => Some(s.to_owned()),
        Some(Json::Bool(b)) => Some(if b { "True" } else { "False" }.to_owned()),
        _ => None,
    }
}

/// The join's gaps, in the order Python writes them; empty when the join does not run.
pub fn gaps<'a>(row: Object<'a>, ledger: &Ledger<'a>) -> Option<Vec<Gap<'a>>> {
    let (Some(bundle), Some(capture)) = (object(row.get(OBSERVATIONS)), object(row.get(CAPTURE)))
    else {
        return Some(Vec::new());
    };
    let calls = &ledger.calls;
    let raw_calls: Vec<Value> = list(capture.get("calls")).collect();
    let raw = |position: usize| {
        calls[position]
            .capture
            .and_then(|k| raw_calls.get(k))
            .and_then(|v| v.as_object())
    };
    // The join's index holds the captured calls only: a form's candidates, less the others.
    // Each form is looked up once: thousands of references may name one id thousands of calls
    // share.
    let captured = |key: Option<RefKey<'a>>| {
        ledger
            .index
            .matches(key)
            .unwrap_or(&[])
            .iter()
            .copied()
            .filter(|&i| calls[i].capture.is_some())
    };
    let mut found_forms: HashMap<Option<RefKey<'a>>, Matched> = HashMap::default();
    let mut matched = |key: Option<RefKey<'a>>| {
        *found_forms.entry(key).or_insert_with(|| {
            let mut named = captured(key);
            match (named.next(), named.next()) {
                (None, _) => Matched::Nothing,
                (Some(one), None) => Matched::One(one),
                (Some(_), Some(_)) => Matched::Several,
            }
        })
    };
    let mut sessions: HashMap<&str, Vec<usize>> = HashMap::default();
    for position in 0..calls.len() {
        if let Some(session) = raw(position).and_then(|r| string(r.get("client_session_id"))) {
            sessions.entry(session).or_default().push(position);
        }
    }
    let mut owned: Vec<Option<&str>> = vec![None; calls.len()];
    let mut found = Vec::new();
    let records: Vec<Object> = objects(bundle.get("records")).map(|(_, r)| r).collect();
    for record in &records {
        if string(record.get("kind")) != Some("agent_invocation") {
            continue;
        }
        let owner = string(record.get("invocation_id"))?;
        let mut refs: Vec<Option<RefKey>> = list(record.get("model_calls"))
            .filter(|r| r.is_object())
            .map(ref_key)
            .collect();
        let mut forms = HashSet::default();
        let mut referenced: HashSet<usize> = HashSet::default();
        for &key in &refs {
            if forms.insert(key) {
                referenced.extend(captured(key));
            }
        }
        for &position in sessions.get(owner).map_or(&[][..], Vec::as_slice) {
            if let Some(id) = calls[position].model_call_id {
                if !referenced.contains(&position) {
                    let key = Some(RefKey {
                        call_id: Some(id),
                        server: None,
                        response_id: None,
                    });
                    refs.push(key);
                    if forms.insert(key) {
                        referenced.extend(captured(key));
                    }
                }
            }
        }
        for key in refs {
            let detail = || label(key).map(str::to_owned);
            match matched(key) {
                Matched::Nothing => found.push(gap(UNMATCHED, Some(owner), detail())),
                Matched::One(one) => match owned[one] {
                    Some(_) => {
                        let call = &calls[one];
                        let named = call.model_call_id.or(call.response_id).map(str::to_owned);
                        found.push(gap(CONFLICT, Some(owner), named));
                    }
                    None => owned[one] = Some(owner),
                },
                Matched::Several => found.push(gap(AMBIGUOUS, Some(owner), detail())),
            }
        }
    }
    for record in &records {
        if string(record.get("kind")) != Some("context_compaction") {
            continue;
        }
        let owner = string(record.get("invocation_id"))?;
        let model_calls = record.get("model_calls");
        let refs = match model_calls.map(Value::view) {
            Some(Json::Array(_)) => list(model_calls),
            _ if !crate::build::turns::truthy(model_calls) => list(None),
            _ => return None, // `or []` iterates whatever else it is
        };
        for reference in refs {
            let key = ref_key(reference);
            let detail = Some(format!("model_calls:{}", label(key).unwrap_or("None")));
            match matched(key) {
                Matched::Nothing => found.push(gap(UNMATCHED, Some(owner), detail)),
                Matched::One(one) => match owned[one] {
                    None => found.push(gap(UNAVAILABLE, Some(owner), detail)),
                    Some(o) if o != owner => found.push(gap(CONFLICT, Some(owner), detail)),
                    Some(_) => {}
                },
                Matched::Several => found.push(gap(AMBIGUOUS, Some(owner), detail)),
            }
        }
        for name in ["before_model_call", "after_model_call"] {
            let Some(reference) = record.get(name).filter(|r| !r.is_null()) else {
                continue;
            };
            let key = ref_key(reference);
            let detail = Some(format!("{name}:{}", label(key).unwrap_or("None")));
            match matched(key) {
                Matched::Nothing => found.push(gap(UNMATCHED, Some(owner), detail)),
                Matched::One(one) => {
                    if owned[one].is_some_and(|o| o != owner) {
                        found.push(gap(CONFLICT, Some(owner), detail));
                    }
                }
                Matched::Several => found.push(gap(AMBIGUOUS, Some(owner), detail)),
            }
        }
    }
    for (position, call) in calls.iter().enumerate() {
        if call.capture.is_none() || owned[position].is_some() {
            continue;
        }
        let index = index_text(raw(position)?.get("call_index"))?;
        let name = call.model_call_id.or(call.response_id).unwrap_or("unknown");
        found.push(gap(
            UNAVAILABLE,
            None,
            Some(format!("capture:{name}:call_index={index}")),
        ));
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::ledger;

    #[test]
    fn claims_sessions_and_the_calls_nobody_owns() {
        let text = r#"{
            "ng_model_call_capture": {"calls": [
                {"model_call_id": "a", "call_index": 0},
                {"model_call_id": "b", "call_index": 1, "client_session_id": "i"},
                {"response_id": "r", "call_index": 2.5},
                {"model_call_id": "c", "call_index": 3}]},
            "ng_agent_observations": {"records": [
                {"kind": "agent_invocation", "invocation_id": "i", "model_calls": [{"model_call_id": "a"}, {"model_call_id": "z"}]},
                {"kind": "agent_invocation", "invocation_id": "j", "model_calls": [{"model_call_id": "a"}]},
                {"kind": "context_compaction", "invocation_id": "j", "model_calls": [{"model_call_id": "c"}],
                 "before_model_call": {"model_call_id": "b"}}]}
        }"#;
        let row = crate::build::parsed(text).as_object().unwrap();
        let ledger = ledger::build(row).unwrap();
        // The call at index 2.5 is unowned: Python writes its index as the float's text.
        assert!(gaps(row, &ledger).is_none());
        let text = text.replace(r#""call_index": 2.5"#, r#""call_index": 2"#);
        let row = crate::build::parsed(&text).as_object().unwrap();
        let ledger = ledger::build(row).unwrap();
        let found = gaps(row, &ledger).unwrap();
        let said: Vec<_> = found
            .iter()
            .map(|g| (g.code, g.invocation, g.detail.clone()))
            .collect();
        let owned = |s: &str| Some(s.to_owned());
        assert_eq!(
            said,
            [
                (UNMATCHED, Some("i"), owned("z")),
                (CONFLICT, Some("j"), owned("a")),
                (UNAVAILABLE, Some("j"), owned("model_calls:c")),
                (CONFLICT, Some("j"), owned("before_model_call:b")),
                (UNAVAILABLE, None, owned("capture:r:call_index=2")),
                (UNAVAILABLE, None, owned("capture:c:call_index=3")),
            ]
        );
    }
}
