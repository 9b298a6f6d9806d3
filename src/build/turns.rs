//! The turns the evidence supports (`_Builder.turns` in trajlint.builder.steps): each call of the
//! ledger that an agent invocation owns, that no verifier or compaction claims and that returned
//! a response, with what its response holds (`trajlint.builder.dialects.turn_content`) and the
//! tool calls its invocation made before it.
//!
//! Python gives a call's turn to the first valid agent claimant, or to a later one whose
//! reference names the call's id. The core models only calls that one invocation claims (all of
//! its claims standing in invocations proved valid, `ledger::proved_valid_invocation`, which the
//! caller checks): `expected` answers None for a call claimed by two.

use crate::hash::HashMap;

use crate::build::ledger::{list, object, CAPTURE, STATED};
use crate::build::ledger::{Entry, Kind, Ledger};
use crate::doc::{Json, Object, Value};

/// What a response holds, as a turn reads it: whether its answer and its reasoning are empty
/// (Python `_empty`), and how many tool calls it makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Content {
    pub answer: bool,
    pub reasoning: bool,
    pub tool_calls: u64,
}

/// A turn the evidence supports.
#[derive(Clone, Copy, Debug)]
pub struct Turn<'a> {
    pub owner: &'a str,
    /// The tool calls of the owner's earlier turns (the turn's `step_count`).
    pub steps: u64,
    pub content: Content,
}

/// Python truthiness of a JSON value (absent reads as None).
pub fn truthy(value: Option<Value<'_>>) -> bool {
    match value.map(Value::view) {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => b,
        Some(Json::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        Some(Json::String(s)) => !s.is_empty(),
        Some(Json::Array(items)) => !items.is_empty(),
        Some(Json::Object(map)) => !map.is_empty(),
    }
}

/// Python `_empty` of trajlint.check.rules.drift: None, or an empty list, object or string.
pub fn empty(value: Option<Value<'_>>) -> bool {
    match value.map(Value::view) {
        None | Some(Json::Null) => true,
        Some(Json::String(s)) => s.is_empty(),
        Some(Json::Array(items)) => items.is_empty(),
        Some(Json::Object(map)) => map.is_empty(),
        Some(Json::Bool(_) | Json::Number(_)) => false,
    }
}

fn kind_is(item: Object<'_>, kind: &str) -> bool {
    item.get("type").and_then(Value::as_str) == Some(kind)
}

/// `turn_content` of a response, in the three dialects: Responses `output` items, Chat
/// Completions `choices[0].message`, Anthropic Messages `content` blocks; any other shape is a
/// hollow turn.
pub fn content(response: Option<Value<'_>>) -> Content {
    let Some(response) = response.and_then(Value::as_object) else {
        return Content::default();
    };
    if let Some(output) = response.get("output").and_then(Value::as_array) {
        let items = output.iter().filter_map(Value::as_object);
        let mut found = Content::default();
        for item in items {
            if kind_is(item, "reasoning") {
                found.reasoning = true;
            } else {
                found.answer = true;
                found.tool_calls += u64::from(kind_is(item, "function_call"));
            }
        }
        return found;
    }
    if let Some(choices) = response.get("choices").and_then(Value::as_array) {
        if let Some(choice) = choices.first().and_then(Value::as_object) {
            let message = choice.get("message");
            let Some(message) = (if truthy(message) { message } else { None }) else {
                return Content::default(); // `or {}`: an empty message
            };
            let Some(message) = message.as_object() else {
                return Content::default();
            };
            let first = message.get("reasoning_content");
            let reasoning = if truthy(first) {
                first
            } else {
                message.get("reasoning")
            };
            return Content {
                answer: message
                    .keys()
                    .any(|k| k != "reasoning_content" && k != "reasoning"),
                reasoning: !empty(reasoning),
                tool_calls: message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .map_or(0, |calls| calls.len() as u64),
            };
        }
    }
    if let Some(blocks) = response.get("content").and_then(Value::as_array) {
        let mut found = Content::default();
        for block in blocks.iter().filter_map(Value::as_object) {
            if kind_is(block, "thinking") || kind_is(block, "redacted_thinking") {
                found.reasoning = true;
            } else {
                found.answer = true;
                found.tool_calls += u64::from(kind_is(block, "tool_use"));
            }
        }
        return found;
    }
    Content::default()
}

fn present(value: Option<Value<'_>>) -> Option<Value<'_>> {
    value.filter(|v| !v.is_null())
}

/// The model calls the ledger's positions index: the stated trajectory's `model_calls` and the
/// capture's `calls`, each item at its position (an empty list when the section holds none).
pub struct Calls<'a> {
    pub stated: Vec<Value<'a>>,
    pub captured: Vec<Value<'a>>,
}

impl<'a> Calls<'a> {
    pub fn of(row: Object<'a>) -> Self {
        let part = |section: &str, key: &str| -> Vec<Value<'a>> {
            list(object(row.get(section)).and_then(|s| s.get(key))).collect()
        };
        Calls {
            stated: part(STATED, "model_calls"),
            captured: part(CAPTURE, "calls"),
        }
    }
}

/// The response of a call of the build: the captured one's (`response`, else `response_raw`),
/// else the stated call's.
pub fn response<'a>(calls: &Calls<'a>, entry: &Entry) -> Option<Value<'a>> {
    let captured = entry.capture.and_then(|k| {
        let raw = calls.captured.get(k)?.as_object()?;
        present(raw.get("response")).or_else(|| present(raw.get("response_raw")))
    });
    captured.or_else(|| {
        let i = entry.stated?;
        let call = calls.stated.get(i)?.as_object()?;
        present(call.get("response"))
    })
}

/// The expected turn of each call of the ledger (None for a call that is no turn), or None when
/// some call's owner is not modelled: two invocations claim it, or an invocation with an empty
/// id (which Python's turn owner skips but its claimants list counts).
pub fn expected<'a>(row: Object<'a>, ledger: &Ledger<'a>) -> Option<Vec<Option<Turn<'a>>>> {
    let calls = Calls::of(row);
    let mut steps: HashMap<&str, u64> = HashMap::default();
    let mut turns = Vec::with_capacity(ledger.calls.len());
    for entry in &ledger.calls {
        if entry.claimed_as(Kind::Verifier) || entry.claimed_as(Kind::Compaction) {
            turns.push(None);
            continue;
        }
        let mut owner = None;
        for claim in entry.claims.iter().filter(|c| c.kind.is_agent()) {
            match claim.owner {
                None => {}
                Some("") => return None,
                Some(o) if owner.is_some_and(|known| known != o) => return None,
                Some(o) => owner = Some(o),
            }
        }
        let Some(owner) = owner.filter(|_| entry.has_response) else {
            turns.push(None);
            continue;
        };
        let content = content(response(&calls, entry));
        let before = steps.entry(owner).or_insert(0);
        turns.push(Some(Turn {
            owner,
            steps: *before,
            content,
        }));
        *before = before.saturating_add(content.tool_calls);
    }
    Some(turns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::parsed;

    #[test]
    fn the_three_dialects() {
        let responses =
            parsed(r#"{"output": [{"type": "reasoning"}, {"type": "function_call"}, "x"]}"#);
        assert_eq!(
            content(Some(responses)),
            Content {
                answer: true,
                reasoning: true,
                tool_calls: 1
            }
        );
        let chat = parsed(
            r#"{"choices": [{"message": {"reasoning_content": "", "reasoning": "r", "tool_calls": [1, 2]}}]}"#,
        );
        assert_eq!(
            content(Some(chat)),
            Content {
                answer: true,
                reasoning: true,
                tool_calls: 2
            }
        );
        let only_reasoning = parsed(r#"{"choices": [{"message": {"reasoning_content": 0}}]}"#);
        assert_eq!(content(Some(only_reasoning)), Content::default());
        let falsy = parsed(r#"{"choices": [{"message": {"reasoning": 0}}]}"#);
        assert_eq!(
            content(Some(falsy)),
            Content {
                answer: false,
                reasoning: true,
                tool_calls: 0
            }
        );
        let messages = parsed(r#"{"content": [{"type": "thinking"}, {"type": "tool_use"}]}"#);
        assert_eq!(
            content(Some(messages)),
            Content {
                answer: true,
                reasoning: true,
                tool_calls: 1
            }
        );
        assert_eq!(
            content(Some(parsed(r#"{"output": {}, "choices": []}"#))),
            Content::default()
        );
        assert_eq!(
            content(Some(parsed(r#"{"choices": [{"message": []}]}"#))),
            Content::default()
        );
        assert_eq!(
            content(Some(parsed(r#"{"choices": [{"message": "hi"}]}"#))),
            Content::default()
        );
    }
}
