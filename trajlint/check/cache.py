"""The result cache: a run whose files, settings and trajlint are unchanged is not checked again.

A *run* (`check.run`) is the unit the cache keeps, since run-level rules judge its files
together: one entry per run, keyed on

- the SHA-256 of every byte of each of its files, with the path each is reported under and the
  run's name,
- trajlint itself: its version and the content of its code, rule catalog and schemas, so that
  any other trajlint (an upgrade, an edited checkout) misses,
- every setting that changes what the check stage finds: the rules with their severities, the
  row size limit, the kinds of file the user gave, how files group into runs, the validation
  backend.

What applies after the check stage (per-file ignores, the baseline, `show-availability`, the
fail level, the output formats) is not in the key: it is applied to cached and fresh results
alike, so one entry serves every report. An entry holds the run's findings, coverage, counts and
health numbers, which add up across runs to the whole run's result.

Content is always hashed; file metadata (size, mtime, inode) is never trusted, since a file
rewritten with its old size and timestamp (`touch -d`, a restored backup, a coarse-clock
filesystem) would otherwise keep its stale findings. The files are hashed again after a run is
checked, and the entry stored only if nothing changed meanwhile. An entry is written to a
temporary file and renamed into place, so concurrent runs read whole entries or none; one that
does not read back whole (truncated, corrupted: its checksum says) is ignored and rewritten.
Standard input, and a run holding an unreadable path, are never cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajlint import __version__
from trajlint.check import kinds
from trajlint.check.engine import Coverage, Result
from trajlint.check.executor import Executor
from trajlint.check.registry import RuleSpec
from trajlint.check.run import RunPlan, run
from trajlint.findings import Finding, Location, Rollout
from trajlint.read import Source, Unreadable
from trajlint.spill import Sorted

DEFAULT_DIR = ".trajlint_cache"
ENV_DIR = "TRAJLINT_CACHE_DIR"
#: Changes whenever an entry's layout does.
FORMAT = 1
_MAGIC = b"trajlint-cache"
_READ_BYTES = 1 << 20

_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by trajlint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


@dataclass(frozen=True, slots=True)
class ResultCache:
    """Where entries live. Nothing is created until the first entry is written."""

    directory: Path

    def _entry_path(self, key: str) -> Path:
        return self.directory / f"v{FORMAT}" / key[:2] / key

    def load(self, key: str) -> dict[str, Any] | None:
        """The entry stored under `key`, or None when there is none or it does not read back whole."""
        try:
            data = self._entry_path(key).read_bytes()
        except OSError:
            return None
        header, _, payload = data.partition(b"\n")
        parts = header.split(b" ")
        if len(parts) != 3 or parts[0] != _MAGIC or parts[1] != key.encode():
            return None
        if hashlib.sha256(payload).hexdigest().encode() != parts[2]:
            return None
        try:
            entry = json.loads(payload)
        except ValueError:
            return None
        return entry if isinstance(entry, dict) else None

    def store(self, key: str, entry: dict[str, Any]) -> bool:
        """Write `entry` under `key`, atomically; False when the directory cannot be written (the
        check goes on uncached: a read-only checkout still lints)."""
        payload = json.dumps(entry, separators=(",", ":")).encode()  # ASCII: surrogates survive
        data = b" ".join((_MAGIC, key.encode(), hashlib.sha256(payload).hexdigest().encode())) + b"\n" + payload
        target = self._entry_path(key)
        try:
            self._prepare()
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(target, data)
        except OSError:
            return False
        return True

    def _prepare(self) -> None:
        """The directory, marked as a cache (backup tools skip it) and ignored by git."""
        if (self.directory / "CACHEDIR.TAG").exists():
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        _write_atomically(self.directory / ".gitignore", b"# Created by trajlint automatically.\n*\n")
        _write_atomically(self.directory / "CACHEDIR.TAG", _CACHEDIR_TAG.encode())


def _write_atomically(target: Path, data: bytes) -> None:
    """Write beside `target` and rename over it: a reader sees the old file or the new, whole."""
    import tempfile  # (and the random numbers under it) only when an entry is written

    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def resolve_directory(given: str | None, configured: str | None, config_directory: str | None) -> Path:
    """The cache directory: `--cache-dir`, else `TRAJLINT_CACHE_DIR`, else `cache-dir` in the
    configuration (relative to its file), else `.trajlint_cache` in the project root (the
    configuration file's directory, or the working directory when there is none)."""
    if given:
        return Path(given)
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    base = Path(config_directory) if config_directory else Path.cwd()
    return base / configured if configured else base / DEFAULT_DIR


# -- the key ------------------------------------------------------------------------------------

_trajlint_digest: str | None = None


def trajlint_digest() -> str:
    """The content of trajlint's code, rule catalog and schemas (computed once a process)."""
    global _trajlint_digest
    if _trajlint_digest is None:
        from trajlint.contract.data import rules_dir, schemas_dir

        package = Path(__file__).resolve().parent.parent
        digest = hashlib.sha256(f"trajlint {__version__}\0".encode())
        for base, pattern in ((package, "**/*.py"), (rules_dir(), "*.toml"), (schemas_dir(), "*.json")):
            for path in sorted(base.glob(pattern)):
                digest.update(path.relative_to(base).as_posix().encode() + b"\0")
                digest.update(hashlib.sha256(path.read_bytes()).digest())
        # The compiled core answers too (TRAJLINT_CORE): another build of it is another trajlint.
        from trajlint.read import native

        core = native._module()
        core_file = getattr(core, "__file__", None)
        if core_file:
            digest.update(b"core\0" + hashlib.sha256(Path(core_file).read_bytes()).digest())
        _trajlint_digest = digest.hexdigest()
    return _trajlint_digest


def settings_digest(
    rules: dict[str, RuleSpec], *, max_row_bytes: int, runs: RunPlan, file_kinds: kinds.Given | None
) -> str:
    """Every setting the check stage's findings depend on."""
    described = {
        "format": FORMAT,
        "trajlint": trajlint_digest(),
        "rules": sorted((spec.code, spec.name, spec.severity) for spec in rules.values()),
        "max_row_bytes": max_row_bytes,
        "runs": [runs.mode, list(runs.groups)],
        "file_kinds": None
        if file_kinds is None
        else [file_kinds.every, file_kinds.every_origin, [list(p) for p in file_kinds.patterns], file_kinds.base, file_kinds.patterns_origin],
        "schema_backend": os.environ.get("TRAJLINT_SCHEMA_BACKEND", "auto").lower(),
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def file_digest(path: str) -> str | None:
    """SHA-256 of the file's bytes (on disk: a compressed file's compressed bytes), or None when
    it cannot be read. SHA-256 is hashed by the CPU's own instructions where it has them:
    `bench/cache.py` measures it against BLAKE2 and others."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb", buffering=0) as handle:
            buffer = bytearray(_READ_BYTES)
            view = memoryview(buffer)
            while size := handle.readinto(buffer):
                digest.update(view[:size])
    except (OSError, ValueError):
        return None
    return digest.hexdigest()


def _digests(paths: Sequence[str], jobs: int) -> list[str | None]:
    from trajlint.check.parallel import usable_cores

    # hashlib lets go of the GIL while it hashes, so threads hash files on every core (and no
    # more threads than that: `--jobs 400` is no reason for 400).
    threads = min(jobs, len(paths), usable_cores())
    if threads < 2:
        return [file_digest(p) for p in paths]
    # The thread pool (concurrent.futures, and logging under it) only when it hashes in threads.
    from concurrent.futures import ThreadPoolExecutor

    try:
        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(file_digest, paths))
    except RuntimeError:  # no thread to be had (RLIMIT_NPROC, pids.max): hashed here instead
        return [file_digest(p) for p in paths]


def _run_key(settings: str, name: str, files: Sequence[tuple[str, str]]) -> str:
    digest = hashlib.sha256(f"{settings}\0{name}\0".encode("utf-8", "surrogateescape"))
    for path, content in files:
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0" + content.encode() + b"\0")
    return digest.hexdigest()


# -- the run ------------------------------------------------------------------------------------


def cached_run(
    sources: Iterable[Source | Unreadable],
    rules: dict[str, RuleSpec],
    *,
    cache: ResultCache | None,
    max_row_bytes: int,
    jobs: int = 1,
    health_report: bool = False,
    runs: RunPlan | None = None,
    file_kinds: kinds.Given | None = None,
    progress: Callable[[Any, Any], None] | None = None,
    executor: Executor | None = None,
) -> Result:
    """`check.run.run`, with each run's result taken from `cache` when its entry is there.

    With an `executor` other than the local pool (a Ray cluster) nothing is cached: hashing the
    inputs would read every byte here, which is what handing them to the cluster avoids.

    Without a cache, or with `health_report` (NeMo Gym's report needs every row's verdict, which
    no entry keeps), this is `run` itself. Otherwise each run that misses is checked by `run` on
    its own files, which gives what the whole run gives for them: run-level rules judge one run
    at a time, and the counts and coverage of separate runs add up. A large run is checked with
    every worker; small ones are checked side by side, one per worker.
    """
    sources = list(sources)
    runs = runs or RunPlan()
    if cache is None or health_report or not sources or executor is not None:
        return run(
            sources,
            rules,
            max_row_bytes=max_row_bytes,
            jobs=jobs,
            health_report=health_report,
            runs=runs,
            file_kinds=file_kinds,
            progress=progress,
            executor=executor,
        )
    groups: dict[str, list[Source | Unreadable]] = {}  # run name -> its inputs, in input order
    for source in sources:
        groups.setdefault(runs.run_of(source.path), []).append(source)
    # Standard input and a path that cannot be read are checked every time.
    cacheable = [
        name for name, members in groups.items() if all(isinstance(s, Source) and s.stream is None for s in members)
    ]
    paths = [s.path for name in cacheable for s in groups[name]]
    digests = dict(zip(paths, _digests(paths, jobs)))
    settings = settings_digest(rules, max_row_bytes=max_row_bytes, runs=runs, file_kinds=file_kinds)
    keys: dict[str, str] = {}
    for name in cacheable:
        files = [(s.path, digests[s.path]) for s in groups[name]]
        if all(content is not None for _, content in files):
            keys[name] = _run_key(settings, name, files)  # type: ignore[arg-type]
    parts: dict[str, Result] = {}
    for name, key in keys.items():
        entry = cache.load(key)
        part = _from_entry(entry) if entry is not None else None
        if part is not None:
            parts[name] = part
    missing = [name for name in groups if name not in parts]
    parts.update(
        _check_runs({name: groups[name] for name in missing}, rules, max_row_bytes, jobs, runs, file_kinds, progress)
    )
    fresh = [name for name in missing if name in keys and not parts[name].internal_errors and _storable(parts[name])]
    if fresh:
        # Stored only if every file still holds what was hashed before it was checked.
        again = _digests([s.path for name in fresh for s in groups[name]], jobs)
        changed = {path for path, content in zip([s.path for name in fresh for s in groups[name]], again) if content != digests[path]}
        for name in fresh:
            if not any(s.path in changed for s in groups[name]):
                cache.store(keys[name], _to_entry(parts[name]))
    return _merge([parts[name] for name in groups])


def _check_runs(
    groups: dict[str, list[Source | Unreadable]],
    rules: dict[str, RuleSpec],
    max_row_bytes: int,
    jobs: int,
    runs: RunPlan,
    file_kinds: kinds.Given | None,
    progress: Callable[[Any, Any], None] | None = None,
) -> dict[str, Result]:
    """Each run's result, checked on its own (`progress` hears of the runs checked here)."""
    from trajlint.check import parallel

    settings = dict(max_row_bytes=max_row_bytes, runs=runs, file_kinds=file_kinds)
    small = [
        name
        for name, members in groups.items()
        if all(isinstance(s, Source) and s.stream is None for s in members)
        and parallel._work_bytes(members) < parallel.PARALLEL_MIN_BYTES
    ]
    results: dict[str, Result] = {}
    for name, members in groups.items():
        if name not in small or jobs < 2 or len(small) < 2:
            results[name] = run(members, rules, jobs=jobs, progress=progress, **settings)  # type: ignore[arg-type]
    small = [name for name in small if name not in results]
    if small and parallel._context().get_start_method() != "fork":  # the rules reach workers by fork
        results.update({name: run(groups[name], rules, jobs=1, **settings) for name in small})  # type: ignore[arg-type]
        small = []
    if small:
        global _worker_rules
        _worker_rules = rules  # before the workers are forked: the rules reach them so
        from concurrent.futures.process import BrokenProcessPool

        # Workers are set up as the run's own are: they ignore Ctrl-C (the parent answers it)
        # and end with their parent; as many as there are cores at most, and where a limit on
        # processes refuses them, fewer or none (the results are the same).
        try:
            started = parallel._started_pool(None, max_row_bytes, min(jobs, len(small), parallel.usable_cores()))
        except BaseException:
            _worker_rules = {}
            raise
        if started is None:
            _worker_rules = {}
            results.update({name: run(groups[name], rules, jobs=1, **settings) for name in small})  # type: ignore[arg-type]
            return {name: results[name] for name in groups}
        pool, refused, _ = started
        finished = False
        try:
            futures = {}
            for name in small:
                try:
                    with parallel._stop_signals_held():
                        futures[name] = pool.submit(_check_run_in_worker, groups[name], settings)
                except (OSError, RuntimeError) as exc:
                    raise parallel.WorkersRefused(exc) from None
            for name, future in futures.items():
                try:
                    results[name] = parallel._result(pool, future, refused)
                except BrokenProcessPool:
                    raise parallel.WorkerLost(groups[name][0].path) from None
            finished = True
        finally:
            try:
                if finished:
                    pool.shutdown(wait=True)
                else:
                    parallel._abandon(pool)
            finally:
                refused.close()
                _worker_rules = {}
    return {name: results[name] for name in groups}


_worker_rules: dict[str, RuleSpec] = {}


def _check_run_in_worker(members: list[Source], settings: dict[str, Any]) -> Result:
    result = run(members, _worker_rules, jobs=1, **settings)
    if result.health is not None:  # only the numbers travel back (a run's verdicts are not kept)
        result.health = [(name, _Health(_plain(health.summary))) for name, health in result.health]
    return result


def _plain(summary: dict[str, Any]) -> dict[str, Any]:
    """A run's health summary as plain data: the tasks of a run too large to keep them in memory
    (`health.verdicts.TaskSummaries`) are read into a dict, as an entry holds them."""
    tasks = summary["tasks"]
    return summary if isinstance(tasks, dict) else {**summary, "tasks": dict(tasks.items())}


@dataclass(frozen=True, slots=True)
class _Health:
    """A run's health as a cached result keeps it: the summary its numbers are summed from."""

    summary: dict[str, Any]


def _merge(parts: Sequence[Result]) -> Result:
    """The result of several runs, from each one's, in input order: what one run of them all gives."""
    merged = Result(Sorted(Finding.sort_key))  # on disk past a budget, as a run's own are
    for part in parts:
        merged.findings.extend(part.findings)
        for code, coverage in part.coverage.items():
            entry = merged.coverage.setdefault(code, Coverage(coverage.name))
            entry.evaluated += coverage.evaluated
            entry.unobserved += coverage.unobserved
        merged.files += part.files
        merged.lines += part.lines
        merged.rows += part.rows
        merged.internal_errors += part.internal_errors
        if part.health is not None:
            merged.health = (merged.health or []) + list(part.health)
    # Sorted stably: findings of one file tie only with findings of the same run, kept in its order.
    return merged


# -- entries ------------------------------------------------------------------------------------


#: Findings an entry holds at most. An entry is written and read whole, in memory; a run with more
#: findings than this is checked every time, so memory stays bounded whatever a run finds.
MAX_ENTRY_FINDINGS = 100_000


def _storable(result: Result) -> bool:
    """Whether an entry can hold `result` in bounded memory: not too many findings, and no run's
    task table spilled to disk (a run with that many tasks is checked every time too)."""
    if len(result.findings) > MAX_ENTRY_FINDINGS:
        return False
    return all(isinstance(health.summary["tasks"], dict) for _, health in result.health or ())


def _to_entry(result: Result) -> dict[str, Any]:
    return {
        "findings": [
            [
                f.code, f.name, f.severity, f.message, f.path, f.line, f.pointer,
                [[loc.path, loc.line, loc.pointer] for loc in f.related],
                [f.rollout.task_id, f.rollout.rollout_id] if f.rollout is not None else None,
                f.fingerprint, f.availability,
            ]
            for f in result.findings
        ],
        "coverage": [[code, c.name, c.evaluated, c.unobserved] for code, c in result.coverage.items()],
        "counts": [result.files, result.lines, result.rows],
        "health": None if result.health is None else [[name, _plain(health.summary)] for name, health in result.health],
    }


def _from_entry(entry: dict[str, Any]) -> Result | None:
    """The result an entry holds, or None when it is not one this trajlint wrote."""
    try:
        findings = [
            Finding(
                code=code, name=name, severity=severity, message=message, path=path, line=line, pointer=pointer,
                related=tuple(Location(p, n, q) for p, n, q in related),
                rollout=Rollout(*rollout) if rollout is not None else None,
                fingerprint=fingerprint, availability=availability,
            )
            for code, name, severity, message, path, line, pointer, related, rollout, fingerprint, availability in entry["findings"]
        ]
        coverage = {code: Coverage(name, evaluated, unobserved) for code, name, evaluated, unobserved in entry["coverage"]}
        files, lines, rows = entry["counts"]
        health = entry["health"]
        return Result(
            findings=findings,
            coverage=coverage,
            files=files,
            lines=lines,
            rows=rows,
            health=None if health is None else [(name, _Health(summary)) for name, summary in health],
        )
    except (KeyError, TypeError, ValueError):
        return None
