//! A typed skeleton of a rollout row: the fields the rules read, strings borrowed from the line
//! where they hold no escape, and `IgnoredAny` (parsed, never built) for the bulky parts no rule
//! reads (message text, tool arguments, request and response bodies). Unknown keys are skipped.

#![allow(dead_code)]

use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

type Text<'a> = Option<Cow<'a, str>>;

/// An identity value: whatever scalar the row holds.
pub enum Scalar<'a> {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(Cow<'a, str>),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Scalar<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scalar")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Scalar::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Scalar::I64(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Scalar::U64(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Scalar::F64(v))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Scalar::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Scalar::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
        }
        de.deserialize_any(V(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
pub struct Row<'a> {
    #[serde(borrow)]
    _ng_task_index: Option<Scalar<'a>>,
    #[serde(borrow)]
    _ng_rollout_index: Option<Scalar<'a>>,
    #[serde(borrow)]
    _ng_rollout_id: Option<Scalar<'a>>,
    #[serde(borrow)]
    _ng_attempt_index: Option<Scalar<'a>>,
    #[serde(borrow)]
    _ng_task_id: Option<Scalar<'a>>,
    #[serde(borrow)]
    task_id: Option<Scalar<'a>>,
    #[serde(borrow)]
    problem_id: Option<Scalar<'a>>,
    #[serde(borrow)]
    instance_id: Option<Scalar<'a>>,
    #[serde(borrow)]
    stage_index: Option<Scalar<'a>>,
    reward: Option<f64>,
    #[serde(borrow)]
    response: Option<Response<'a>>,
    #[serde(borrow)]
    ng_model_call_capture: Option<Capture<'a>>,
    #[serde(borrow)]
    ng_trajectory: Option<Trajectory<'a>>,
    #[serde(borrow)]
    ng_agent_observations: Option<Observations<'a>>,
    #[serde(borrow)]
    ng_verifier_invocations: Option<Vec<Verifier<'a>>>,
}

#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow)]
    id: Text<'a>,
    usage: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct ModelRef<'a> {
    #[serde(borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(borrow)]
    name: Text<'a>,
}

#[derive(Deserialize)]
struct CallRef<'a> {
    #[serde(borrow)]
    model_call_id: Text<'a>,
    #[serde(borrow)]
    model_ref: Option<ModelRef<'a>>,
    #[serde(borrow)]
    response_id: Text<'a>,
}

#[derive(Deserialize)]
struct Capture<'a> {
    #[serde(borrow)]
    rollout_id: Text<'a>,
    metrics: Option<Metrics>,
    #[serde(borrow)]
    calls: Option<Vec<Call<'a>>>,
}

#[derive(Deserialize)]
struct Metrics {
    tokens_in: Option<i64>,
    tokens_out: Option<i64>,
    tokens_reasoning: Option<i64>,
    tokens_total: Option<i64>,
    cached_tokens: Option<i64>,
    latency_total_ms: Option<f64>,
    num_calls: Option<i64>,
}

#[derive(Deserialize)]
struct Call<'a> {
    #[serde(borrow)]
    model_call_id: Text<'a>,
    #[serde(borrow)]
    response_id: Text<'a>,
    #[serde(borrow)]
    client_session_id: Text<'a>,
    call_index: Option<i64>,
    #[serde(borrow)]
    model_ref: Option<ModelRef<'a>>,
    #[serde(borrow)]
    model: Text<'a>,
    #[serde(borrow)]
    dialect: Text<'a>,
    status_code: Option<i64>,
    #[serde(borrow)]
    response_status: Text<'a>,
    #[serde(borrow)]
    finish_reason: Text<'a>,
    upstream_attempted: Option<bool>,
    #[serde(borrow)]
    response_source: Text<'a>,
    upstream_status_code: Option<i64>,
    #[serde(borrow)]
    local_response_reason: Text<'a>,
    started_at: Option<f64>,
    completed_at: Option<f64>,
    tokens_in: Option<i64>,
    tokens_out: Option<i64>,
    tokens_reasoning: Option<i64>,
    tokens_total: Option<i64>,
    #[serde(borrow)]
    tool_calls: Option<Vec<ToolCall<'a>>>,
    cache_hit: Option<bool>,
    cached_tokens: Option<i64>,
    cache_creation_tokens: Option<i64>,
    #[serde(borrow)]
    error_category: Text<'a>,
    latency_total_ms: Option<f64>,
    latency_ttft_ms: Option<f64>,
}

#[derive(Deserialize)]
struct ToolCall<'a> {
    #[serde(borrow)]
    call_id: Text<'a>,
    #[serde(borrow)]
    name: Text<'a>,
    arguments: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Trajectory<'a> {
    #[serde(borrow)]
    schema_version: Text<'a>,
    #[serde(borrow)]
    task_id: Text<'a>,
    #[serde(borrow)]
    rollout_id: Text<'a>,
    #[serde(borrow)]
    invocations: Option<Vec<Invocation<'a>>>,
    #[serde(borrow)]
    turns: Option<Vec<Turn<'a>>>,
    #[serde(borrow)]
    model_calls: Option<Vec<TrajectoryCall<'a>>>,
}

#[derive(Deserialize)]
struct Invocation<'a> {
    #[serde(borrow)]
    kind: Text<'a>,
    #[serde(borrow)]
    invocation_id: Text<'a>,
    #[serde(borrow)]
    parent_invocation_id: Text<'a>,
    #[serde(borrow)]
    spawned_by_tool_call_id: Text<'a>,
    #[serde(borrow)]
    status: Text<'a>,
    duration_ms: Option<f64>,
    #[serde(borrow)]
    error_type: Text<'a>,
    #[serde(borrow)]
    model_calls: Option<Vec<CallRef<'a>>>,
}

#[derive(Deserialize)]
struct Turn<'a> {
    #[serde(borrow)]
    invocation_id: Text<'a>,
    #[serde(borrow)]
    task_id: Text<'a>,
    #[serde(borrow)]
    rollout_id: Text<'a>,
    turn_no: Option<i64>,
    timestamp: Option<f64>,
    step_count: Option<i64>,
    #[serde(borrow)]
    model_calls: Option<Vec<CallRef<'a>>>,
}

#[derive(Deserialize)]
struct TrajectoryCall<'a> {
    #[serde(borrow)]
    model_call_id: Text<'a>,
    started_at: Option<f64>,
    completed_at: Option<f64>,
    duration_ms: Option<f64>,
    #[serde(borrow)]
    response_metadata: Option<ResponseMetadata<'a>>,
    token_stats: Option<TokenStats>,
}

#[derive(Deserialize)]
struct ResponseMetadata<'a> {
    #[serde(borrow)]
    response_id: Text<'a>,
    #[serde(borrow)]
    model_ref: Option<ModelRef<'a>>,
    #[serde(borrow)]
    model: Text<'a>,
    status_code: Option<i64>,
    #[serde(borrow)]
    finish_reason: Text<'a>,
    latency_ttft_ms: Option<f64>,
}

#[derive(Deserialize)]
struct TokenStats {
    prompt_tokens: Option<i64>,
    completion_tokens: Option<i64>,
    reasoning_tokens: Option<i64>,
    total_tokens: Option<i64>,
    cached_tokens: Option<i64>,
}

#[derive(Deserialize)]
struct Observations<'a> {
    #[serde(borrow)]
    source: Text<'a>,
    #[serde(borrow)]
    records: Option<Vec<Record<'a>>>,
    #[serde(borrow)]
    gaps: Option<Vec<Gap<'a>>>,
}

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(borrow)]
    kind: Text<'a>,
    #[serde(borrow)]
    invocation_id: Text<'a>,
    #[serde(borrow)]
    tool_call_id: Text<'a>,
    #[serde(borrow)]
    sandbox_id: Text<'a>,
    #[serde(borrow)]
    tool_name: Text<'a>,
    started_at: Option<f64>,
    completed_at: Option<f64>,
    duration_ms: Option<f64>,
    #[serde(borrow)]
    timing_source: Text<'a>,
    #[serde(borrow)]
    status: Text<'a>,
    #[serde(borrow)]
    error_type: Text<'a>,
}

#[derive(Deserialize)]
struct Gap<'a> {
    #[serde(borrow)]
    code: Text<'a>,
    #[serde(borrow)]
    invocation_id: Text<'a>,
    #[serde(borrow)]
    detail: Text<'a>,
}

#[derive(Deserialize)]
struct Verifier<'a> {
    #[serde(borrow)]
    invocation_id: Text<'a>,
    #[serde(borrow)]
    verifier_name: Text<'a>,
    #[serde(borrow)]
    status: Text<'a>,
    #[serde(borrow)]
    model_calls: Option<Vec<CallRef<'a>>>,
    started_at: Option<f64>,
    completed_at: Option<f64>,
    duration_ms: Option<f64>,
}
