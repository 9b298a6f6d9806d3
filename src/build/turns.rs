//! The turns the evidence supports (`_Builder.turns` in trajlint.builder.steps): each call of the
//! ledger that an agent invocation owns, that no verifier or compaction claims and that returned
//! a response, with what its response holds (`trajlint.builder.dialects.turn_content`) and the
//! tool calls its invocation made before it.
//!
//! Python gives a call's turn to the first valid agent claimant, or to a later one whose
//! reference names the call's id. The core models only calls that one invocation claims (all of
//! its claims standing in invocations proved valid, `ledger::proved_valid_invocation`, which the
//! caller checks): `expected` answers None for a call claimed by two.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::build::ledger::{object, CAPTURE, STATED};
use crate::build::ledger::{Entry, Kind, Ledger};

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
pub fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(items)) => !items.is_empty(),
        Some(Value::Object(map)) => !map.is_empty(),
    }
}

/// Python `_empty` of trajlint.check.rules.drift: None, or an empty list, object or string.
pub fn empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(map)) => map.is_empty(),
        Some(Value::Bool(_) | Value::Number(_)) => false,
    }
}

fn kind_is(item: &Map<String, Value>, kind: &str) -> bool {
    item.get("type").and_then(Value::as_str) == Some(kind)
}

/// `turn_content` of a response, in the three dialects: Responses `output` items, Chat
/// Completions `choices[0].message`, Anthropic Messages `content` blocks; any other shape is a
/// hollow turn.
pub fn content(response: Option<&Value>) -> Content {
    let Some(Value::Object(response)) = response else {
        return Content::default();
    };
    if let Some(Value::Array(output)) = response.get("output") {
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
    if let Some(Value::Array(choices)) = response.get("choices") {
        if let Some(Value::Object(choice)) = choices.first() {
            let message = choice.get("message");
            let Some(message) = (if truthy(message) { message } else { None }) else {
                return Content::default(); // `or {}`: an empty message
            };
            let Value::Object(message) = message else {
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
                tool_calls: match message.get("tool_calls") {
                    Some(Value::Array(calls)) => calls.len() as u64,
                    _ => 0,
                },
            };
        }
    }
    if let Some(Value::Array(blocks)) = response.get("content") {
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

fn present(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

/// The response of a call of the build: the captured one's (`response`, else `response_raw`),
/// else the stated call's.
pub fn response<'a>(row: &'a Map<String, Value>, entry: &Entry) -> Option<&'a Value> {
    let captured = entry.capture.and_then(|k| {
        let raw = object(row.get(CAPTURE))?
            .get("calls")?
            .get(k)?
            .as_object()?;
        present(raw.get("response")).or_else(|| present(raw.get("response_raw")))
    });
    captured.or_else(|| {
        let i = entry.stated?;
        let call = object(row.get(STATED))?
            .get("model_calls")?
            .get(i)?
            .as_object()?;
        present(call.get("response"))
    })
}

/// The expected turn of each call of the ledger (None for a call that is no turn), or None when
/// some call's owner is not modelled: two invocations claim it, or an invocation with an empty
/// id (which Python's turn owner skips but its claimants list counts).
pub fn expected<'a>(
    row: &'a Map<String, Value>,
    ledger: &Ledger<'a>,
) -> Option<Vec<Option<Turn<'a>>>> {
    let mut steps: HashMap<&str, u64> = HashMap::new();
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
        let content = content(response(row, entry));
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
    use serde_json::json;

    #[test]
    fn the_three_dialects() {
        let responses = json!({"output": [{"type": "reasoning"}, {"type": "function_call"}, "x"]});
        assert_eq!(
            content(Some(&responses)),
            Content {
                answer: true,
                reasoning: true,
                tool_calls: 1
            }
        );
        let chat = json!({"choices": [{"message": {"reasoning_content": "", "reasoning": "r", "tool_calls": [1, 2]}}]});
        assert_eq!(
            content(Some(&chat)),
            Content {
                answer: true,
                reasoning: true,
                tool_calls: 2
            }
        );
        let only_reasoning = json!({"choices": [{"message": {"reasoning_content": 0}}]});
        assert_eq!(content(Some(&only_reasoning)), Content::default());
        let falsy = json!({"choices": [{"message": {"reasoning": 0}}]});
        assert_eq!(
            content(Some(&falsy)),
            Content {
                answer: false,
                reasoning: true,
                tool_calls: 0
            }
        );
        let messages = json!({"content": [{"type": "thinking"}, {"type": "tool_use"}]});
        assert_eq!(
            content(Some(&messages)),
            Content {
                answer: true,
                reasoning: true,
                tool_calls: 1
            }
        );
        assert_eq!(
            content(Some(&json!({"output": {}, "choices": []}))),
            Content::default()
        );
        assert_eq!(
            content(Some(&json!({"choices": [{"message": []}]}))),
            Content::default()
        );
        assert_eq!(
            content(Some(&json!({"choices": [{"message": "hi"}]}))),
            Content::default()
        );
    }
}
