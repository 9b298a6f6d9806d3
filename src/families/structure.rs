//! TL402-TL410: the structure of one row (trajlint/check/rules/structure.py, and TL405/TL406 of
//! trajlint/check/rules/identity.py).
//!
//! Ids are compared as the Python rules compare them: within one list, by exact string (or
//! `(string, int)`) equality, over the items the walks of trajlint/row/walk.py visit (objects in
//! a list at a fixed path). The parent links are checked in linear time: each invocation is
//! visited once however deep its chain, so rows with tens of thousands of invocations or chains
//! thousands deep cost what their size costs.
//!
//! The rollout identity (TL406) is re-derived only from values whose `str()` this module writes
//! exactly as Python does (strings, integers, booleans, null, and lists and objects of these with
//! ASCII text); any other value proves nothing.

mod identity;

use crate::hash::{HashMap, HashSet};

use crate::doc::{Json, Object, Value};

const CAPTURE: &str = "ng_model_call_capture";
const OBSERVATIONS: &str = "ng_agent_observations";
const STATED: &str = "ng_trajectory";
const VERIFIERS: &str = "ng_verifier_invocations";

/// True only when none of TL402-TL410 finds anything on the row.
pub fn clean(row: Object<'_>) -> bool {
    let stated = |part: &str| items(row, &[STATED, part]);
    // `walk.records` of the three kinds read here, in one pass.
    let (mut agent, mut tool, mut compaction) = (Vec::new(), Vec::new(), Vec::new());
    for record in items(row, &[OBSERVATIONS, "records"]) {
        if let Some(kind) = record.get("kind").and_then(Value::as_str) {
            match kind {
                "agent_invocation" => agent.push(record),
                "tool_call" => tool.push(record),
                "context_compaction" => compaction.push(record),
                _ => {}
            }
        }
    }

    // TL402 duplicate-model-call-id
    if repeats(items(row, &[CAPTURE, "calls"]).into_iter(), "model_call_id")
        || repeats(stated("model_calls").into_iter(), "model_call_id")
    {
        return false;
    }
    // TL403 duplicate-invocation-id
    let stated_invocations = stated("invocations");
    if repeats(agent.iter().copied(), "invocation_id")
        || repeats(stated_invocations.iter().copied(), "invocation_id")
        || repeats(items(row, &[VERIFIERS]).into_iter(), "invocation_id")
    {
        return false;
    }
    let turns = stated("turns");
    let tool_calls = stated("tool_calls");
    if turn_numbers_repeat(&turns)
        || tool_calls_repeat(tool.iter().copied())
        || tool_calls_repeat(tool_calls.iter().copied())
    {
        return false; // TL404 duplicate-turn-number, TL410 duplicate-tool-call
    }
    if !turns_name_their_rollout(row, &turns) || !identity::matches(row) {
        return false; // TL405 turn-identity-mismatch, TL406 trajectory-identity-mismatch
    }
    // TL407-TL409: the invocations wherever they stand, the bundle's first.
    let mut known: HashSet<&str> = HashSet::with_capacity_and_hasher(
        agent.len() + stated_invocations.len(),
        Default::default(),
    );
    let mut claims: Vec<(&str, &str)> = Vec::new();
    for &invocation in agent.iter().chain(&stated_invocations) {
        if let Some(id) = string(invocation, "invocation_id") {
            known.insert(id);
            if let Some(parent) = string(invocation, "parent_invocation_id") {
                claims.push((id, parent));
            }
        }
    }
    if has_cycle(&claims) || !parents_explained(row, &known, &claims) {
        return false; // TL407 parent-cycle, TL408 dangling-parent
    }
    // TL409 unknown-invocation: every name is known, so the rule finds nothing whatever the
    // build left out (what it reads first, to stay silent on a damaged row).
    let names = tool
        .iter()
        .chain(&compaction)
        .copied()
        .chain(tool_calls.iter().copied())
        .chain(turns.iter().copied());
    for item in names {
        if let Some(name) = text(item, "invocation_id") {
            if !known.contains(name) {
                return false;
            }
        }
    }
    true
}

/// The objects of the list at `path` (a section key, then keys), as `walk.items` visits them.
fn items<'d>(row: Object<'d>, path: &[&str]) -> Vec<Object<'d>> {
    let mut node = row.get(path[0]);
    for key in &path[1..] {
        node = match node.and_then(Value::as_object) {
            Some(map) => map.get(key),
            None => return Vec::new(),
        };
    }
    crate::doc::items(node)
        .filter_map(Value::as_object)
        .collect()
}

/// The value of `field` when it is a string (any, the empty one too).
fn string<'d>(item: Object<'d>, field: &str) -> Option<&'d str> {
    item.get(field).and_then(Value::as_str)
}

/// `walk.text`: a usable id, a non-empty string.
fn text<'d>(item: Object<'d>, field: &str) -> Option<&'d str> {
    string(item, field).filter(|s| !s.is_empty())
}

/// Whether two of the items have one usable id in `field`.
fn repeats<'d>(found: impl Iterator<Item = Object<'d>>, field: &str) -> bool {
    let mut seen = HashSet::default();
    found
        .filter_map(|item| text(item, field))
        .any(|id| !seen.insert(id))
}

/// An integer as Python reads it (`type(x) is int`): Some(Some(n)) for an integer, Some(None)
/// for any other value, None when unsure. orjson reads `-0` as the integer 0 where serde_json
/// reads the float -0.0, so a negative zero is unsure.
fn integer(value: Option<Value<'_>>) -> Option<Option<i128>> {
    match value.map(Value::view) {
        Some(Json::Number(n)) => {
            if let Some(i) = n.as_i64() {
                Some(Some(i128::from(i)))
            } else if let Some(u) = n.as_u64() {
                Some(Some(i128::from(u)))
            } else {
                match n.as_f64() {
                    Some(f) if f == 0.0 && f.is_sign_negative() => None,
                    _ => Some(None),
                }
            }
        }
        _ => Some(None),
    }
}

/// TL404: two turns with one string `invocation_id` and one integer `turn_no` (or a turn whose
/// number this module cannot read as Python does).
fn turn_numbers_repeat(turns: &[Object<'_>]) -> bool {
    let mut seen = HashSet::with_capacity_and_hasher(turns.len(), Default::default());
    for turn in turns {
        let Some(number) = integer(turn.get("turn_no")) else {
            return true;
        };
        if let (Some(id), Some(number)) = (string(*turn, "invocation_id"), number) {
            if !seen.insert((id, number)) {
                return true;
            }
        }
    }
    false
}

/// TL410: two tool calls of one list with one string `(invocation_id, tool_call_id)`.
fn tool_calls_repeat<'d>(found: impl Iterator<Item = Object<'d>>) -> bool {
    let mut seen = HashSet::default();
    found
        .filter_map(|tool| {
            Some((
                string(tool, "invocation_id")?,
                string(tool, "tool_call_id")?,
            ))
        })
        .any(|key| !seen.insert(key))
}

/// TL405: every turn's string `task_id` and `rollout_id` equal its trajectory record's (where
/// that is a string too).
fn turns_name_their_rollout(row: Object<'_>, turns: &[Object<'_>]) -> bool {
    let Some(record) = row.get(STATED).and_then(Value::as_object) else {
        return true; // no turns are walked
    };
    for name in ["task_id", "rollout_id"] {
        if let Some(expected) = string(record, name) {
            if turns
                .iter()
                .any(|turn| string(*turn, name).is_some_and(|value| value != expected))
            {
                return false;
            }
        }
    }
    true
}

/// TL407: whether following each invocation's first-stated parent comes back to itself. Each
/// invocation is walked through once: a walk stops at one an earlier walk passed.
fn has_cycle(claims: &[(&str, &str)]) -> bool {
    // Each claiming invocation numbered once; its first parent as a number, when that parent
    // claims one too (a walk ends at a parent that claims none).
    let mut number: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(claims.len(), Default::default());
    let mut firsts: Vec<&str> = Vec::with_capacity(claims.len());
    for &(id, parent) in claims {
        number.entry(id).or_insert_with(|| {
            firsts.push(parent);
            firsts.len() - 1
        });
    }
    let up: Vec<Option<usize>> = firsts
        .iter()
        .map(|parent| number.get(parent).copied())
        .collect();
    // 0: not walked, 1: on the current walk, 2: its way up is known to end without a cycle
    let mut state = vec![0u8; up.len()];
    let mut path: Vec<usize> = Vec::new();
    for start in 0..up.len() {
        let mut node = Some(start);
        while let Some(at) = node {
            match state[at] {
                1 => return true,
                2 => break,
                _ => {}
            }
            state[at] = 1;
            path.push(at);
            node = up[at];
        }
        for done in path.drain(..) {
            state[done] = 2;
        }
    }
    false
}

/// TL408: every parent is among the row's invocations, or the gaps say it is unavailable (for
/// the whole tree, or for the invocation naming it).
fn parents_explained(row: Object<'_>, known: &HashSet<&str>, claims: &[(&str, &str)]) -> bool {
    if claims.iter().all(|(_, parent)| known.contains(parent)) {
        return true;
    }
    let mut named: HashSet<&str> = HashSet::default();
    for part in [OBSERVATIONS, CAPTURE, STATED] {
        for gap in items(row, &[part, "gaps"]) {
            let code = string(gap, "code");
            let invocation = gap.get("invocation_id");
            if code == Some("subagent_hierarchy_incomplete")
                || (code == Some("subagent_parent_unavailable")
                    && invocation.is_none_or(Value::is_null))
            {
                return true;
            }
            if code == Some("subagent_parent_unavailable") {
                if let Some(id) = invocation.and_then(Value::as_str) {
                    named.insert(id);
                }
            }
        }
    }
    claims
        .iter()
        .all(|(id, parent)| known.contains(parent) || named.contains(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proves(json: &str) -> bool {
        crate::families::proves(clean, json)
    }

    #[test]
    fn cycles_follow_the_first_parent() {
        assert!(!has_cycle(&[("b", "a"), ("c", "b")]));
        assert!(has_cycle(&[("a", "a")]));
        assert!(has_cycle(&[("a", "b"), ("b", "c"), ("c", "a")]));
        assert!(!has_cycle(&[("a", "r"), ("b", "a"), ("a", "b")]));
        let chain: Vec<(String, String)> = (1..10_000)
            .map(|i| (format!("i{i}"), format!("i{}", i - 1)))
            .collect();
        let mut claims: Vec<(&str, &str)> = chain
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        assert!(!has_cycle(&claims));
        claims.push(("i0", "i9999"));
        assert!(has_cycle(&claims));
    }

    #[test]
    fn negative_zero_turn_numbers_prove_nothing() {
        let turns =
            r#"[{"invocation_id": "r", "turn_no": 0}, {"invocation_id": "r", "turn_no": -0}]"#;
        assert!(!proves(&format!(
            r#"{{"ng_trajectory": {{"turns": {turns}}}}}"#
        )));
    }

    #[test]
    fn task_ids_as_python_writes_them() {
        let row = r#"{"_ng_task_index": 0, "_ng_rollout_index": 0, "_ng_task_id": {"a": ["x'y", "\\", null, true, -3]},
                      "ng_trajectory": {"task_id": "{'a': [\"x'y\", '\\\\', None, True, -3]}"}}"#;
        assert!(proves(row));
        assert!(!proves(&row.replace("-3]}\"", "-4]}\"")));
        assert!(!proves(&row.replace("-3]", "-3.0]")));
    }
}
