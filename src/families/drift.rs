//! TL501 trajectory-drift and TL502 gap-unreported (trajlint/check/rules/drift.py): the stated
//! trajectory against the turns and the join gaps of its evidence.
//!
//! Both read the build: its ledger (`crate::build::ledger`), the turns the evidence supports
//! (`crate::build::turns`) and the join's gaps (`crate::build::join`). Which calls an invocation
//! owns depends on whether the invocation passed its schema, so every agent invocation of the
//! row must be proved valid; which turn owns a call is modelled only for a call one invocation
//! claims.
//!
//! TL501 is clean when every stated turn names exactly one call, by a reference that resolves,
//! and that call is either a compaction helper or verifier-owned (their own rules judge it), or
//! the expected turn of the turn's invocation, with the turn's content agreeing: no answer or
//! reasoning left out that the response holds, a `step_count` counting the invocation's earlier
//! tool calls with or without the turn's own, a `resolved` agreeing with the row's. No other call
//! is referenced by two turns, and every expected turn is referenced. TL502 is clean when every
//! join gap the build holds is one of the stated trajectory's gaps.

use crate::hash::HashSet;

use crate::build::join::{self, Gap, AMBIGUOUS, CONFLICT, UNAVAILABLE, UNMATCHED};
use crate::build::ledger::{self, list, object, objects, string, Kind, Ledger, Place};
use crate::build::ledger::{CAPTURE, OBSERVATIONS, STATED};
use crate::build::turns::{self, Turn};
use crate::doc::{Json, Object, Value};
use crate::families::Row;
use crate::row::{
    CAPTURE as HAS_CAPTURE, MODEL_CALLS, OBSERVATIONS as HAS_OBSERVATIONS, TRAJECTORY,
};

pub fn clean(shared: &Row<'_>) -> bool {
    let row = shared.doc;
    let held = shared.evidence();
    let drift_runs = held & (TRAJECTORY | MODEL_CALLS) == TRAJECTORY | MODEL_CALLS;
    let gaps_run = held & (TRAJECTORY | HAS_OBSERVATIONS | HAS_CAPTURE)
        == TRAJECTORY | HAS_OBSERVATIONS | HAS_CAPTURE;
    let Some(stated) = object(row.get(STATED)) else {
        return true; // neither rule runs, or both return at once
    };
    if !drift_runs && !gaps_run {
        return true;
    }
    if !invocations_valid(row, stated) {
        return false;
    }
    let Some(ledger) = shared.ledger() else {
        return false;
    };
    (!drift_runs || turns_agree(row, stated, ledger))
        && (!gaps_run || gaps_reported(row, stated, ledger))
}

/// Every agent invocation, stated or observed, is one the build keeps as valid.
fn invocations_valid(row: Object<'_>, stated: Object<'_>) -> bool {
    let observed = list(object(row.get(OBSERVATIONS)).and_then(|b| b.get("records")));
    objects(stated.get("invocations")).all(|(_, inv)| ledger::proved_valid_invocation(inv))
        && observed.filter_map(Value::as_object).all(|record| {
            string(record.get("kind")) != Some("agent_invocation")
                || ledger::proved_valid_invocation(record)
        })
}

/// TL501 finds nothing.
fn turns_agree(row: Object<'_>, stated: Object<'_>, ledger: &Ledger) -> bool {
    let Some(expected) = turns::expected(row, ledger) else {
        return false;
    };
    if ledger.unresolved.iter().any(|u| u.claim.kind == Kind::Turn) {
        return false;
    }
    let turns: Vec<Value> = list(stated.get("turns")).collect();
    let mut call_of = vec![None; turns.len()];
    for (i, entry) in ledger.calls.iter().enumerate() {
        let judged = !(entry.claimed_as(Kind::Compaction) || entry.claimed_as(Kind::Verifier));
        let mut first = None;
        for claim in entry.claims.iter().filter(|c| c.kind == Kind::Turn) {
            let Place::StatedTurn(t) = claim.place else {
                return false;
            };
            if judged && first.is_some_and(|f| f != t) {
                return false; // one call, two turns
            }
            first = Some(t);
            if call_of[t].replace(i).is_some_and(|other| other != i) {
                return false;
            }
        }
        if expected[i].is_some() && first.is_none() {
            return false; // an expected turn no stated turn references
        }
    }
    for (t, turn) in turns.iter().enumerate() {
        let Some(turn) = turn.as_object() else {
            continue;
        };
        if !matches!(turn.get("model_calls").map(Value::view), Some(Json::Array(refs)) if refs.len() == 1)
        {
            return false;
        }
        let Some(i) = call_of[t] else {
            return false;
        };
        let entry = &ledger.calls[i];
        if entry.claimed_as(Kind::Compaction) || entry.claimed_as(Kind::Verifier) {
            continue; // TL202 / TL204 judge it
        }
        match &expected[i] {
            Some(expected)
                if string(turn.get("invocation_id")) == Some(expected.owner)
                    && content_agrees(row, turn, expected) => {}
            _ => return false,
        }
    }
    true
}

/// `_content`: no hollow field, a step count of either convention, `resolved` as the row's.
fn content_agrees(row: Object<'_>, turn: Object<'_>, expected: &Turn) -> bool {
    let content = expected.content;
    for (field, held) in [
        ("answer", content.answer),
        ("reasoning_content", content.reasoning),
    ] {
        if held && turns::empty(turn.get(field)) {
            return false;
        }
    }
    if let Some(steps) = turn.get("step_count").and_then(Value::as_u64) {
        let before = expected.steps;
        if steps != before && Some(steps) != before.checked_add(content.tool_calls) {
            return false;
        }
    }
    match (
        turn.get("resolved").and_then(Value::as_bool),
        row.get("resolved").and_then(Value::as_bool),
    ) {
        (Some(said), Some(result)) => said == result,
        _ => true,
    }
}

/// A gap's (`code`, `invocation_id`, `detail`).
type Key<'a> = (&'a str, Option<&'a str>, Option<&'a str>);

/// TL502 finds nothing: every join gap of the build is a stated gap.
fn gaps_reported(row: Object<'_>, stated: Object<'_>, ledger: &Ledger) -> bool {
    // A stated gap whose values are no strings (or null) equals no gap the build makes.
    let said: HashSet<Key> = objects(stated.get("gaps"))
        .filter_map(|(_, g)| {
            Some((
                string(g.get("code"))?,
                text_or_none(g.get("invocation_id"))?,
                text_or_none(g.get("detail"))?,
            ))
        })
        .collect();
    let is_said = |code: &str, invocation: Option<&str>, detail: Option<&str>| {
        said.contains(&(code, invocation, detail))
    };
    let Some(joined) = join::gaps(row, ledger) else {
        return false;
    };
    let joined_again = object(row.get(CAPTURE)).is_some();
    for Gap {
        code,
        invocation,
        detail,
    } in &joined
    {
        if !is_said(code, *invocation, detail.as_deref()) {
            return false;
        }
    }
    // The gaps the bundle and the capture carry, when they are join gaps: the bundle's, less
    // those a join on this row writes anew (every gap, valid or not: a superset of Python's).
    let bundle = object(row.get(OBSERVATIONS)).map(|b| b.get("gaps"));
    let carried = objects(bundle.flatten()).map(|(_, g)| (g, true)).chain(
        object(row.get(CAPTURE))
            .into_iter()
            .flat_map(|c| objects(c.get("gaps")).map(|(_, g)| (g, false))),
    );
    for (g, from_bundle) in carried {
        let Some(code) = string(g.get("code")) else {
            continue; // no valid gap: the build leaves it out
        };
        let (Some(invocation), Some(detail)) = (
            text_or_none(g.get("invocation_id")),
            text_or_none(g.get("detail")),
        ) else {
            if [UNMATCHED, AMBIGUOUS, CONFLICT, UNAVAILABLE].contains(&code) {
                return false;
            }
            continue;
        };
        let rejoined = from_bundle
            && joined_again
            && ([UNMATCHED, AMBIGUOUS, CONFLICT].contains(&code)
                || (code == UNAVAILABLE
                    && invocation.is_none()
                    && detail.is_some_and(|d| d.starts_with("capture:"))));
        let join_gap = [UNMATCHED, AMBIGUOUS, CONFLICT].contains(&code)
            || (code == UNAVAILABLE
                && detail
                    .is_some_and(|d| d.starts_with("capture:") || d.starts_with("model_calls:")));
        if !rejoined && join_gap && !is_said(code, invocation, detail) {
            return false;
        }
    }
    true
}

/// A string, or None for null or absent: Some(...) of that; None for any other value.
fn text_or_none(value: Option<Value<'_>>) -> Option<Option<&str>> {
    match value.map(Value::view) {
        None | Some(Json::Null) => Some(None),
        Some(Json::String(s)) => Some(Some(s)),
        _ => None,
    }
}
