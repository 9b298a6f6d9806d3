"""Build tests/data/real/: real NeMo Gym rows for trajlint to be tested on.

Two parts, each rewriting only its own files and its own entries in provenance.json:

1. Released example data (``--wheels-only``, any Python with pip): every ``*.jsonl`` file inside
   the nemo-gym wheels 0.2.0 ... 0.6.0 on PyPI (0.2.1 and 0.5.1 included). Identical files are
   committed once; large files are cut to a deterministic sample of whole rows, each row kept
   byte for byte (see ``sample_lines``). Committed as ``v<version>/<wheel path, "/" -> "__">``.

2. Rows written by NeMo Gym 0.7.0's own code (``--generated-only``, under a Python that has
   nemo-gym 0.7.0 installed, see /work/shared/tools/nemo-gym-0.7-venv.sh). NeMo Gym's rollout
   collector (``RolloutCollectionHelper.run_from_config``) runs unchanged; so do the
   ``single_agent_turn`` and ``single_agent_turn_legacy`` environment servers (their FastAPI apps,
   reached in-process through httpx's ASGI transport) and the model server's capture writer
   (``nemo_gym.base_responses_api_model._record``). Only the network is replaced: the Resources
   Server, the Agent Server and the model answers are scripted here, from NeMo Gym's own pydantic
   types. The collector writes ``<name>.jsonl`` (successes), ``<name>_failures.jsonl`` (the failures
   sidecar: ``_ng_failure_stage`` rows and ``/run`` failure rows) and
   ``<name>_materialized_inputs.jsonl``; those files are committed as written, under
   ``nemo-gym-0.7.0-writers/``.

Usage (from the repository root):

    python tools/make_real_corpus.py --wheels-only [--wheel-dir /tmp/ng-wheels]
    /tmp/nemo-gym-0.7-venv/bin/python tools/make_real_corpus.py --generated-only
    /tmp/nemo-gym-0.7-venv/bin/python tools/make_real_corpus.py            # both

``--out DIR`` writes somewhere else (to compare a regeneration with the committed corpus).
The NeMo Gym part imports no trajlint code, and no NeMo Gym code is copied here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "tests" / "data" / "real"
WRITERS_DIR = "nemo-gym-0.7.0-writers"

# -- part 1: the released wheels ---------------------------------------------------------------------

# Every release on PyPI from 0.2.0 to 0.6.0, as `pip index versions nemo-gym --python-version 3.14
# --only-binary=:all:` listed them when the corpus was built (0.7.0 was the newest). The sha256 pins
# the exact wheel the committed samples were cut from.
WHEELS = {
    "0.2.0": "555ed9805c2500d196666f0faf29eb66bb83a50c88a7cedafc2531cb18da0836",
    "0.2.1": "b0a6876a5780709a134850f6cbb6a02e4bfe27ed9175e14dfbb44f155b5e2ee7",
    "0.3.0": "e7f055f770e214ec8cdfcf54f351fa9374b0b0671ca82a0c8a16ac43c382d4de",
    "0.4.0": "955f08027a2f01a1c6e0e3c5da0820c330fee0307754d59ba2517f5ad89cea6e",
    "0.5.0": "6a98f93238e52de31ae0ef7436e7a15ea598da725bf75fefa46290de43f3e485",
    "0.5.1": "bb3934ab836cd2bd43bd2d957ee43981a1da4282960eac5ffa7b26d204b49efe",
    "0.6.0": "08098e8748930fd0c3d08690601b38802a3501ac0efc04362574b388092d6d64",
}
PYTHON_VERSIONS = ("3.14", "3.13", "3.12")  # asked of pip in this order; all seven resolve with 3.14

# Sampling. A file that fits its kind's budget is kept whole. Otherwise whole rows are taken in the
# order first, last, middle, then quarter points, eighth points, ... each one that still fits; when
# not even one fits, the smallest row (the first of equals), except for task datasets. A file whose
# kept rows still exceed FILE_CAP is not committed (provenance says why).
BUDGET = {"rollouts": 8_000, "task_dataset": 2_000}
DEFAULT_BUDGET = 6_000
NO_FALLBACK = {"task_dataset"}
FILE_CAP = 64_000

# Directories whose example data NeMo Gym's READMEs put under a non-commercial license: their files
# are inventoried but not committed (trajlint's sdist ships tests/, under Apache-2.0).
EXCLUDED_BY_LICENSE = {
    "resources_servers/equivalence_llm_judge/": "its README: 'Data: CC-BY-NC-3.0 (Examples from allenai/sciq)'",
    "resources_servers/toolsandbox/": "apple/ToolSandbox scenarios; responses_api_agents/toolsandbox_agent/README.md: "
                                      "'Data: CC-BY-NC-4.0 (apple/ToolSandbox scenarios)'",
    "responses_api_agents/toolsandbox_agent/": "its README: 'Data: CC-BY-NC-4.0 (apple/ToolSandbox scenarios)'",
    "benchmarks/financebench/": "its README: 'The public dataset is licensed under CC BY-NC 4.0'",
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wheel_name(version: str) -> str:
    return f"nemo_gym-{version}-py3-none-any.whl"


def fetch_wheels(wheel_dir: Path, versions: list[str]) -> dict[str, Path]:
    """The wheel of each version, downloaded with pip unless already there; sha256-checked."""
    wheel_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for version in versions:
        path = wheel_dir / wheel_name(version)
        for python in PYTHON_VERSIONS:
            if path.exists():
                break
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                 "--python-version", python, f"nemo-gym=={version}", "-d", str(wheel_dir)],
                check=False, cwd=tempfile.gettempdir(),
            )
        if not path.exists():
            sys.exit(f"make_real_corpus: could not download nemo-gym=={version}")
        digest = sha256(path.read_bytes())
        if digest != WHEELS[version]:
            sys.exit(f"make_real_corpus: {path} has sha256 {digest}, expected {WHEELS[version]}")
        paths[version] = path
    return paths


def split_lines(data: bytes) -> list[bytes]:
    """The lines of a file, each with its own terminator (the last may have none)."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def classify(name: str, rows: list[bytes]) -> tuple[str, str, str | None]:
    """(kind, basis, note) of one wheel file, from its name and its rows.

    The names are NeMo Gym's own: `<stem>_materialized_inputs.jsonl` (written by rollout collection,
    path_utils.materialized_path_for; skipped by the aggregator's glob, rollout_collection.py
    _expand_input_glob), `<stem>_reward_profiling.jsonl` (reward_profile.py write_to_disk; the
    aggregator does not skip it by name) and `<stem>_failures.jsonl` (the failures sidecar,
    path_utils.failures_path_for; skipped by the aggregator). Anything else is judged by its rows.
    """
    base = name.rsplit("/", 1)[-1]
    for suffix, kind in (("_materialized_inputs.jsonl", "materialized_inputs"),
                         ("_reward_profiling.jsonl", "reward_profiling"),
                         ("_failures.jsonl", "failures")):
        if base.endswith(suffix):
            return kind, "name", None
    if not rows:
        return "task_dataset", "name", "no rows (an empty file); a dataset split by its name"
    parsed = []
    for row in rows:
        try:
            parsed.append(json.loads(row))
        except ValueError:
            parsed.append(None)
    if not all(isinstance(row, dict) for row in parsed):
        bad = sum(not isinstance(row, dict) for row in parsed)
        return "other", "content", f"{bad} of {len(rows)} rows are not JSON objects"
    named_rollouts = "rollout" in base
    if all("response" in row for row in parsed):
        return "rollouts", "content", None if named_rollouts else "rows carry `response`: agent output, whatever the name"
    if all("responses_create_params" in row for row in parsed):
        note = "named like rollouts but no row has `response`: task inputs" if named_rollouts else None
        return "task_dataset", "content", note
    keys = sorted(set().union(*(row.keys() for row in parsed)))
    note = ("rollout-like rows without `response`" if "reward" in keys else "not NeMo Gym rollout or task rows")
    return "other", "content", f"{note}; keys: {', '.join(keys[:12])}{' ...' if len(keys) > 12 else ''}"


def sample_order(n: int) -> list[int]:
    """First, last, middle, then the quarter points, eighth points, ...: every index once."""
    order: list[int] = []
    seen: set[int] = set()

    def add(index: int) -> None:
        if 0 <= index < n and index not in seen:
            seen.add(index)
            order.append(index)

    add(0)
    add(n - 1)
    parts = 2
    while len(order) < n and parts <= 2 * n:
        for step in range(1, parts, 2):
            add(round(step * (n - 1) / parts))
        parts *= 2
    for index in range(n):
        add(index)
    return order


def sample_lines(lines: list[bytes], kind: str) -> list[int]:
    """Indices (into `lines`) of the rows to keep, in file order. Blank lines are never kept."""
    rows = [i for i, line in enumerate(lines) if line.strip()]
    budget = BUDGET.get(kind, DEFAULT_BUDGET)
    if sum(len(lines[i]) for i in rows) <= budget:
        return rows
    kept, size = [], 0
    for position in sample_order(len(rows)):
        index = rows[position]
        if size + len(lines[index]) <= budget:
            kept.append(index)
            size += len(lines[index])
    if not kept and rows and kind not in NO_FALLBACK:
        kept = [min(rows, key=lambda i: (len(lines[i]), i))]
    return sorted(kept)


def readme_license(wheel: zipfile.ZipFile, wheel_path: str) -> str | None:
    """The License section of the README of the server or benchmark directory holding the file."""
    top = "/".join(wheel_path.split("/")[:2])
    try:
        text = wheel.read(f"{top}/README.md").decode("utf-8", "replace")
    except KeyError:
        return None
    match = re.search(r"^#+\s*Licen[sc]\w*.*?$(.*?)(?=^#+\s|\Z)", text, re.MULTILINE | re.DOTALL)
    if not match:
        return None
    section = " ".join(match.group(1).split())
    return section[:400] + (" ..." if len(section) > 400 else "") if section else None


def line_notes(data: bytes, lines: list[bytes]) -> list[str]:
    notes = []
    if data and not data.endswith(b"\n"):
        notes.append("the original has no final newline")
    if b"\r\n" in data:
        notes.append("the original has CRLF line ends")
    if any(not line.strip() for line in lines):
        notes.append("the original has blank lines (never kept)")
    return notes


def build_wheel_part(out: Path, wheel_dir: Path, versions: list[str]) -> list[dict[str, Any]]:
    wheels = fetch_wheels(wheel_dir, versions)
    for stale in out.glob("v[0-9]*"):
        if stale.is_dir():
            shutil.rmtree(stale)
    entries: list[dict[str, Any]] = []
    first_by_sha: dict[str, dict[str, Any]] = {}
    file_by_committed_sha: dict[str, str] = {}
    for version in versions:
        with zipfile.ZipFile(wheels[version]) as wheel:
            for wheel_path in sorted(n for n in wheel.namelist() if n.endswith(".jsonl")):
                data = wheel.read(wheel_path)
                digest = sha256(data)
                lines = split_lines(data)
                rows = [line for line in lines if line.strip()]
                first = first_by_sha.get(digest)
                if first is not None:
                    first["also_in"].append({"version": version, "wheel_path": wheel_path})
                    continue
                entry: dict[str, Any] = {
                    "file": None,
                    "source": "wheel",
                    "version": version,
                    "wheel": wheel_name(version),
                    "wheel_path": wheel_path,
                    "original_sha256": digest,
                    "original_rows": len(rows),
                    "original_bytes": len(data),
                    "kept_rows": None,
                    "kept_line_numbers": None,
                    "sha256_of_committed_file": None,
                    "committed_bytes": None,
                    "kind": None,
                    "kind_basis": None,
                    "reason": None,
                    "readme_license": readme_license(wheel, wheel_path),
                    "notes": [],
                    "also_in": [],
                }
                first_by_sha[digest] = entry
                kind, basis, note = classify(wheel_path, rows)
                entry.update(kind=kind, kind_basis=basis)
                entry["notes"] = ([note] if note else []) + line_notes(data, lines)
                kept = sample_lines(lines, kind)
                sample = b"".join(lines[i] for i in kept)
                excluded = next((why for prefix, why in EXCLUDED_BY_LICENSE.items() if wheel_path.startswith(prefix)), None)
                if excluded:
                    entry["reason"] = f"non-commercial data license, not redistributed here ({excluded})"
                elif rows and not kept:
                    entry["reason"] = (f"no row fits the {BUDGET.get(kind, DEFAULT_BUDGET):,}-byte budget of a "
                                       f"{kind} file (smallest row {min(len(r) for r in rows):,} bytes)")
                elif len(sample) > FILE_CAP:
                    entry["reason"] = (f"its smallest row is {len(sample):,} bytes, above the "
                                       f"{FILE_CAP:,}-byte cap per committed file")
                if entry["reason"] is not None:
                    entries.append(entry)
                    continue
                entry.update(
                    kept_rows=len(kept),
                    kept_line_numbers=[i + 1 for i in kept],
                    sha256_of_committed_file=sha256(sample),
                    committed_bytes=len(sample),
                )
                same = file_by_committed_sha.get(entry["sha256_of_committed_file"])
                if same is not None:
                    entry["file"] = same
                    entry["notes"].append(f"its sample is byte-identical to {same}, committed once")
                else:
                    relative = Path(f"v{version}") / wheel_path.replace("/", "__")
                    target = out / relative
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(sample)
                    entry["file"] = corpus_path(out, target)
                    file_by_committed_sha[entry["sha256_of_committed_file"]] = entry["file"]
                entries.append(entry)
    return entries


def corpus_path(out: Path, path: Path) -> str:
    """A committed file's name in provenance: as it is in the repository, wherever --out wrote it."""
    return str(Path("tests/data/real") / path.relative_to(out))


# -- part 2: rows written by NeMo Gym 0.7.0 -------------------------------------------------------------

# Fixed instants (UTC) for everything NeMo Gym lets a caller choose: the capture's call timestamps,
# and the collector's clock (a counter, see FakeClock).
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z

TASKSET = "arith:demo"
SCENARIOS: dict[str, str] = {
    # task id -> what happens in its episode (the scripted Resources and Agent servers read it)
    "arith-001": "success: the agent reports observations (one invocation, a tool call) and both model calls are captured",
    "arith-002": "success: the agent reports no observations (ng_agent_observations: null); one model call captured",
    "arith-003": "success: no observations and no capture at all",
    "arith-004": "failure at stage seed: the Resources Server answers 400 (terminal)",
    "arith-005": "failure at stage agent: the Agent Server answers 429 (retryable)",
    "arith-006": "failure at stage verification: /verify answers 503 (retryable, partial response kept)",
    "arith-007": "failure at stage cleanup: the agent's close answers 500 (retryable, partial response kept)",
    "arith-008": "failure without a stage: the episode times out (environment server env_sat_slow)",
    "arith-009": "success at attempt 1 (a retry: the row carries _ng_attempt_index = 1)",
    "arith-010": "the /run request never reaches env_sat: a gateway in front of it answers 502 (agent_request_failed)",
    "arith-011": "the environment server rejects the request body with 422 (agent_run_error): task_input has no responses_create_params",
}
LEGACY_SCENARIOS: dict[str, str] = {
    "legacy-001": "success with observations, through single_agent_turn_legacy's flat /run",
    "legacy-002": "success without observations: the legacy server drops ng_agent_observations",
    "legacy-003": "failure at stage verification: a flat environment_server_failed row with agent_ref {name}",
}
QUESTIONS = {i: (a, b) for i, (a, b) in enumerate([(17, 23), (12, 12), (99, 3), (7, 8), (21, 4), (15, 15),
                                                    (11, 13), (6, 7), (25, 4), (3, 3), (8, 9)], start=1)}


CALCULATOR_TOOL = {
    "type": "function", "name": "calculator", "description": "Evaluate an arithmetic expression.",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    "strict": True,
}


def _generated_inputs() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The input rows: materialized tasks (routed by taskset) and flat rows (routed in legacy mode)."""
    taskset_rows = []
    for number in range(1, 12):
        task = f"arith-{number:03d}"
        a, b = QUESTIONS[number]
        params = {"input": [{"role": "user", "content": f"What is {a} * {b}? Use the calculator tool."}],
                  "tools": [CALCULATOR_TOOL], "temperature": 0.0}
        task_input: dict[str, Any] = {"responses_create_params": params,
                                      "task_data": {"question": f"{a} * {b}", "expected_answer": str(a * b)}}
        if number == 11:
            del task_input["responses_create_params"]
        taskset = "arith:slow" if number == 8 else TASKSET
        row: dict[str, Any] = {"task_id": {"taskset": taskset, "task_id": task}, "task_input": task_input}
        if number == 9:
            row["_ng_attempt_index"] = 1
        taskset_rows.append(row)
        if number == 1:  # a second rollout of the first task
            taskset_rows.append(json.loads(json.dumps(row)))
    legacy_rows = []
    for number, task in enumerate(LEGACY_SCENARIOS, start=1):
        a, b = QUESTIONS[number]
        legacy_rows.append({
            "responses_create_params": {"input": [{"role": "user", "content": f"What is {a} * {b}? Use the calculator tool."}],
                                        "tools": [CALCULATOR_TOOL], "temperature": 0.0},
            "question": f"{a} * {b}", "expected_answer": str(a * b), "instance_id": task,
        })
    return taskset_rows, legacy_rows


def build_writer_part(out: Path) -> list[dict[str, Any]]:
    import asyncio
    import importlib.metadata

    installed = importlib.metadata.version("nemo-gym")
    if installed != "0.7.0":
        sys.exit(f"make_real_corpus: the writer part needs nemo-gym 0.7.0, this Python has {installed}")

    target = out / WRITERS_DIR
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="ng-writers-") as tmp:
        work = Path(tmp)
        files = asyncio.run(_run_writers(work))
        entries = []
        for name, (path, kind, writer, scenarios) in files.items():
            data = path.read_bytes()
            (target / name).write_bytes(data)
            rows = [line for line in split_lines(data) if line.strip()]
            entries.append({
                "file": corpus_path(out, target / name),
                "source": "writer",
                "version": "0.7.0",
                "wheel": None,
                "wheel_path": None,
                "writer": writer,
                "original_sha256": sha256(data),
                "original_rows": len(rows),
                "original_bytes": len(data),
                "kept_rows": len(rows),
                "kept_line_numbers": list(range(1, len(rows) + 1)),
                "sha256_of_committed_file": sha256(data),
                "committed_bytes": len(data),
                "kind": kind,
                "kind_basis": "writer",
                "reason": None,
                "notes": [],
                "also_in": [],
                "scenarios": scenarios,
            })
    return entries


async def _run_writers(work: Path) -> dict[str, tuple[Path, str, str, list[str]]]:
    """Run NeMo Gym's collector twice (materialized tasksets, then legacy flat rows); return its files."""
    import nemo_gym.rollout_collection as rc
    from nemo_gym.rollout_collection import (
        RolloutCollectionConfig,
        RolloutCollectionHelper,
    )

    world = _World(work)
    taskset_rows, legacy_rows = _generated_inputs()
    inputs = work / "inputs"
    inputs.mkdir()
    (inputs / "taskset.jsonl").write_text("".join(json.dumps(r) + "\n" for r in taskset_rows))
    (inputs / "legacy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in legacy_rows))
    results = work / "results"

    class Helper(RolloutCollectionHelper):
        def setup_server_client(self, head_server_config=None):
            return world.client()

    real_time = rc.time
    rc.time = FakeClock(real_time)  # the collector's clock: a deterministic counter
    try:
        common: dict[str, Any] = {"num_samples_in_parallel": 1, "disable_aggregation": True,
                                  "disable_health_check": True, "upload_rollouts": False,
                                  "route_failures_to_sidecar": True}
        await Helper().run_from_config(RolloutCollectionConfig(
            input_jsonl_fpath=str(inputs / "taskset.jsonl"),
            output_jsonl_fpath=str(results / "taskset_rollouts.jsonl"),
            environment_routing_mode="taskset",
            environment_server_routes={TASKSET: "env_sat", "arith:slow": "env_sat_slow"},
            **common,
        ))
        await Helper().run_from_config(RolloutCollectionConfig(
            input_jsonl_fpath=str(inputs / "legacy.jsonl"),
            output_jsonl_fpath=str(results / "legacy_rollouts.jsonl"),
            environment_routing_mode="legacy",
            environment_server_name="env_legacy",
            **common,
        ))
    finally:
        rc.time = real_time

    collector = "nemo_gym.rollout_collection.RolloutCollectionHelper.run_from_config"
    sat = "environment_servers.single_agent_turn (SingleAgentTurnEnvironmentServer, its FastAPI app)"
    legacy = "environment_servers.single_agent_turn_legacy (SingleAgentTurnLegacyEnvironmentServer.run_legacy)"
    capture = "nemo_gym.base_responses_api_model._record (model-call capture) + merge_model_call_capture_into_record"
    episode = "nemo_gym.rollout_collection._episode_record, _attach_trajectory_record, _attach_ng_perf"
    attach = "nemo_gym.rollout_collection._attach_trajectory_record, _attach_ng_perf"
    episode_failure = "nemo_gym.rollout_collection._episode_record (its failure branch)"
    failure_row = "nemo_gym.rollout_collection._agent_request_failure_row"
    taskset_ok = [f"{k}: {v}" for k, v in SCENARIOS.items() if v.startswith("success")]
    taskset_bad = [f"{k}: {v}" for k, v in SCENARIOS.items() if not v.startswith("success")]
    legacy_ok = [f"{k}: {v}" for k, v in LEGACY_SCENARIOS.items() if v.startswith("success")]
    legacy_bad = [f"{k}: {v}" for k, v in LEGACY_SCENARIOS.items() if not v.startswith("success")]
    return {
        "taskset_rollouts.jsonl": (results / "taskset_rollouts.jsonl", "rollouts",
                                   f"{collector}; {sat}; {capture}; {episode}",
                                   taskset_ok + ["arith-001 runs twice (rollout indices 0 and 1)"]),
        "taskset_rollouts_failures.jsonl": (results / "taskset_rollouts_failures.jsonl", "failures",
                                            f"{collector}; {sat}; {episode_failure}; {failure_row}", taskset_bad),
        "taskset_rollouts_materialized_inputs.jsonl": (results / "taskset_rollouts_materialized_inputs.jsonl",
                                                       "materialized_inputs", collector,
                                                       ["one input row per dispatched rollout, as the collector stamped it "
                                                        + "(arith-001 twice)"]),
        "legacy_rollouts.jsonl": (results / "legacy_rollouts.jsonl", "rollouts",
                                  f"{collector}; {legacy}; {capture}; {attach}", legacy_ok),
        "legacy_rollouts_failures.jsonl": (results / "legacy_rollouts_failures.jsonl", "failures",
                                           f"{collector}; {legacy}", legacy_bad),
        "legacy_rollouts_materialized_inputs.jsonl": (results / "legacy_rollouts_materialized_inputs.jsonl",
                                                      "materialized_inputs", collector,
                                                      ["one input row per dispatched rollout, as the collector stamped it"]),
    }


class FakeClock:
    """Stands in for the `time` module inside nemo_gym.rollout_collection: time() and monotonic()
    advance by a fixed step per call, so rollout latencies (ng_perf.total_latency_ms) are the same
    on every run. Everything else is the real module."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self._calls = 0

    def _tick(self) -> float:
        self._calls += 1
        return self._calls * 0.125

    def time(self) -> float:
        return T0 + 3600.0 + self._tick()

    def monotonic(self) -> float:
        return 1000.0 + self._tick()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _World:
    """The scripted network around NeMo Gym's environment servers: Resources Server, Agent Server,
    model (through NeMo Gym's capture writer), a gateway, and the global config they share."""

    def __init__(self, work: Path) -> None:
        from omegaconf import OmegaConf

        self.capture_dir = work / "model-call-capture"
        self.capture_dir.mkdir()
        env = lambda impl, extra=None: {
            "environment_servers": {impl: {
                "host": "127.0.0.1", "port": 0, "entrypoint": "app.py",
                "resources_server": {"type": "resources_servers", "name": "arith_resources"},
                "agent_server": {"type": "responses_api_agents", "name": "arith_agent"},
                "cleanup_timeout_seconds": 10, **(extra or {})}}}
        self.global_config = OmegaConf.create({
            "env_sat": env("single_agent_turn"),
            "env_sat_slow": env("single_agent_turn", {"default_episode_timeout_seconds": 0.05}),
            "env_legacy": env("single_agent_turn_legacy"),
            "arith_agent": {"responses_api_agents": {"simple_agent": {
                "host": "127.0.0.1", "port": 0, "entrypoint": "app.py",
                "resources_server": {"type": "resources_servers", "name": "arith_resources"},
                "model_server": {"type": "responses_api_models", "name": "policy_model"}}}},
            "arith_resources": {"resources_servers": {"arith": {"host": "127.0.0.1", "port": 0, "entrypoint": "app.py"}}},
            "policy_model": {"responses_api_models": {"openai_model": {"host": "127.0.0.1", "port": 0, "entrypoint": "app.py"}}},
            "observability_enabled": True,
            "model_call_capture_dir": str(self.capture_dir),
            "token_id_capture": {"enabled": False},
        })
        self.apps: dict[str, Any] = {}
        self.task_of_rollout: dict[str, str] = {}
        self.conversations: dict[str, list[dict[str, Any]]] = {}

    def client(self) -> Any:
        return _client_class()(head_server_config=_head(), global_config_dict=self.global_config, world=self)

    def app(self, name: str) -> Any:
        if name not in self.apps:
            from environment_servers.single_agent_turn.app import (
                SingleAgentTurnEnvironmentServer,
                SingleAgentTurnEnvironmentServerConfig,
            )
            from environment_servers.single_agent_turn_legacy.app import (
                SingleAgentTurnLegacyEnvironmentServer,
            )

            block = self.global_config[name]["environment_servers"]
            impl = next(iter(block))
            config = SingleAgentTurnEnvironmentServerConfig(name=name, **_plain(block[impl]))
            cls = SingleAgentTurnLegacyEnvironmentServer if impl == "single_agent_turn_legacy" else SingleAgentTurnEnvironmentServer
            self.apps[name] = cls(config=config, server_client=self.client()).setup_webserver()
        return self.apps[name]

    # -- the scripted servers --------------------------------------------------------------------

    async def answer(self, server_name: str, url_path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON body, cookies) of one scripted server call."""
        from nemo_gym.rollout_correlation import current_rollout_id

        rollout = current_rollout_id()
        if url_path == "/seed_session":
            task = body["task_id"]["task_id"] if isinstance(body.get("task_id"), dict) else None
            self.task_of_rollout[rollout] = task
            if task == "arith-004":
                return 400, {"detail": "unknown task arith-004"}, {}
            return 200, {"resources_session_id": body["resources_session_id"]}, {"arith_resources_session": f"r-{rollout}"}
        task = self.task_of_rollout.get(rollout)
        if url_path == "/close_session":
            return 200, {"resources_session_id": body["resources_session_id"]}, {}
        if url_path == "/v1/agent_sessions":
            return 200, {"agent_session_id": body["agent_session_id"]}, {"arith_agent_session": f"a-{rollout}"}
        if url_path.startswith("/ng-rollout/") and url_path.endswith("/v1/responses"):
            if task == "arith-005":
                return 429, {"error": {"message": "rate limited", "type": "rate_limit_error"}}, {}
            if task == "arith-008":
                import asyncio

                await asyncio.sleep(0.5)  # past env_sat_slow's 0.05 s episode deadline
            return 200, self.run_agent(url_path.split("/")[2], task, body), {}
        if url_path == "/v1/agent_sessions/close":
            if task == "arith-007":
                return 500, {"detail": "agent session store unavailable"}, {}
            return 200, {"agent_session_id": body["agent_session_id"],
                         "agent_observations": self.observations(rollout, task)}, {}
        if url_path == "/verify":
            if task in ("arith-006", "legacy-003"):
                return 503, {"detail": "verifier backend unavailable"}, {}
            answer = _final_text(body["response"])
            reward = 1.0 if answer == body.get("expected_answer") else 0.0
            return 200, {**body, "reward": reward, "extracted_answer": answer}, {}
        raise AssertionError(f"unscripted call {server_name} {url_path}")

    def run_agent(self, capture_key: str, task: str | None, params: dict[str, Any]) -> dict[str, Any]:
        """The agent's turn: model calls (captured by NeMo Gym's capture writer), then its response."""
        question = params["input"][0]["content"]
        a, b = (int(x) for x in re.findall(r"\d+", question)[:2])
        call_id = f"call_{capture_key}"
        tool_call = {"type": "function_call", "id": f"fc_{capture_key}", "call_id": call_id, "name": "calculator",
                     "arguments": json.dumps({"expression": f"{a}*{b}"}), "status": "completed"}
        tool_output = {"type": "function_call_output", "call_id": call_id, "output": str(a * b)}
        message = {"type": "message", "id": f"msg_{capture_key}", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": str(a * b), "annotations": []}]}
        first = _model_response(f"resp_{capture_key}_1", [tool_call], 96, 18, T0 + 1)
        second = _model_response(f"resp_{capture_key}_2", [message], 131, 4, T0 + 3)
        captured = [] if task in ("arith-003",) else [first, second] if task not in ("arith-002", "legacy-002") else [second]
        for index, response in enumerate(captured):
            request = {"model": "policy-model", "input": params["input"] + ([tool_call, tool_output] if response is second else []),
                       "tools": params.get("tools", [])}
            started = T0 + 1 + 2 * index
            self.record_call(capture_key, index, request, response, started, started + 0.8)
        self.conversations[capture_key] = list(params["input"]) + [tool_call, tool_output, message]
        return _model_response(f"resp_{capture_key}_2", [tool_call, tool_output, message], 227, 22, T0 + 3)

    def record_call(self, capture_key: str, index: int, request: dict, response: dict, started: float, completed: float) -> None:
        from nemo_gym.base_responses_api_model import CaptureStore, _record

        _record(
            CaptureStore(self.capture_dir), "responses", "policy_model", json.dumps(request).encode(),
            rollout_id=capture_key, model_call_id=f"mc_{capture_key}_{index + 1}",
            started_at=started, completed_at=completed, response_body=response, status_code=200,
            error_category=None, latency_ms=(completed - started) * 1000, ttft_ms=210.0,
        )

    def observations(self, capture_key: str | None, task: str | None) -> dict[str, Any] | None:
        """The agent's observation bundle (NeMo Gym's AgentObservationBundle), or None."""
        if task in ("arith-002", "arith-003", "legacy-002"):
            return None
        from nemo_gym.rollout_observability import AgentObservationBundle

        call_id = f"call_{capture_key}"
        invocation = f"inv_{capture_key}"
        conversation = self.conversations.get(capture_key, [])
        return AgentObservationBundle.model_validate({
            "source": "arith_agent",
            "records": [
                {"kind": "agent_invocation", "invocation_id": invocation, "status": "completed", "duration_ms": 2950.0,
                 "model_calls": [{"model_call_id": f"mc_{capture_key}_1"}, {"model_call_id": f"mc_{capture_key}_2"}],
                 "conversation": conversation},
                {"kind": "tool_call", "invocation_id": invocation, "tool_call_id": call_id, "tool_name": "calculator",
                 "started_at": T0 + 1.9, "completed_at": T0 + 2.05, "duration_ms": 150.0, "timing_source": "harness",
                 "status": "completed"},
            ],
        }).model_dump(mode="json")


def _model_response(response_id: str, output: list[dict], tokens_in: int, tokens_out: int, created: float) -> dict:
    from nemo_gym.openai_utils import NeMoGymResponse

    return NeMoGymResponse.model_validate({
        "id": response_id, "object": "response", "created_at": created, "model": "policy-model", "status": "completed",
        "output": output, "tool_choice": "auto", "parallel_tool_calls": False, "tools": [],
        "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out,
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
    }).model_dump(mode="json")


def _final_text(response: dict) -> str | None:
    for item in reversed(response.get("output") or []):
        if item.get("type") == "message":
            return "".join(part.get("text", "") for part in item.get("content") or [])
    return None


def _plain(value: Any) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(value, resolve=True)


def _head() -> Any:
    from nemo_gym.server_utils import BaseServerConfig

    return BaseServerConfig(host="127.0.0.1", port=1)


_CLIENT_CLASS = None


def _client_class() -> Any:
    """A NeMo Gym ServerClient whose post() reaches the scripted world instead of the network."""
    global _CLIENT_CLASS
    if _CLIENT_CLASS is not None:
        return _CLIENT_CLASS
    from nemo_gym.server_utils import ServerClient
    from pydantic import BaseModel, ConfigDict

    class ScriptedServerClient(ServerClient):
        model_config = ConfigDict(arbitrary_types_allowed=True)
        world: Any

        async def post(self, server_name: str, url_path: str, **kwargs: Any) -> Any:
            body = kwargs.get("json")
            if isinstance(body, BaseModel):
                body = body.model_dump(mode="json", exclude_unset=True)
            body = json.loads(json.dumps(body)) if body is not None else None
            url = f"http://{server_name}.invalid{url_path}"
            if url_path == "/run":
                if server_name == "env_sat" and self._task(body) == "arith-010":
                    return _Reply(502, b"<html><body><h1>502 Bad Gateway</h1></body></html>", url)
                import httpx

                transport = httpx.ASGITransport(app=self.world.app(server_name), raise_app_exceptions=False)
                async with httpx.AsyncClient(transport=transport, base_url=f"http://{server_name}") as http:
                    reply = await http.post("/run", json=body, timeout=None)
                return _Reply(reply.status_code, reply.content, url)
            status, payload, cookies = await self.world.answer(server_name, url_path, body)
            return _Reply(status, json.dumps(payload).encode(), url, cookies)

        @staticmethod
        def _task(body: Any) -> str | None:
            task = (body or {}).get("task") or {}
            return (task.get("task_id") or {}).get("task_id")

        def _resolve_base_url(self, server_name: str) -> str:
            return f"http://{server_name}.invalid"

    _CLIENT_CLASS = ScriptedServerClient
    return _CLIENT_CLASS


class _Reply:
    """What NeMo Gym reads of an aiohttp ClientResponse: ok, status, read(), cookies, raise_for_status()."""

    def __init__(self, status: int, body: bytes, url: str, cookies: dict[str, str] | None = None) -> None:
        from http.cookies import SimpleCookie

        import aiohttp
        from multidict import CIMultiDict, CIMultiDictProxy
        from yarl import URL

        self.status = status
        self.ok = status < 400
        self.reason = _reason(status)
        self._body = body
        self.cookies = SimpleCookie()
        for name, value in (cookies or {}).items():
            self.cookies[name] = value
        headers = CIMultiDictProxy(CIMultiDict())
        self.request_info = aiohttp.RequestInfo(URL(url), "POST", headers, URL(url))
        self.headers = headers
        self.content = self

    async def read(self) -> bytes:
        return self._body

    def release(self) -> None:
        pass

    def raise_for_status(self) -> None:
        import aiohttp

        if not self.ok:
            raise aiohttp.ClientResponseError(self.request_info, (), status=self.status, message=self.reason,
                                              headers=self.headers)


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


# -- provenance -------------------------------------------------------------------------------------


def load_entries(out: Path) -> list[dict[str, Any]]:
    path = out / "provenance.json"
    return json.loads(path.read_text()) if path.exists() else []


def write_provenance(out: Path, entries: list[dict[str, Any]]) -> None:
    """provenance.json: a JSON list, one entry per line (small, and diffs stay readable)."""
    entries = sorted(entries, key=lambda e: (e["source"] != "wheel", e["version"], e.get("wheel_path") or "", e["file"] or ""))
    body = ",\n".join(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) for entry in entries)
    (out / "provenance.json").write_text("[\n" + body + "\n]\n")
    (out / "PROVENANCE.md").write_text(provenance_markdown(entries))


def license_rows(entries: list[dict[str, Any]]) -> list[str]:
    """Committed directories whose README names a data license other than Apache-2.0."""
    other = re.compile(r"MIT|CC[ -]?BY|Creative Commons|BSD|GPL|upstream|ShareAlike", re.IGNORECASE)
    seen: dict[tuple[str, str], set[str]] = {}
    for entry in entries:
        text = entry.get("readme_license")
        if entry["source"] != "wheel" or not entry["file"] or not text or not other.search(text):
            continue
        top = "/".join(entry["wheel_path"].split("/")[:2])
        seen.setdefault((top, text), set()).add(entry["version"])
    return [f"| `{top}` | {', '.join(sorted(versions))} | {text.replace('|', '/')} |"
            for (top, text), versions in sorted(seen.items())]


def provenance_markdown(entries: list[dict[str, Any]]) -> str:
    wheel = [e for e in entries if e["source"] == "wheel"]
    writer = [e for e in entries if e["source"] == "writer"]
    committed_paths = sorted({e["file"] for e in entries if e["file"]})
    total = sum(e["committed_bytes"] for e in entries
                if e["file"] and not any("byte-identical to" in note for note in e["notes"]))
    lines = [
        "# tests/data/real: where every file comes from",
        "",
        "Generated by `tools/make_real_corpus.py`; do not edit by hand (regenerate instead).",
        "`provenance.json` holds the same facts, one entry per JSONL file found in a wheel (duplicates and",
        "files left out included) and one per file written by NeMo Gym 0.7.0's own code.",
        "",
        f"Committed: {len(committed_paths)} JSONL files, {total:,} bytes.",
        "",
        "## License",
        "",
        "Every wheel file comes from the `nemo-gym` distributions on PyPI (NVIDIA), licensed Apache-2.0",
        "(`nemo_gym-<version>.dist-info/licenses/LICENSE` in each wheel), which permits redistribution;",
        "the committed samples are unmodified rows of those files. Three sub-directories of the wheels carry",
        "their own license file: `responses_api_agents/pinchbench/LICENSE` (MIT, PinchBench),",
        "`resources_servers/legal_agent_bench/vendor/harvey_labs/LICENSE` (MIT, Harvey AI, for vendored code)",
        "and `resources_servers/bbq/LICENSE` (Apache-2.0).",
        "",
        "The example rows also quote third-party datasets, and several servers' READMEs name a data license",
        "other than Apache-2.0 (listed below, from each README's License section; servers whose README has",
        "none are not listed). Data a README puts under a **non-commercial** license is not committed:",
        *[f"`{prefix}` ({why})" + (";" if i < len(EXCLUDED_BY_LICENSE) - 1 else ".")
          for i, (prefix, why) in enumerate(EXCLUDED_BY_LICENSE.items())],
        "CC BY and CC BY-SA data needs attribution (the table is that attribution); MIT data needs its notice,",
        "which is the upstream project's. The `nemo-gym-0.7.0-writers/` rows are synthetic (arithmetic",
        "questions written by the generator), written by NeMo Gym 0.7.0 code (Apache-2.0).",
        "",
        "| directory (in the wheels) | README read in release | its README's License section |",
        "|---|---|---|",
        *license_rows(entries),
        "",
        "## Released example data (source `wheel`)",
        "",
        "Wheels: " + ", ".join(f"{v} (`{h[:12]}…`)" for v, h in WHEELS.items()) + "; all `py3-none-any`,",
        "fetched with `pip download --no-deps --only-binary=:all: --python-version 3.14 nemo-gym==X`.",
        "",
        "Kinds: `rollouts` (every row has `response`), `task_dataset` (rows with `responses_create_params`",
        "and no `response`), `materialized_inputs` / `reward_profiling` (NeMo Gym's own file-name suffixes;",
        "its aggregator skips `_materialized_inputs` and `_failures` by name, not `_reward_profiling`), `other`.",
        "",
        (f"Sampling: a file within its budget ({BUDGET['rollouts']:,} bytes for rollouts, {BUDGET['task_dataset']:,}"
         f" for task datasets, {DEFAULT_BUDGET:,} otherwise) is kept whole; otherwise whole rows in the order"),
        "first, last, middle, quarter points, ... while they fit, else the smallest row (not for task",
        f"datasets). Files whose kept rows exceed {FILE_CAP:,} bytes are left out. Rows are byte-identical to the",
        "original lines (`kept_line_numbers` in provenance.json gives their 1-based line numbers).",
        "",
        "| version | JSONL files in wheel | new (not in an earlier wheel) | committed | left out | duplicates |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for version in WHEELS:
        new = [e for e in wheel if e["version"] == version]
        dups = [d for e in wheel for d in e["also_in"] if d["version"] == version]
        lines.append(f"| {version} | {len(new) + len(dups)} | {len(new)} | {sum(1 for e in new if e['file'])} | "
                     f"{sum(1 for e in new if not e['file'])} | {len(dups)} |")
    lines += ["", "| kind | distinct files | committed | rows kept / original | bytes committed / original |",
              "|---|---:|---:|---:|---:|"]
    distinct = wheel
    for kind in sorted({e["kind"] for e in distinct}):
        mine = [e for e in distinct if e["kind"] == kind]
        kept = [e for e in mine if e["file"]]
        lines.append(f"| {kind} | {len(mine)} | {len(kept)} | {sum(e['kept_rows'] for e in kept):,} / "
                     f"{sum(e['original_rows'] for e in mine):,} | {sum(e['committed_bytes'] for e in kept):,} / "
                     f"{sum(e['original_bytes'] for e in mine):,} |")
    lines += ["", "### Committed files", "", "| file | kind | rows kept / original | bytes | also identical in |",
              "|---|---|---:|---:|---|"]
    for entry in distinct:
        if not entry["file"]:
            continue
        also = sorted({d["version"] if d["wheel_path"] == entry["wheel_path"] else f"{d['version']} `{d['wheel_path']}`"
                       for d in entry["also_in"]})
        name = entry["file"].removeprefix("tests/data/real/")
        lines.append(f"| `{name}` | {entry['kind']} | {entry['kept_rows']} / {entry['original_rows']} | "
                     f"{entry['committed_bytes']:,} | {', '.join(also)} |")
    lines += ["", "### Left out", "", "| version | wheel path | kind | rows | bytes | why |", "|---|---|---|---:|---:|---|"]
    for entry in distinct:
        if entry["file"]:
            continue
        lines.append(f"| {entry['version']} | `{entry['wheel_path']}` | {entry['kind']} | {entry['original_rows']} | "
                     f"{entry['original_bytes']:,} | {entry['reason']} |")
    notes = [e for e in distinct if e["notes"]]
    if notes:
        lines += ["", "### Notes on particular files", ""]
        for entry in notes:
            lines.append(f"- {entry['version']} `{entry['wheel_path']}`: {'; '.join(entry['notes'])}")
    lines += [
        "",
        "## Rows written by NeMo Gym 0.7.0 (source `writer`)",
        "",
        "Regenerate with `/tmp/nemo-gym-0.7-venv/bin/python tools/make_real_corpus.py --generated-only`",
        "(the venv comes from `bash /work/shared/tools/nemo-gym-0.7-venv.sh`). NeMo Gym's collector,",
        "`single_agent_turn` and `single_agent_turn_legacy` servers and capture writer run unchanged;",
        "the Resources Server, Agent Server and model are scripted, and the collector's clock is a counter.",
        "Output is byte-identical from run to run (checked by regenerating and comparing sha256). Fixed by the",
        "generator: ids (`mc_<rollout>_<n>`, `resp_…`, `call_…`, `inv_…`), capture timestamps (from",
        "2026-01-01T00:00:00Z) and token counts. `ng_perf.total_latency_ms` (125.0) comes from the counter clock,",
        "not from a measurement. Things that vary from run to run never reach the files: the uuid4",
        "session ids of the `single_agent_turn` server (they appear only in requests), the temporary capture",
        "directory, and wall-clock time (arith-008 really waits 0.5 s so that its 0.05 s deadline passes).",
        "",
    ]
    for entry in writer:
        name = entry["file"].removeprefix("tests/data/real/")
        rows = f"{entry['original_rows']} row{'s' if entry['original_rows'] != 1 else ''}"
        lines.append(f"- `{name}` ({entry['kind']}, {rows}, {entry['committed_bytes']:,} bytes):"
                     f" written by {entry['writer']}.")
        for scenario in entry.get("scenarios") or []:
            lines.append(f"  - {scenario}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--wheels-only", action="store_true", help="only the released example data")
    which.add_argument("--generated-only", action="store_true", help="only the rows NeMo Gym 0.7.0 writes")
    parser.add_argument("--wheel-dir", type=Path, default=Path("/tmp/ng-wheels"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    entries = load_entries(out)
    if not args.generated_only:
        entries = [e for e in entries if e["source"] != "wheel"] + build_wheel_part(out, args.wheel_dir, list(WHEELS))
    if not args.wheels_only:
        try:
            import nemo_gym  # noqa: F401
        except ImportError:
            sys.exit("make_real_corpus: the NeMo Gym part needs nemo-gym 0.7.0; run it with the venv's python "
                     "(bash /work/shared/tools/nemo-gym-0.7-venv.sh prints it)")
        entries = [e for e in entries if e["source"] != "writer"] + build_writer_part(out)
    write_provenance(out, entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
