"""trajlint's contract against NeMo Gym 0.7.0, probe by probe.

A probe is a valid row with one field changed. Each is judged by trajlint (the errors and
warnings it reports, by code) and, when NeMo Gym 0.7.0's venv is available, by NeMo Gym itself
(`tools/nemo_gym_probe.py`: its section models, its collector's builder, its health check), so
the table records both verdicts side by side and the NeMo Gym column is checked, not assumed.

The policy the expectations follow: an error where NeMo Gym rejects, drops or misreads the data;
a warning where it accepts a form its own writers never write; nothing where its writers write
it. Where NeMo Gym drops a whole section, trajlint keeps what validates and its other rules may
warn about what the dropped item leaves behind (a reference that no longer matches a call);
those warnings are recorded here as they are. The base rows come from a row NeMo Gym 0.7.0's own collector wrote
(`tests/data/real/nemo-gym-0.7.0-writers/legacy_rollouts.jsonl`, line 1): whole, and with only
some of its sections.
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from trajlint.check.registry import load_rules
from trajlint.check.select import rule_set
from trajlint.contract import lax

from .conftest import ROOT
from .rule_rows import findings

GYM_PYTHON = Path("/tmp/nemo-gym-0.7-venv/bin/python")
WRITER_ROW = orjson.loads(
    (ROOT / "tests/data/real/nemo-gym-0.7.0-writers/legacy_rollouts.jsonl").read_bytes().splitlines()[0]
)
SECTIONS = ("ng_model_call_capture", "ng_agent_observations", "ng_trajectory", "ng_perf")


def _only(*kept: str) -> dict[str, Any]:
    return {k: v for k, v in WRITER_ROW.items() if k not in SECTIONS or k in kept}


BASES = {
    "row": _only(),  # the envelope alone: no section names the rollout, so its keys can change
    "cap": _only("ng_model_call_capture"),
    "obs": _only("ng_model_call_capture", "ng_agent_observations"),
    "traj": _only("ng_trajectory", "ng_perf"),
    "persisted": WRITER_ROW,
}


@dataclass(frozen=True)
class Probe:
    name: str
    base: str
    change: Callable[[dict[str, Any]], None]
    trajlint: frozenset[str]  # codes of its errors; "(w)" marks a warning
    nemo_gym: dict[str, Any]  # what tools/nemo_gym_probe.py reports for the row
    accepted: bool = False  # NeMo Gym 0.7.0 reads the row without loss: nothing is an error under its profile

    def row(self) -> dict[str, Any]:
        row = copy.deepcopy(BASES[self.base])
        self.change(row)
        return row


def _set(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(row: dict[str, Any]) -> None:
        node = row
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


def _drop(*path: Any) -> Callable[[dict[str, Any]], None]:
    def change(row: dict[str, Any]) -> None:
        node = row
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return change


def _append(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(row: dict[str, Any]) -> None:
        node = row
        for key in path:
            node = node[key]
        node.append(copy.deepcopy(value))

    return change


def _both(*changes: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def change(row: dict[str, Any]) -> None:
        for one in changes:
            one(row)

    return change


def _same(row: dict[str, Any]) -> None:
    pass


CAP = ("ng_model_call_capture",)
CALL0 = (*CAP, "calls", 0)
OBS = ("ng_agent_observations",)
INV = (*OBS, "records", 0)  # the agent invocation
TOOL = (*OBS, "records", 1)  # its tool call
TRAJ = ("ng_trajectory",)
TURN0 = (*TRAJ, "turns", 0)
TURN1 = (*TRAJ, "turns", 1)
MCALL0 = (*TRAJ, "model_calls", 0)
COMPACTION = {"kind": "context_compaction", "invocation_id": "inv_0-0", "outcome": "completed"}

# NeMo Gym's verdicts, as tools/nemo_gym_probe.py words them.
HEALTHY = "healthy"
UNOBSERVED = "unobserved"
UNREADABLE = "unhealthy: record_unreadable"
CRASH = "raises ValidationError"


def gym(
    capture="absent", observations="absent", trajectory="absent", build=(), health=UNOBSERVED,
    routing="arith_agent", episode_id="absent",
) -> dict:
    return {
        "capture": capture, "observations": observations, "trajectory": trajectory,
        "build": build if isinstance(build, str) else list(build), "health": health,
        "routing": routing, "episode_id": episode_id,
    }


CAP_GAPS = ("turns_unavailable", "conversation_unavailable")
ROW_GYM = gym(build=("model_calls_unavailable", *CAP_GAPS))
ROW_CRASH = {**ROW_GYM, "health": CRASH}  # the health check of the whole file fails on the row
ROW_UNINDEXED = {**ROW_GYM, "build": "raises KeyError"}
CAP_GYM = gym(capture="ok", build=CAP_GAPS)
OBS_GYM = gym(capture="ok", observations="ok", build=("turns_unavailable",))
OBS_DROPPED = gym(capture="ok", observations="rejects", build=("agent_observations_invalid", "turns_unavailable", "conversation_unavailable"))
TRAJ_GYM = gym(trajectory="ok", health=HEALTHY)
TRAJ_DROPPED = gym(trajectory="rejects", build=("producer_trajectory_invalid", "model_calls_unavailable", "turns_unavailable", "conversation_unavailable"), health=UNREADABLE)


def p(name, base, change, trajlint=(), nemo_gym=None, accepted=False) -> Probe:
    return Probe(name, base, change, frozenset(trajlint), nemo_gym, accepted)


PROBES = [
    # -- the base rows: clean ------------------------------------------------------------------
    p("base_row", "row", _same, (), ROW_GYM, True),
    p("base_cap", "cap", _same, (), CAP_GYM, True),
    p("base_obs", "obs", _same, (), OBS_GYM, True),
    p("base_traj", "traj", _same, (), TRAJ_GYM, True),
    p("base_persisted", "persisted", _same, (), gym("ok", "ok", "ok", (), HEALTHY), True),
    # -- B.1 the row envelope --------------------------------------------------------------------
    # #1 `_ng_task_index`: the collector writes the input's own value, unvalidated.
    p("R_task_index_string", "row", _set("_ng_task_index", value="7"), (), ROW_GYM, True),
    p("R_task_index_negative", "row", _set("_ng_task_index", value=-1), {"TL107(w)"}, ROW_GYM, True),
    p("R_task_index_bool", "row", _set("_ng_task_index", value=True), {"TL107(w)"}, ROW_GYM, True),
    p("R_task_index_float_integral", "row", _set("_ng_task_index", value=7.0), {"TL107(w)"}, ROW_GYM, True),
    p("R_task_index_float_fraction", "row", _set("_ng_task_index", value=7.5), {"TL101"}, ROW_CRASH),
    p("R_task_index_null", "row", _set("_ng_task_index", value=None), {"TL101"}, ROW_CRASH),
    p("R_task_index_object", "row", _set("_ng_task_index", value={"i": 7}), {"TL101"}, ROW_CRASH),
    # #1/#2 rows of NeMo Gym releases before 0.7 carry no indices: one warning per row.
    p("R_task_index_missing", "row", _drop("_ng_task_index"), {"TL101(w)"}, ROW_UNINDEXED),
    p("R_rollout_index_missing", "row", _drop("_ng_rollout_index"), {"TL101(w)"}, ROW_UNINDEXED),
    p("R_indices_missing", "row", _both(_drop("_ng_task_index"), _drop("_ng_rollout_index")), {"TL101(w)"}, ROW_UNINDEXED),
    p("R_rollout_index_string", "row", _set("_ng_rollout_index", value="3"), {"TL107(w)"}, ROW_GYM, True),
    p("R_rollout_index_float_fraction", "row", _set("_ng_rollout_index", value=2.5), {"TL101"}, ROW_CRASH),
    p("R_rollout_index_null", "row", _set("_ng_rollout_index", value=None), {"TL101"}, ROW_CRASH),
    # #3 attempt index: agrees (the episode body needs an int >= 0).
    p("R_attempt_index_null", "row", _set("_ng_attempt_index", value=None), {"TL101"}, ROW_GYM),
    p("R_attempt_index_string", "row", _set("_ng_attempt_index", value="1"), {"TL101"}, ROW_GYM),
    # #4 explicit rollout id: the capture-file pattern, and the reserved attempt suffix.
    p("R_rollout_id_leading_dot", "row", _set("_ng_rollout_id", value=".abc"), {"TL101"}, {**ROW_GYM, "build": "raises ValueError", "episode_id": "rejects"}),
    p("R_rollout_id_trailing_newline", "row", _set("_ng_rollout_id", value="abc\n"), {"TL101"}, {**ROW_GYM, "episode_id": "rejects"}),
    p("R_rollout_id_reserved_attempt_suffix", "row", _set("_ng_rollout_id", value="abc-a1"), {"TL101(w)"}, {**ROW_GYM, "episode_id": "rejects"}),
    p(
        "R_rollout_id_reserved_attempt_suffix_episode", "row",
        _both(_set("_ng_rollout_id", value="abc-a1"), _set("_ng_task_id", value={"taskset": "arith:demo", "task_id": "t1"})),
        {"TL101"}, {**ROW_GYM, "episode_id": "rejects"},
    ),
    p("R_rollout_id_attempt_like_but_not_reserved", "row", _set("_ng_rollout_id", value="abc-a0"), (), {**ROW_GYM, "episode_id": "ok"}, True),
    # #5 agent_ref: `{"name": X}` is what the collector writes; readers take only the name.
    p("R_agent_ref_name_only", "row", _set("agent_ref", value={"name": "arith_agent"}), (), ROW_GYM, True),
    p("R_agent_ref_with_type", "row", _set("agent_ref", value={"type": "responses_api_agents", "name": "a"}), (), {**ROW_GYM, "routing": "a"}, True),
    p("R_agent_ref_wrong_type", "row", _set("agent_ref", value={"type": "responses_api_models", "name": "a"}), (), {**ROW_GYM, "routing": "a"}, True),
    p("R_agent_ref_null", "row", _set("agent_ref", value=None), (), {**ROW_GYM, "routing": "env_legacy"}, True),
    p("R_agent_ref_absent", "row", _drop("agent_ref"), (), {**ROW_GYM, "routing": "env_legacy"}, True),
    p("R_agent_ref_string", "row", _set("agent_ref", value="arith_agent"), {"TL101"}, {**ROW_GYM, "routing": "raises AttributeError"}),
    p("R_agent_ref_name_number", "row", _set("agent_ref", value={"name": 5}), {"TL101"}, {**ROW_GYM, "routing": 5}),
    # #6 `_ng_task_id`: a TaskId object.
    p("R_ng_task_id_object", "row", _set("_ng_task_id", value={"taskset": "arith:demo", "task_id": "t1"}), (), ROW_GYM, True),
    p("R_ng_task_id_string", "row", _set("_ng_task_id", value="t1"), {"TL101"}, ROW_GYM),
    p("R_ng_task_id_extra_key", "row", _set("_ng_task_id", value={"taskset": "a", "task_id": "t", "x": 1}), {"TL101"}, ROW_GYM),
    p("R_ng_task_id_empty_taskset", "row", _set("_ng_task_id", value={"taskset": "", "task_id": "t"}), {"TL101"}, ROW_GYM),
    # #7-#14
    p("R_environment_server_null", "row", _set("_ng_environment_server", value=None), {"TL101"}, ROW_GYM),
    p("R_failure_message_null", "row", _set("_ng_failure_message", value=None), (), ROW_GYM, True),
    p("R_failure_stage_bogus", "row", _set("_ng_failure_stage", value="bogus"), {"TL101"}, ROW_GYM),
    p("R_failure_stage_null", "row", _set("_ng_failure_stage", value=None), (), ROW_GYM, True),
    p("R_failure_stage_verification", "row", _set("_ng_failure_stage", value="verification"), (), ROW_GYM, True),
    p("R_http_status_string", "row", _set("_ng_failure_http_status", value="502"), {"TL101"}, ROW_GYM),
    # #15 `resolved`: only a boolean becomes the turn's resolution.
    p("R_resolved_int", "row", _set("resolved", value=1), {"TL101(w)"}, ROW_GYM),
    p("R_resolved_string", "row", _set("resolved", value="yes"), {"TL101(w)"}, ROW_GYM),
    # #16, #21, #22
    p("R_stage_index_string", "row", _set("stage_index", value="1"), (), ROW_GYM, True),
    p("R_unknown_ng_key", "row", _set("_ng_unknown", value=1), (), ROW_GYM, True),
    # #19 ng_perf: written only when built; its reader skips a non-object.
    p("R_ng_perf_null", "traj", _set("ng_perf", value=None), {"TL107(w)"}, TRAJ_GYM, True),
    # -- B.3 the capture ---------------------------------------------------------------------------
    p("C_call_extra_key", "cap", _set(*CALL0, "extra", value=1), (), CAP_GYM, True),
    p("C_call_index_missing", "cap", _drop(*CALL0, "call_index"), {"TL102"}, {**CAP_GYM, "capture": "rejects"}),
    p(
        "C_gap_extra_key", "cap", _set(*CAP, "gaps", value=[{"code": "model_call_capture_incomplete", "x": 1}]),
        {"TL102", "TL503(w)"}, gym(capture="ok", build=("model_call_capture_gap_invalid", *CAP_GAPS)),
    ),
    p("C_latency_negative", "cap", _set(*CALL0, "latency_total_ms", value=-5.0), {"TL301"}, gym(capture="ok", build="raises ValidationError")),
    p("C_metrics_missing", "cap", _drop(*CAP, "metrics"), {"TL102"}, CAP_GYM),
    p("C_rollout_id_missing", "cap", _drop(*CAP, "rollout_id"), {"TL102"}, CAP_GYM),
    p("C_tokens_in_negative", "cap", _set(*CALL0, "tokens_in", value=-1), {"TL301"}, CAP_GYM),
    # #31: NeMo Gym's record rejects it (though no 0.7.0 reader validates a persisted call again).
    p("C_tool_calls_null", "cap", _set(*CALL0, "tool_calls", value=None), {"TL102"}, {**CAP_GYM, "capture": "rejects"}),
    # -- B.4 the observation bundle --------------------------------------------------------------
    # #17: null is absent, and NeMo Gym's single_agent_turn server writes it.
    p("O_null_bundle", "obs", _set(*OBS, value=None), (), CAP_GYM, True),
    p("O_null_bundle_persisted", "persisted", _set(*OBS, value=None), (), gym("ok", "absent", "ok", (), HEALTHY), True),
    p("O_duplicate_invocation", "obs", _append(*OBS, "records", value=WRITER_ROW["ng_agent_observations"]["records"][0]), {"TL403", "TL606(w)"}, OBS_DROPPED),
    p("O_extra_key_bundle", "obs", _set(*OBS, "extra", value=1), {"TL103"}, OBS_DROPPED),
    p("O_extra_key_invocation", "obs", _set(*INV, "extra", value=1), {"TL103"}, OBS_DROPPED),
    p("O_gap_extra_key", "obs", _set(*OBS, "gaps", value=[{"code": "turns_unavailable", "x": 1}]), {"TL103"}, OBS_DROPPED),
    p("O_invocation_id_int", "obs", _set(*INV, "invocation_id", value=5), {"TL103"}, OBS_DROPPED),
    p("O_missing_parent", "obs", _set(*INV, "parent_invocation_id", value="ghost"), {"TL408(w)"}, OBS_GYM),
    # #40: NeMo Gym's OpenCode and Claude Code agents write a subagent_parent_unavailable gap beside it.
    p(
        "O_missing_parent_explained", "obs",
        _both(_set(*INV, "parent_invocation_id", value="ghost"),
              _set(*OBS, "gaps", value=[{"code": "subagent_parent_unavailable", "invocation_id": "inv_0-0", "detail": "ghost"}])),
        (), {**OBS_GYM, "build": ["subagent_parent_unavailable", "turns_unavailable"]}, True,
    ),
    p("O_negative_duration", "obs", _set(*INV, "duration_ms", value=-1.0), {"TL301"}, OBS_DROPPED),
    p("O_parent_cycle", "obs", _set(*INV, "parent_invocation_id", value="inv_0-0"), {"TL407"}, OBS_DROPPED),
    p("O_record_unknown_kind", "obs", _set(*TOOL, "kind", value="bogus"), {"TL103"}, OBS_DROPPED),
    p("O_record_without_kind", "obs", _drop(*TOOL, "kind"), {"TL103"}, OBS_DROPPED),
    p("O_ref_empty_id", "obs", _set(*INV, "model_calls", 0, value={"model_call_id": ""}), {"TL103"}, OBS_DROPPED),
    p("O_ref_model_ref_extra_key", "obs", _set(*INV, "model_calls", 0, "model_ref", "extra", value=1), (), OBS_GYM, True),
    p("O_ref_model_ref_wrong_type", "obs", _set(*INV, "model_calls", 0, "model_ref", "type", value="responses_api_agents"), {"TL103", "TL207(w)"}, OBS_DROPPED),
    p("O_ref_response_id_only", "obs", _set(*INV, "model_calls", 0, value={"response_id": "resp_0-0_1"}), {"TL103"}, OBS_DROPPED),
    p("O_sandbox_role_missing", "obs", _append(*OBS, "records", value={"kind": "sandbox", "outcome": "completed"}), {"TL103"}, OBS_DROPPED),
    p("O_source_missing", "obs", _drop(*OBS, "source"), {"TL103"}, OBS_DROPPED),
    p("O_status_bad_enum", "obs", _set(*INV, "status", value="done"), {"TL103"}, OBS_DROPPED),
    p("O_tool_time_reversed", "obs", _set(*TOOL, "completed_at", value=1767225601.0), {"TL304"}, OBS_DROPPED),
    # #44: lax forms NeMo Gym's validation coerces, which its writers never write.
    p("O_duration_numeric_string", "obs", _set(*INV, "duration_ms", value="2950.0"), {"TL107(w)"}, OBS_GYM, True),
    p("O_started_at_numeric_string", "obs", _set(*TOOL, "started_at", value="1767225601.9"), {"TL107(w)"}, OBS_GYM, True),
    p("O_tokens_before_bool", "obs", _append(*OBS, "records", value={**COMPACTION, "tokens_before": True}), {"TL107(w)"}, OBS_GYM, True),
    p("O_tokens_before_float_integral", "obs", _append(*OBS, "records", value={**COMPACTION, "tokens_before": 900.0}), {"TL107(w)"}, OBS_GYM, True),
    p("O_tokens_before_numeric_string", "obs", _append(*OBS, "records", value={**COMPACTION, "tokens_before": "900"}), {"TL107(w)"}, OBS_GYM, True),
    p("O_tokens_before_float_fraction", "obs", _append(*OBS, "records", value={**COMPACTION, "tokens_before": 900.5}), {"TL302"}, OBS_DROPPED),
    p("O_tokens_before_negative_string", "obs", _append(*OBS, "records", value={**COMPACTION, "tokens_before": "-9"}), {"TL302"}, OBS_DROPPED),
    # -- B.5 the trajectory ----------------------------------------------------------------------
    # #18: a trajectory that is not an object is ignored by the builder; null is absent to the health check.
    p("T_null_trajectory", "traj", _set(*TRAJ, value=None), {"TL107(w)"}, gym(build=("model_calls_unavailable", *CAP_GAPS)), True),
    p("T_duplicate_model_call_id", "traj", _set(*TRAJ, "model_calls", 1, "model_call_id", value="mc_0-0_1"), {"TL402", "TL207(w)", "TL606(w)"}, TRAJ_DROPPED),
    p("T_metadata_extra_key", "traj", _set(*MCALL0, "response_metadata", "extra", value=1), {"TL104", "TL606(w)"}, TRAJ_DROPPED),
    p("T_prompt_tokens_negative", "traj", _set(*MCALL0, "token_stats", "prompt_tokens", value=-1), {"TL301", "TL606(w)"}, TRAJ_DROPPED),
    p("T_schema_version_1_1", "traj", _set(*TRAJ, "schema_version", value="1.1"), {"TL104"}, TRAJ_DROPPED),
    p("T_task_id_int", "traj", _set(*TRAJ, "task_id", value=5), {"TL104"}, TRAJ_DROPPED),
    p("T_turn_identity_mismatch", "traj", _set(*TURN0, "rollout_id", value="9-9"), {"TL405"}, TRAJ_DROPPED),
    p("T_turn_no_zero", "traj", _set(*TURN0, "turn_no", value=0), {"TL301", "TL608(w)"}, TRAJ_DROPPED),
    p("T_turn_timestamp_missing", "traj", _drop(*TURN0, "timestamp"), {"TL104", "TL608(w)"}, TRAJ_DROPPED),
    # #48, #49: lax forms the trajectory's validation coerces (and the health check then reads).
    p("T_prompt_tokens_float", "traj", _set(*MCALL0, "token_stats", "prompt_tokens", value=96.0), {"TL107(w)"}, TRAJ_GYM, True),
    p("T_prompt_tokens_numeric_string", "traj", _set(*MCALL0, "token_stats", "prompt_tokens", value="96"), {"TL107(w)"}, TRAJ_GYM, True),
    p("T_timestamp_string", "traj", _set(*TURN0, "timestamp", value="1767225601.0"), {"TL107(w)"}, TRAJ_GYM, True),
    p("T_turn_resolved_int", "traj", _set(*TURN1, "resolved", value=1), {"TL107(w)"}, TRAJ_GYM, True),
    p("T_turn_resolved_string", "traj", _set(*TURN1, "resolved", value="true"), {"TL107(w)"}, TRAJ_GYM, True),
    p("T_turn_step_count_float", "traj", _set(*TURN1, "step_count", value=1.0), {"TL107(w)"}, TRAJ_GYM, True),
    p("T_turn_step_count_numeric_string", "traj", _set(*TURN1, "step_count", value="1"), {"TL107(w)"}, TRAJ_GYM, True),
    p("T_turn_step_count_fraction", "traj", _set(*TURN1, "step_count", value=1.5), {"TL302", "TL608(w)"}, TRAJ_DROPPED),
    p("T_upstream_attempted_int", "traj", _set(*MCALL0, "response_metadata", "upstream_attempted", value=1), {"TL107(w)"}, TRAJ_GYM, True),
]


def _codes(found) -> set[str]:
    return {f.code + ("(w)" if f.severity == "warning" else "") for f in found if f.severity in ("error", "warning")}


@pytest.mark.parametrize("probe", PROBES, ids=lambda probe: probe.name)
def test_probe(probe, rules, tmp_path):
    assert _codes(findings([probe.row()], rules, tmp_path)) == probe.trajlint


@pytest.mark.parametrize("probe", [probe for probe in PROBES if probe.accepted], ids=lambda probe: probe.name)
def test_nemo_gym_profile_accepts_what_nemo_gym_reads_without_loss(probe, tmp_path):
    profiled = rule_set(load_rules(), profile="nemo-gym-0.7")
    found = findings([probe.row()], profiled, tmp_path)
    assert [f.code for f in found if f.severity in ("error", "warning")] == []


@pytest.fixture(scope="module")
def nemo_gym_verdicts() -> dict[str, dict[str, Any]]:
    if not GYM_PYTHON.exists():
        pytest.skip("NeMo Gym 0.7.0 venv not available")
    data = b"".join(orjson.dumps(probe.row()) + b"\n" for probe in PROBES)
    proc = subprocess.run(
        [str(GYM_PYTHON), str(ROOT / "tools" / "nemo_gym_probe.py")],
        input=data, capture_output=True, check=True, cwd="/tmp",
    )
    return {probe.name: orjson.loads(line) for probe, line in zip(PROBES, proc.stdout.splitlines(), strict=True)}


@pytest.mark.parametrize("probe", PROBES, ids=lambda probe: probe.name)
def test_nemo_gym_judges_the_probe_as_recorded(probe, nemo_gym_verdicts):
    assert nemo_gym_verdicts[probe.name] == probe.nemo_gym


# -- the pieces behind the table -------------------------------------------------------------------


def test_a_row_without_its_indices_gets_one_warning(rules, tmp_path):
    rows = [next(p for p in PROBES if p.name == name).row() for name in ("R_indices_missing", "R_task_index_missing")]
    found = [f for f in findings(rows, rules, tmp_path) if f.severity != "info"]
    assert [(f.line, f.code, f.severity, f.pointer) for f in found] == [(1, "TL101", "warning", ""), (2, "TL101", "warning", "")]
    assert "neither `_ng_task_index` nor `_ng_rollout_index`" in found[0].message
    assert "position in the file" in found[1].message


def _scalar_kind(annotation: Any) -> str | None:
    import types
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return {int: lax.INTEGER, float: lax.NUMBER, bool: lax.BOOLEAN}.get(annotation)


@pytest.mark.parametrize("model", sorted(lax.SCALARS))
def test_the_lax_table_names_every_scalar_of_the_models(model):
    import trajlint.contract as contract

    fields = getattr(contract, model).model_fields
    kinds = {name: _scalar_kind(field.annotation) for name, field in fields.items()}
    assert lax.SCALARS[model] == {name: kind for name, kind in kinds.items() if kind is not None}


def test_normalized_copies_only_what_it_coerces():
    stated = copy.deepcopy(WRITER_ROW["ng_trajectory"])
    stated["turns"][1]["step_count"] = "1"
    stated["model_calls"][0]["token_stats"]["prompt_tokens"] = 96.0
    before = copy.deepcopy(stated)
    read, coerced = lax.normalized("ng_trajectory", stated)
    assert stated == before  # the row is never changed
    assert [(c.pointer, c.read_as) for c in coerced] == [
        ("/ng_trajectory/turns/1/step_count", 1), ("/ng_trajectory/model_calls/0/token_stats/prompt_tokens", 96),
    ]
    assert type(read["turns"][1]["step_count"]) is int and type(read["model_calls"][0]["token_stats"]["prompt_tokens"]) is int
    assert read["turns"][0] is stated["turns"][0] and read["invocations"] is stated["invocations"]
    assert lax.normalized("ng_trajectory", before)[0] is not before
    clean = WRITER_ROW["ng_trajectory"]
    assert lax.normalized("ng_trajectory", clean) == (clean, [])


def test_the_build_reads_a_coerced_value_as_nemo_gym_does():
    from trajlint.builder import build

    row = next(p for p in PROBES if p.name == "T_prompt_tokens_numeric_string").row()
    built = build(row)
    assert built.evidence.stated_valid  # NeMo Gym's health check reads this trajectory whole
    assert built.trajectory["model_calls"][0]["token_stats"]["prompt_tokens"] == 96
    assert built.trajectory["gaps"] == []


def test_a_value_nemo_gym_rejects_is_not_coerced():
    assert lax.read_as("TrajectoryTurn", "step_count", "-1") is lax._REJECTED
    assert lax.read_as("TrajectoryTurn", "turn_no", False) is lax._REJECTED  # 0, below 1
    assert lax.read_as("TrajectoryTurn", "resolved", 2) is lax._REJECTED
    assert lax.read_as("TrajectoryTurn", "turn_no", True) == 1


def _health_verdict(summary: dict[str, Any]) -> str:
    """The one row's verdict from NeMo Gym's summary, worded as tools/nemo_gym_probe.py words it."""
    (verdict,) = [name for name, count in summary["run"]["verdicts"].items() if count]
    checks = sorted(name for name, count in summary["run"]["issues"].items() if count)
    return f"{verdict}: {', '.join(checks)}" if checks else verdict


@pytest.mark.parametrize("probe", [probe for probe in PROBES if probe.accepted], ids=lambda probe: probe.name)
def test_health_verdict_is_nemo_gym_s_where_nemo_gym_reads_the_row_without_loss(probe, tmp_path):
    """A value NeMo Gym coerces is read the same way by trajlint's build, so the verdicts agree."""
    from trajlint.check.run import run
    from trajlint.read import iter_sources

    path = tmp_path / "rows.jsonl"
    path.write_bytes(orjson.dumps(probe.row()) + b"\n")
    result = run(iter_sources([str(path)]), load_rules(), max_row_bytes=1 << 28)
    ((_, health),) = result.health  # one file, one run
    assert _health_verdict(health.summary) == probe.nemo_gym["health"]
