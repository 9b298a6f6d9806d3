//! The ownership ledger of a row, as `trajlint.builder.steps` builds it: the model calls of the
//! build (the stated trajectory's calls, each merged with the captured call of its id, then the
//! other captured calls) and every claim on them — agent invocations and their sessions,
//! compaction records and their boundary markers, verifier invocations, stated turns — or the
//! claim's reference when it names no call or several.
//!
//! `build` answers None for a row whose calls it cannot tell as the Python build does: a stated
//! model call the core cannot prove valid against its schema (the build leaves an invalid one
//! out, and the core validates no schema). Everything else is read as the Python build reads it,
//! with its type guards. What the core does not keep: whether the record holding a claim passed
//! its schema (`Claim.valid` in Python), and the pointers (a claim keeps the item and list
//! position it stands at, from which the pointer follows).
//!
//! Every step is linear in the row, or n log n: references are looked up in one hash map per
//! form, the candidates of a form are one shared slice, and an invocation id repeated many
//! times claims its sessions' calls once.

use std::collections::hash_map::Entry as Slot;

use crate::hash::{HashMap, HashSet};

use crate::doc::{self, Children, Object, Value};

pub const STATED: &str = "ng_trajectory";
pub const OBSERVATIONS: &str = "ng_agent_observations";
pub const CAPTURE: &str = "ng_model_call_capture";
pub const VERIFIERS: &str = "ng_verifier_invocations";

/// A model server named by a reference or a call: (`type`, `name`).
pub type Server<'a> = (&'a str, &'a str);

/// A reference's form (Python `ref_key`): its model_call_id, model server and response id,
/// empty strings read as absent.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RefKey<'a> {
    pub call_id: Option<&'a str>,
    pub server: Option<Server<'a>>,
    pub response_id: Option<&'a str>,
}

/// Who claims a call, and what the claim means (the kinds of `trajlint.builder.ledger`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// An agent invocation's `model_calls` reference.
    Agent,
    /// The captured call's `client_session_id` names an agent invocation.
    Session,
    /// A compaction record's `model_calls`: a summarization helper call.
    Compaction,
    CompactionBefore,
    CompactionAfter,
    /// A verifier invocation's list, or the captured call's `verifier_invocation_id`.
    Verifier,
    /// A stated turn's reference.
    Turn,
}

impl Kind {
    pub fn is_agent(self) -> bool {
        matches!(self, Kind::Agent | Kind::Session)
    }

    /// Claims that make a call owned (`unowned-model-call`): all but the boundary markers.
    pub fn owns(self) -> bool {
        !matches!(self, Kind::CompactionBefore | Kind::CompactionAfter)
    }
}

/// The item a claim stands in, by its position in its list.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Place {
    /// `/ng_trajectory/invocations/i`
    StatedInvocation(usize),
    /// `/ng_agent_observations/records/i`
    Record(usize),
    /// `/ng_verifier_invocations/i`
    Verifier(usize),
    /// `/ng_model_call_capture/calls/i` (a session or `verifier_invocation_id` claim)
    Capture(usize),
    /// `/ng_trajectory/turns/i`
    StatedTurn(usize),
}

#[derive(Clone, Copy, Debug)]
pub struct Claim<'a> {
    pub kind: Kind,
    /// The invocation (or verifier invocation) that claims; None when its id is no string.
    pub owner: Option<&'a str>,
    pub place: Place,
    /// The position in the item's `model_calls` (0 for a claim that is no list item).
    pub slot: usize,
    /// The reference names the call's model_call_id.
    pub names_id: bool,
}

/// One model call of the build and everything said about it.
#[derive(Debug)]
pub struct Entry<'a> {
    pub model_call_id: Option<&'a str>,
    pub response_id: Option<&'a str>,
    pub server: Option<Server<'a>>,
    pub has_response: bool,
    /// Its position in the stated `model_calls`, and in the capture's `calls`.
    pub stated: Option<usize>,
    pub capture: Option<usize>,
    pub claims: Vec<Claim<'a>>,
}

impl Entry<'_> {
    pub fn claimed_as(&self, kind: Kind) -> bool {
        self.claims.iter().any(|c| c.kind == kind)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Reason {
    /// The reference matches no call.
    Unmatched,
    /// ... several calls (`Ledger::candidates`).
    Ambiguous,
    /// ... can never match: no object, or neither an id nor a (model_ref, response_id) pair.
    Unjoinable,
}

#[derive(Clone, Copy, Debug)]
pub struct Unresolved<'a> {
    pub claim: Claim<'a>,
    /// The reference's form; None when the reference is no object.
    pub key: Option<RefKey<'a>>,
    pub reason: Reason,
}

/// Finds the calls a reference names: by id (agreeing on model_ref and response id when the
/// reference gives them), else by the exact (model_ref, response_id) pair.
#[derive(Default, Debug)]
pub struct CallIndex<'a> {
    found: HashMap<RefKey<'a>, Positions>,
}

/// The calls of one form. Nearly every form names one call: held inline, it costs no allocation.
#[derive(Debug)]
enum Positions {
    One(usize),
    Many(Vec<usize>),
}

impl Positions {
    fn push(&mut self, index: usize) {
        match self {
            Positions::One(first) => *self = Positions::Many(vec![*first, index]),
            Positions::Many(all) => all.push(index),
        }
    }

    fn as_slice(&self) -> &[usize] {
        match self {
            Positions::One(index) => std::slice::from_ref(index),
            Positions::Many(all) => all,
        }
    }
}

impl<'a> CallIndex<'a> {
    pub fn new(calls: &[Entry<'a>]) -> Self {
        // Sized for the forms a call with an id, a server and a response id gives (five), so
        // that the map never grows while filling.
        let forms = calls
            .iter()
            .map(|entry| {
                let (server, response) = (entry.server.is_some(), entry.response_id.is_some());
                let both = usize::from(server && response);
                let by_id = entry.model_call_id.map_or(0, |_| {
                    1 + usize::from(server) + usize::from(response) + both
                });
                by_id + both
            })
            .sum();
        let mut found: HashMap<RefKey<'a>, Positions> =
            HashMap::with_capacity_and_hasher(forms, Default::default());
        let mut add = |call_id, server, response_id, index| {
            let key = RefKey {
                call_id,
                server,
                response_id,
            };
            match found.entry(key) {
                Slot::Occupied(mut held) => held.get_mut().push(index),
                Slot::Vacant(slot) => {
                    slot.insert(Positions::One(index));
                }
            }
        };
        for (index, entry) in calls.iter().enumerate() {
            let (server, response_id) = (entry.server, entry.response_id);
            if let Some(id) = entry.model_call_id {
                add(Some(id), None, None, index);
                if server.is_some() {
                    add(Some(id), server, None, index);
                }
                if response_id.is_some() {
                    add(Some(id), None, response_id, index);
                }
                if server.is_some() && response_id.is_some() {
                    add(Some(id), server, response_id, index);
                }
            }
            if server.is_some() && response_id.is_some() {
                add(None, server, response_id, index);
            }
        }
        CallIndex { found }
    }

    /// The positions of the calls a reference of form `key` matches; None when it never can.
    pub fn matches(&self, key: Option<RefKey<'a>>) -> Option<&[usize]> {
        let key = key?;
        if key.call_id.is_none() && (key.server.is_none() || key.response_id.is_none()) {
            return None;
        }
        Some(self.found.get(&key).map_or(&[], Positions::as_slice))
    }
}

#[derive(Debug)]
pub struct Ledger<'a> {
    pub calls: Vec<Entry<'a>>,
    pub unresolved: Vec<Unresolved<'a>>,
    pub index: CallIndex<'a>,
}

impl<'a> Ledger<'a> {
    /// The calls an ambiguous (or unmatched) reference of form `key` matches.
    pub fn candidates(&self, key: Option<RefKey<'a>>) -> &[usize] {
        self.index.matches(key).unwrap_or(&[])
    }
}

pub(crate) fn object(value: Option<Value<'_>>) -> Option<Object<'_>> {
    value.and_then(Value::as_object)
}

/// The elements of a list; none for any other value.
pub(crate) fn list(value: Option<Value<'_>>) -> Children<'_> {
    doc::items(value)
}

pub(crate) fn string(value: Option<Value<'_>>) -> Option<&str> {
    value.and_then(Value::as_str)
}

fn text(value: Option<Value<'_>>) -> Option<&str> {
    string(value).filter(|t| !t.is_empty())
}

/// The dict items of a list, with their positions.
pub(crate) fn objects(value: Option<Value<'_>>) -> impl Iterator<Item = (usize, Object<'_>)> {
    list(value)
        .enumerate()
        .filter_map(|(i, v)| v.as_object().map(|m| (i, m)))
}

/// Python `server_key`: a model_ref object with a string type and name.
pub fn server_key(value: Option<Value<'_>>) -> Option<Server<'_>> {
    let map = object(value)?;
    Some((string(map.get("type"))?, string(map.get("name"))?))
}

/// Python `ref_key`.
pub fn ref_key(value: Value<'_>) -> Option<RefKey<'_>> {
    let map = value.as_object()?;
    Some(RefKey {
        call_id: text(map.get("model_call_id")),
        server: server_key(map.get("model_ref")),
        response_id: text(map.get("response_id")),
    })
}

fn null_or(value: Option<Value<'_>>, ok: impl Fn(Value<'_>) -> bool) -> bool {
    match value {
        None => true,
        Some(v) => v.is_null() || ok(v),
    }
}

fn is_number(v: Value<'_>) -> bool {
    v.is_number()
}

fn is_nonnegative(v: Value<'_>) -> bool {
    v.as_f64().is_some_and(|n| n >= 0.0)
}

/// An integer as NeMo Gym writes one (no `12.0`: lax reading would coerce it).
fn is_integer(v: Value<'_>) -> bool {
    v.is_i64() || v.is_u64()
}

fn is_string(v: Value<'_>) -> bool {
    v.is_string()
}

/// A stated model call that passes `TrajectoryModelCall` as written (no value NeMo Gym's lax
/// reading would change): the build keeps such a call whatever else the section holds. False
/// means "not proved valid", not "invalid".
fn proved_valid_call(call: Object<'_>) -> bool {
    for (key, value) in call {
        let v = Some(value);
        let ok = match key {
            "model_call_id" => null_or(v, is_string),
            "started_at" | "completed_at" => null_or(v, is_number),
            "duration_ms" => null_or(v, is_nonnegative),
            "request" | "response" => true,
            "response_metadata" => value.as_object().is_some_and(proved_valid_metadata),
            "token_stats" => value.as_object().is_some_and(|stats| {
                stats.iter().all(|(name, count)| {
                    matches!(
                        name,
                        "prompt_tokens"
                            | "completion_tokens"
                            | "reasoning_tokens"
                            | "total_tokens"
                            | "cached_tokens"
                    ) && null_or(Some(count), |c| c.is_u64())
                })
            }),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

fn proved_valid_metadata(meta: Object<'_>) -> bool {
    meta.iter().all(|(key, value)| {
        let v = Some(value);
        match key {
            "response_id"
            | "model"
            | "dialect"
            | "response_status"
            | "finish_reason"
            | "local_response_reason"
            | "error_category" => null_or(v, is_string),
            "status_code" | "upstream_status_code" => null_or(v, is_integer),
            "upstream_attempted" => null_or(v, |b| b.is_boolean()),
            "response_source" => null_or(v, |s| matches!(s.as_str(), Some("upstream" | "local"))),
            "latency_ttft_ms" => null_or(v, is_nonnegative),
            "model_ref" => null_or(v, |r| {
                r.as_object().is_some_and(|r| {
                    r.get("type").and_then(Value::as_str) == Some("responses_api_models")
                        && r.get("name").is_some_and(Value::is_string)
                })
            }),
            _ => false,
        }
    })
}

/// A call as the build holds it before the ledger reads it: the raw values its entry is made of.
struct Call<'a> {
    model_call_id: Option<&'a str>, // as written ("" kept: the merge joins on it)
    response_id: Option<&'a str>,
    model_ref: Option<Value<'a>>,
    has_response: bool,
    stated: Option<usize>,
    capture: Option<Object<'a>>,
    capture_at: Option<usize>,
}

fn present(value: Option<Value<'_>>) -> bool {
    value.is_some_and(|v| !v.is_null())
}

/// Python `take_stated` then `take_capture`: the build's model calls, or None when a stated call
/// is not proved valid.
fn calls(row: Object<'_>) -> Option<Vec<Call<'_>>> {
    let mut calls = Vec::new();
    if let Some(stated) = object(row.get(STATED)) {
        for (i, call) in objects(stated.get("model_calls")) {
            if !proved_valid_call(call) {
                return None;
            }
            let meta = object(call.get("response_metadata"));
            calls.push(Call {
                model_call_id: string(call.get("model_call_id")),
                response_id: meta.and_then(|m| string(m.get("response_id"))),
                model_ref: meta.and_then(|m| m.get("model_ref")),
                has_response: present(call.get("response")),
                stated: Some(i),
                capture: None,
                capture_at: None,
            });
        }
    }
    let mut by_id: HashMap<&str, usize> = HashMap::default();
    for (i, call) in calls.iter().enumerate() {
        if let Some(id) = call.model_call_id {
            by_id.insert(id, i);
        }
    }
    let mut consumed: HashSet<&str> = HashSet::default();
    if let Some(capture) = object(row.get(CAPTURE)) {
        for (k, raw) in objects(capture.get("calls")) {
            let id = string(raw.get("model_call_id"));
            let response_id = string(raw.get("response_id"));
            let model_ref = raw.get("model_ref").filter(|r| {
                r.get("type").and_then(Value::as_str) == Some("responses_api_models")
                    && r.get("name").is_some_and(Value::is_string)
            });
            let has_response = present(raw.get("response")) || present(raw.get("response_raw"));
            let merge = id.and_then(|id| by_id.get(id).copied().filter(|_| consumed.insert(id)));
            match merge {
                Some(i) => {
                    let call = &mut calls[i];
                    call.response_id = response_id.or(call.response_id);
                    call.model_ref = model_ref.or(call.model_ref);
                    call.has_response |= has_response;
                    call.capture = Some(raw);
                    call.capture_at = Some(k);
                }
                None => calls.push(Call {
                    model_call_id: id,
                    response_id,
                    model_ref,
                    has_response,
                    stated: None,
                    capture: Some(raw),
                    capture_at: Some(k),
                }),
            }
        }
    }
    Some(calls)
}

struct Builder<'a> {
    calls: Vec<Entry<'a>>,
    unresolved: Vec<Unresolved<'a>>,
    index: CallIndex<'a>,
    capture_of: Vec<Option<Object<'a>>>,
    /// client_session_id -> positions of the calls carrying it.
    sessions: HashMap<&'a str, Vec<usize>>,
    /// model_call_id -> the last call holding it.
    by_id: HashMap<&'a str, usize>,
    /// Owners whose sessions' calls are claimed already: a repeat claims the same calls again.
    sessions_claimed: HashSet<&'a str>,
}

impl<'a> Builder<'a> {
    fn claim(
        &mut self,
        reference: Value<'a>,
        kind: Kind,
        owner: Option<&'a str>,
        place: Place,
        slot: usize,
    ) {
        let key = ref_key(reference);
        let claim = Claim {
            kind,
            owner,
            place,
            slot,
            names_id: key.is_some_and(|k| k.call_id.is_some()),
        };
        let reason = match self.index.matches(key) {
            None => Reason::Unjoinable,
            Some([one]) => {
                self.calls[*one].claims.push(claim);
                return;
            }
            Some([]) => Reason::Unmatched,
            Some(_) => Reason::Ambiguous,
        };
        self.unresolved.push(Unresolved { claim, key, reason });
    }

    fn agent_claims(&mut self, owner: Option<&'a str>, refs: Option<Value<'a>>, place: Place) {
        for (j, reference) in list(refs).enumerate() {
            self.claim(reference, Kind::Agent, owner, place, j);
        }
        // NeMo Gym's session auto-ownership: a call whose client session names this invocation.
        let Some(owner) = owner else { return };
        if !self.sessions_claimed.insert(owner) {
            return;
        }
        for &position in self.sessions.get(owner).map_or(&[][..], Vec::as_slice) {
            let raw = self.capture_of[position].expect("a session is read from a captured call");
            let named = string(raw.get("model_call_id")).and_then(|id| self.by_id.get(id));
            if named == Some(&position) {
                let at = self.calls[position].capture.unwrap_or(0);
                self.calls[position].claims.push(Claim {
                    kind: Kind::Session,
                    owner: Some(owner),
                    place: Place::Capture(at),
                    slot: 0,
                    names_id: true,
                });
            }
        }
    }
}

/// The row's ledger, or None when the row holds a call the core cannot tell is in the build.
pub fn build(row: Object<'_>) -> Option<Ledger<'_>> {
    let made = calls(row)?;
    let mut capture_of = Vec::with_capacity(made.len());
    let mut entries = Vec::with_capacity(made.len());
    for call in made {
        capture_of.push(call.capture);
        entries.push(Entry {
            model_call_id: call.model_call_id.filter(|id| !id.is_empty()),
            response_id: call.response_id.filter(|id| !id.is_empty()),
            server: server_key(call.model_ref),
            has_response: call.has_response,
            stated: call.stated,
            capture: call.capture_at,
            claims: Vec::new(),
        });
    }
    let mut sessions: HashMap<&str, Vec<usize>> = HashMap::default();
    for (position, raw) in capture_of.iter().enumerate() {
        if let Some(session) = raw.and_then(|raw| string(raw.get("client_session_id"))) {
            sessions.entry(session).or_default().push(position);
        }
    }
    let mut by_id = HashMap::default();
    for (position, entry) in entries.iter().enumerate() {
        if let Some(id) = entry.model_call_id {
            by_id.insert(id, position);
        }
    }
    let index = CallIndex::new(&entries);
    let mut b = Builder {
        calls: entries,
        unresolved: Vec::new(),
        index,
        capture_of,
        sessions,
        by_id,
        sessions_claimed: HashSet::default(),
    };
    let stated = object(row.get(STATED));
    if let Some(stated) = stated {
        for (i, inv) in objects(stated.get("invocations")) {
            b.agent_claims(
                string(inv.get("invocation_id")),
                inv.get("model_calls"),
                Place::StatedInvocation(i),
            );
        }
    }
    if let Some(bundle) = object(row.get(OBSERVATIONS)) {
        for (i, record) in objects(bundle.get("records")) {
            let owner = string(record.get("invocation_id"));
            let place = Place::Record(i);
            match string(record.get("kind")) {
                Some("agent_invocation") => b.agent_claims(owner, record.get("model_calls"), place),
                Some("context_compaction") => {
                    for (j, reference) in list(record.get("model_calls")).enumerate() {
                        b.claim(reference, Kind::Compaction, owner, place, j);
                    }
                    for (name, kind) in [
                        ("before_model_call", Kind::CompactionBefore),
                        ("after_model_call", Kind::CompactionAfter),
                    ] {
                        if let Some(reference) = record.get(name).filter(|r| !r.is_null()) {
                            b.claim(reference, kind, owner, place, 0);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(verifiers) = row.get(VERIFIERS).and_then(Value::as_array) {
        for (i, verifier) in verifiers.iter().enumerate() {
            let Some(verifier) = verifier.as_object() else {
                continue;
            };
            let owner = string(verifier.get("invocation_id"));
            for (j, reference) in list(verifier.get("model_calls")).enumerate() {
                b.claim(reference, Kind::Verifier, owner, Place::Verifier(i), j);
            }
        }
    }
    for position in 0..b.calls.len() {
        let verifier =
            b.capture_of[position].and_then(|raw| text(raw.get("verifier_invocation_id")));
        if let Some(verifier) = verifier {
            let at = b.calls[position].capture.unwrap_or(0);
            b.calls[position].claims.push(Claim {
                kind: Kind::Verifier,
                owner: Some(verifier),
                place: Place::Capture(at),
                slot: 0,
                names_id: true,
            });
        }
    }
    if let Some(stated) = stated {
        for (t, turn) in objects(stated.get("turns")) {
            let owner = string(turn.get("invocation_id"));
            for (j, reference) in list(turn.get("model_calls")).enumerate() {
                b.claim(reference, Kind::Turn, owner, Place::StatedTurn(t), j);
            }
        }
    }
    Some(Ledger {
        calls: b.calls,
        unresolved: b.unresolved,
        index: b.index,
    })
}

/// An agent invocation (a stated one, or an observed record of kind `agent_invocation`) that the
/// build keeps as valid (`AgentInvocation` as written, no value NeMo Gym's lax reading would
/// change), so that its claims are `Claim.valid` in Python and an observed one takes part in the
/// join. Its conversation is only required to be a list: the build drops the items that fail
/// their schema and keeps the invocation. False means "not proved valid", not "invalid".
pub fn proved_valid_invocation(invocation: Object<'_>) -> bool {
    let mut named = false;
    for (key, value) in invocation {
        let v = Some(value);
        let ok = match key {
            "kind" => value.as_str() == Some("agent_invocation"),
            "invocation_id" => {
                named = value.is_string();
                named
            }
            "parent_invocation_id" | "spawned_by_tool_call_id" | "error_type" => {
                null_or(v, is_string)
            }
            "status" => matches!(
                value.as_str(),
                Some("completed" | "failed" | "incomplete" | "unknown")
            ),
            "duration_ms" => null_or(v, is_nonnegative),
            "model_calls" => value
                .as_array()
                .is_some_and(|refs| refs.iter().all(proved_valid_ref)),
            "conversation" => value.is_array(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    named
}

/// A `ModelCallRef` as the schema takes it: its three keys, and a join key (a non-empty id, or a
/// model server object with a non-empty response id).
fn proved_valid_ref(reference: Value<'_>) -> bool {
    let Some(map) = reference.as_object() else {
        return false;
    };
    let fields_ok = map.iter().all(|(key, value)| match key {
        "model_call_id" | "response_id" => null_or(Some(value), is_string),
        "model_ref" => null_or(Some(value), |r| {
            r.as_object().is_some_and(|r| {
                r.get("type").and_then(Value::as_str) == Some("responses_api_models")
                    && r.get("name").is_some_and(Value::is_string)
            })
        }),
        _ => false,
    });
    let nonempty = |key| {
        map.get(key)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    fields_ok
        && (nonempty("model_call_id")
            || (map.get("model_ref").is_some_and(Value::is_object) && nonempty("response_id")))
}

/// Whether the row holds an agent invocation anywhere (Python `walk.invocations`): observed
/// records of kind `agent_invocation`, or stated invocations.
pub fn holds_invocations(row: Object<'_>) -> bool {
    let observed = object(row.get(OBSERVATIONS)).is_some_and(|bundle| {
        objects(bundle.get("records"))
            .any(|(_, r)| string(r.get("kind")) == Some("agent_invocation"))
    });
    observed
        || object(row.get(STATED)).is_some_and(|s| objects(s.get("invocations")).next().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(text: &str) -> Object<'static> {
        crate::build::parsed(text).as_object().unwrap()
    }

    #[test]
    fn a_stated_call_merges_with_its_capture_and_both_claims_join_it() {
        let row = row(r#"{
            "ng_trajectory": {"model_calls": [{"model_call_id": "a", "response_metadata": {"response_id": "r"}}],
                              "turns": [{"invocation_id": "i", "model_calls": [{"model_call_id": "a"}]}]},
            "ng_model_call_capture": {"calls": [{"model_call_id": "a", "response": {}}, {"model_call_id": "b"}]},
            "ng_agent_observations": {"records": [{"kind": "agent_invocation", "invocation_id": "i",
                                                   "model_calls": [{"model_call_id": "a"}, "x", {"model_call_id": "z"}]}]}
        }"#);
        let ledger = build(row).unwrap();
        assert_eq!(ledger.calls.len(), 2);
        let a = &ledger.calls[0];
        assert_eq!(
            (a.stated, a.capture, a.response_id, a.has_response),
            (Some(0), Some(0), Some("r"), true)
        );
        let kinds: Vec<Kind> = a.claims.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [Kind::Agent, Kind::Turn]);
        let reasons: Vec<Reason> = ledger.unresolved.iter().map(|u| u.reason).collect();
        assert_eq!(reasons, [Reason::Unjoinable, Reason::Unmatched]);
    }

    #[test]
    fn a_stated_call_not_proved_valid_gives_no_ledger() {
        let row = row(
            r#"{"ng_trajectory": {"model_calls": [{"model_call_id": "a", "started_at": "1.5"}]}}"#,
        );
        assert!(build(row).is_none());
    }

    #[test]
    fn references_to_a_shared_id_share_one_answer() {
        let calls: Vec<String> = (0..3)
            .map(|i| format!(r#"{{"model_call_id": "same", "response_id": "r{i}"}}"#))
            .collect();
        let text = format!(
            r#"{{"ng_model_call_capture": {{"calls": [{}]}}, "ng_verifier_invocations": [{{"invocation_id": "v", "model_calls": [{{"model_call_id": "same"}}, {{"model_call_id": "same", "response_id": "r1"}}]}}]}}"#,
            calls.join(",")
        );
        let row = row(&text);
        let ledger = build(row).unwrap();
        assert_eq!(ledger.unresolved.len(), 1);
        assert_eq!(ledger.candidates(ledger.unresolved[0].key), [0, 1, 2]);
        assert_eq!(ledger.calls[1].claims[0].kind, Kind::Verifier);
    }

    #[test]
    fn a_session_claims_the_last_call_of_its_id_once_per_owner() {
        let row = row(r#"{
            "ng_model_call_capture": {"calls": [{"model_call_id": "a", "client_session_id": "i"},
                                                {"model_call_id": "a", "client_session_id": "i"}]},
            "ng_agent_observations": {"records": [{"kind": "agent_invocation", "invocation_id": "i"},
                                                  {"kind": "agent_invocation", "invocation_id": "i"}]}
        }"#);
        let ledger = build(row).unwrap();
        assert!(ledger.calls[0].claims.is_empty());
        let kinds: Vec<Kind> = ledger.calls[1].claims.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [Kind::Session]);
        assert!(holds_invocations(row));
    }
}
