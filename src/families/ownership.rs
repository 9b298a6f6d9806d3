//! TL201-TL209, who owns each model call (trajlint/check/rules/ownership.py), read from the
//! ownership ledger (`crate::build::ledger`).
//!
//! A row is clean when no reference is unmatched, every ambiguous reference names calls of one
//! id, and each call's claims agree: at most one agent invocation on a call no compaction or
//! verifier claims; a compaction helper claimed by its compacted invocation alone and by no
//! stated turn, its boundary markers naming the invocation's own calls; a verifier-owned call
//! claimed by one verifier and by no agent, compaction or turn; and, in a row with agent
//! invocations, every call owned by someone or contested by an ambiguous reference.

use crate::hash::HashSet;

use crate::build::ledger::{self, Entry, Kind, Ledger, Reason};
use crate::families::Row;
use crate::row::MODEL_CALLS;

pub fn clean(row: &Row<'_>) -> bool {
    unowned(row).is_some_and(|calls| calls.is_empty())
}

/// A call of the ledger that TL209 (`unowned-model-call`) reports: what its finding names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unowned<'a> {
    /// Its positions in the stated `model_calls` and in the capture's `calls` (the finding's
    /// pointer is the first of the two it has, the other its related place).
    pub stated: Option<usize>,
    pub capture: Option<usize>,
    /// Its ids as the finding's message names them (an empty id is none).
    pub model_call_id: Option<&'a str>,
    pub response_id: Option<&'a str>,
}

/// The calls TL209 reports, when the row is otherwise clean of TL201-TL209; None when the core
/// proves less. TL209 is information a real run meets on many clean rows (a judge's call no
/// verifier claims), so the core hands its findings back instead of leaving such rows to the
/// Python path.
pub fn unowned<'a>(row: &Row<'a>) -> Option<Vec<Unowned<'a>>> {
    if row.evidence() & MODEL_CALLS == 0 {
        // Every rule but TL202 reads model calls, and TL202 judges calls: no call, no finding.
        return Some(Vec::new());
    }
    let ledger = row.ledger()?;
    let contested = references_clean(ledger)?;
    if !ledger.calls.iter().all(claims_agree) {
        return None;
    }
    if !ledger::holds_invocations(row.doc) {
        return Some(Vec::new()); // no agent evidence: ownership was not observed
    }
    let named = |id: Option<&'a str>| id.filter(|id| !id.is_empty());
    Some(
        ledger
            .calls
            .iter()
            .enumerate()
            .filter(|&(i, entry)| !contested[i] && !owned(entry))
            .map(|(_, entry)| Unowned {
                stated: entry.stated,
                capture: entry.capture,
                model_call_id: named(entry.model_call_id),
                response_id: named(entry.response_id),
            })
            .collect(),
    )
}

/// TL207 and TL208: no reference matches no call, and an ambiguous one names calls of one id
/// (the duplicate id is another rule's). Some(the calls an ambiguous reference names) when so.
fn references_clean(ledger: &Ledger) -> Option<Vec<bool>> {
    let mut contested = vec![false; ledger.calls.len()];
    let mut forms = HashSet::default();
    for unresolved in &ledger.unresolved {
        match unresolved.reason {
            Reason::Unjoinable => {}
            Reason::Unmatched => return None,
            Reason::Ambiguous => {
                if !forms.insert(unresolved.key) {
                    continue; // one form, one set of candidates
                }
                let candidates = ledger.candidates(unresolved.key);
                let first = candidates.first().map(|&i| ledger.calls[i].model_call_id);
                if candidates
                    .iter()
                    .any(|&i| Some(ledger.calls[i].model_call_id) != first)
                {
                    return None;
                }
                for &i in candidates {
                    contested[i] = true;
                }
            }
        }
    }
    Some(contested)
}

/// TL209: a claim other than a boundary marker makes the call owned.
fn owned(entry: &Entry) -> bool {
    entry.claims.iter().any(|c| c.kind.owns())
}

/// The distinct owners (ids) among the claims of `kinds`, sorted.
fn owners<'a>(entry: &Entry<'a>, kinds: impl Fn(Kind) -> bool) -> Vec<&'a str> {
    let mut found: Vec<&str> = entry
        .claims
        .iter()
        .filter(|c| kinds(c.kind))
        .filter_map(|c| c.owner)
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// TL201-TL206 on one call.
fn claims_agree(entry: &Entry) -> bool {
    let agents = owners(entry, Kind::is_agent);
    let has = |kind| entry.claimed_as(kind);
    if has(Kind::Verifier) {
        // TL204, TL205, TL206: one verifier, and no turn, agent or (with a verifier id) helper.
        let verifiers = owners(entry, |k| k == Kind::Verifier);
        return !has(Kind::Turn)
            && agents.is_empty()
            && verifiers.len() <= 1
            && (verifiers.is_empty() || !has(Kind::Compaction));
    }
    let Some(helper) = entry.claims.iter().find(|c| c.kind == Kind::Compaction) else {
        // TL201 (TL203's markers need a helper claim or an agent owner to disagree with).
        return agents.len() < 2 && markers_agree(entry, &agents);
    };
    // TL202, TL203: no turn; every agent or compaction claimant is the compacted invocation.
    !has(Kind::Turn)
        && entry
            .claims
            .iter()
            .filter(|c| c.kind.is_agent() || c.kind == Kind::Compaction)
            .all(|c| c.owner.is_none() || c.owner == helper.owner)
        && markers_agree(entry, &agents)
}

/// TL203: a boundary marker names a call of its own invocation, when agents claim the call.
fn markers_agree(entry: &Entry, agents: &[&str]) -> bool {
    agents.is_empty()
        || entry.claims.iter().all(|c| {
            !matches!(c.kind, Kind::CompactionBefore | Kind::CompactionAfter)
                || c.owner.is_none_or(|o| agents.binary_search(&o).is_ok())
        })
}
