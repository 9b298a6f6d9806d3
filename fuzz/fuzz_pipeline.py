"""Fuzz the whole pipeline: bytes -> read -> build -> check -> every report format.

A crash is any exception that escapes, an `internal-error` finding, a pointer that names no
place in its row, or a report that is not well-formed (the JSON formats must parse, JUnit must
be XML, text must encode as UTF-8).

    python fuzz/fuzz_pipeline.py -runs=100000             # atheris (libFuzzer) when installed
    python fuzz/fuzz_pipeline.py -max_total_time=600
    python fuzz/fuzz_pipeline.py --pure -runs=5000 -seed=7 # the pure-Python mutation fuzzer

The first byte of an input is its *mode*: how the rest is handed to trajlint (plain JSONL, a
one-row .json, gzip or zstd compressed or merely named so, standard input), with which
max-row-bytes and with which read chunk size. Inputs that crash are written to fuzz/crashes/
(libFuzzer's `crash-*` files there too); tests/test_guarantees.py replays every one of them.
See fuzz/README.md.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CRASHES = HERE / "crashes"
SEED_SOURCES = (
    ROOT / "tests" / "data" / "contract" / "clean-rollouts.jsonl",
    ROOT / "examples",
    ROOT / "tests" / "data" / "hostile",
)
FORMATS = ("full", "concise", "json", "jsonl", "sarif", "github", "junit")

if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))


class Crash(AssertionError):
    """The pipeline did something it must never do on any input."""


# ---------------------------------------------------------------------------------------------
# The target


_CONTAINERS = ("plain", "json", "gzip", "zstd", "fake-gzip", "fake-zstd", "stdin", "file")
_CHUNKS = (None, 1, 2, 3, 7, 64, 1000, 4096)


def decode_mode(mode: int, size: int) -> tuple[str, int, int | None]:
    """(container, max_row_bytes, read chunk size or None for the default) of a mode byte."""
    limits = (256 * 1024 * 1024, 64, 1024, size // 2 + 1)
    return _CONTAINERS[mode & 7], limits[mode >> 3 & 3], _CHUNKS[mode >> 5 & 7]


@contextlib.contextmanager
def _chunk_size(size: int | None) -> Iterator[None]:
    """Small read chunks put line boundaries, carried lines and oversize checks everywhere."""
    from trajlint.read import decompress

    saved = decompress._CHUNK_BYTES, decompress._ZSTD_READ_BYTES
    if size is not None:
        decompress._CHUNK_BYTES = decompress._ZSTD_READ_BYTES = size
    try:
        yield
    finally:
        decompress._CHUNK_BYTES, decompress._ZSTD_READ_BYTES = saved


class Pipeline:
    """Everything that is loaded once: the rules, and a scratch directory for the input file."""

    def __init__(self) -> None:
        from trajlint.check.registry import load_rules

        self.rules = load_rules()
        self.fast_rules = _fast_path_rules(self.rules)
        self.input_rules = [spec for spec in self.rules.values() if spec.entry.family == "input"]
        self.internal = next(spec for spec in self.rules.values() if spec.name == "internal-error")
        # Writes to a disk-backed /tmp cost milliseconds each; shared memory when there is some.
        shm = "/dev/shm"
        self.scratch = tempfile.mkdtemp(prefix="trajlint-fuzz-", dir=shm if os.path.isdir(shm) else None)
        atexit.register(shutil.rmtree, self.scratch, ignore_errors=True)

    def _sources(self, container: str, content: bytes) -> list:
        import zstandard

        from trajlint.read import Source, iter_sources

        if container == "stdin":
            return list(iter_sources(["-"], stdin=io.BytesIO(content)))
        name, data = {
            "plain": ("in.jsonl", content),
            "file": ("in.jsonl", content),
            "json": ("in.json", content),
            "gzip": ("in.jsonl.gz", gzip.compress(content, mtime=0)),
            "zstd": ("in.jsonl.zst", zstandard.ZstdCompressor().compress(content)),
            "fake-gzip": ("in.jsonl.gz", content),
            "fake-zstd": ("in.jsonl.zst", content),
        }[container]
        if container != "file":
            # A stream stands in for the file: the same reading code, without a disk write per input.
            return [Source(name, stream=io.BytesIO(data))]
        path = os.path.join(self.scratch, name)
        with open(path, "wb") as handle:
            handle.write(data)
        return list(iter_sources([path]))

    def __call__(self, data: bytes) -> None:
        if not data:
            data = b"\0"
        container, limit, chunk = decode_mode(data[0], len(data) - 1)
        if chunk is not None and chunk < 64 and len(data) > 4096:
            # Byte-sized reads of a big compressed input take seconds under instrumentation, and
            # small inputs already cross every boundary that they can.
            chunk = 64
        with _chunk_size(chunk):
            self._check(container, data[1:], limit)

    def _check(self, container: str, content: bytes, limit: int) -> None:
        from trajlint.check.run import run
        from trajlint.cli.build_job import write_builds
        from trajlint.report import baseline, document
        from trajlint.report.formats import renderer
        from trajlint.report.statistics import render_json, render_text

        _core_agrees([content] if container == "json" else content.split(b"\n"))
        if self.fast_rules is not None:
            self._fast_path_agrees(container, content, limit)
        sources = self._sources(container, content)
        with _core_mode("check" if self.fast_rules is not None else None):
            result = run(sources, self.rules, max_row_bytes=limit)
        internal = [f.message for f in result.findings if f.name == "internal-error"]
        if internal or result.internal_errors:
            raise Crash(f"internal error: {internal}")
        _pointers_resolve(result.findings, [content] if container == "json" else content.split(b"\n"))
        report = document.build(
            result, self.rules.values(), files=[getattr(s, "path", "") for s in sources], root=self.scratch
        )
        for name in FORMATS:
            _well_formed(name, "".join(renderer(name)(report)))
        _well_formed("json", "".join(render_json(report)))
        _well_formed("text", "".join(render_text(report)))
        # As `trajlint baseline` does: it records what `check` lists, which leaves out availability
        # findings; `check --baseline` then keeps those, and lists them only when asked.
        recorded = json.loads(baseline.dumps(baseline.record(report.findings)))
        known = baseline.Baseline("baseline.json", Counter(dict(baseline._parse_entry(e) for e in recorded["entries"])))
        kept, use = known.apply(result.findings)
        kept = [f for f in kept if not f.availability]
        if kept or use["stale"]:
            raise Crash(f"a baseline of a run does not cover the same run: {len(kept)} kept, {use}")

        built = write_builds(
            self._sources(container, content), self.input_rules, io.BytesIO(), self.internal, max_row_bytes=limit
        )
        if built.internal_errors:
            raise Crash("internal error in trajlint build")


    def _fast_path_agrees(self, container: str, content: bytes, limit: int) -> None:
        """The rules the core proves rows clean of (`_fast_path_rules`) report the same with the
        core off and on, and a checked run (`TRAJLINT_CORE=check`: the core proves, Python checks
        every proved row) finds no difference."""
        from trajlint.check.run import run
        from trajlint.read import native
        from trajlint.report import document
        from trajlint.report.formats import renderer

        reports = {}
        for mode in ("off", "on", "check"):
            sources = self._sources(container, content)
            with _core_mode(mode):
                try:
                    result = run(sources, self.fast_rules, max_row_bytes=limit)
                except native.CoreMismatch as exc:
                    raise Crash(str(exc)) from None
            report = document.build(
                result, self.fast_rules.values(), files=[getattr(s, "path", "") for s in sources], root=self.scratch
            )
            reports[mode] = "".join(renderer("json")(report))
        if not reports["off"] == reports["on"] == reports["check"]:
            raise Crash("the fast path's report differs from the Python path's")


def _fast_path_rules(rules: dict) -> dict | None:
    """The rules of a run that takes the native core's fast path: those about the line itself,
    the run-level ones, those run on a proved row's reduced row, and the families the core proves
    (`trajlint.check.fast`); None when the core is not built."""
    from trajlint.check import fast
    from trajlint.read import native

    if not native.available():
        return None
    proved = native._module().PROVED  # type: ignore[union-attr]
    codes = set(fast.STRICT | fast.RUN_LEVEL | fast.REDUCED)
    for bit, members in fast.FAMILIES.items():
        if proved & bit:
            codes |= members
    return {code: spec for code, spec in rules.items() if spec.code in codes}


@contextlib.contextmanager
def _core_mode(mode: str | None) -> Iterator[None]:
    """Run with the core `off`, `on` or `check`, as TRAJLINT_CORE would say (None: as it says)."""
    from trajlint.read import native

    if mode is None:
        yield
        return
    saved = native.mode
    native.mode = lambda: mode  # type: ignore[assignment]
    try:
        yield
    finally:
        native.mode = saved  # type: ignore[assignment]


_MISSING = object()


def _core_agrees(lines: list[bytes]) -> None:
    """The native core's verdict on every line is the Python path's (when the core is built; the
    run above then uses it too, as `TRAJLINT_CORE=on` does)."""
    from trajlint.read import native

    if not native.available():
        return
    from trajlint.check.subject import row_subject

    scan_line = native._module().scan_line  # type: ignore[union-attr]
    for number, raw in enumerate(lines, 1):
        try:
            row_subject("fuzz", number, raw, scan_line, checking=True)
        except native.CoreMismatch as exc:
            raise Crash(str(exc)) from None


def _pointers_resolve(findings: list, lines: list[bytes]) -> None:
    """Every pointer of a finding, and of each place it cites, names a place its row has."""
    import orjson

    from trajlint.pointer import resolve

    rows: dict[int, object] = {}
    for finding in findings:
        for place in (finding, *finding.related):
            if not place.pointer or place.path == "" or not 0 < place.line <= len(lines):
                continue
            if place.line not in rows:
                rows[place.line] = orjson.loads(lines[place.line - 1])
            if resolve(rows[place.line], place.pointer, _MISSING) is _MISSING:
                raise Crash(f"{finding.name} points at {place.pointer}, which line {place.line} does not have")


def _well_formed(name: str, text: str) -> None:
    text.encode("utf-8")  # a lone surrogate would make the CLI fail when it writes the report
    if name in ("json", "sarif"):
        json.loads(text)
    elif name == "jsonl":
        for line in text.splitlines():
            json.loads(line)
    elif name == "junit":
        ET.fromstring(text.encode("utf-8"))


_PIPELINE: Pipeline | None = None


def check_input(data: bytes) -> None:
    """Run one input through the pipeline; raises on a crash."""
    global _PIPELINE
    if _PIPELINE is None:
        _PIPELINE = Pipeline()
    _PIPELINE(data)


# ---------------------------------------------------------------------------------------------
# Seeds


def seeds() -> list[bytes]:
    """Mode byte 0 (plain JSONL) + each seed line, each whole seed file, and the crash inputs."""
    found: list[bytes] = []
    for source in SEED_SOURCES:
        if not source.exists():
            continue
        files = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source]
        for path in files:
            if path.name.startswith(".") or path.suffix == ".md":
                continue
            content = path.read_bytes()
            if path.suffix in (".gz", ".zst"):
                found.append(bytes([_CONTAINERS.index("fake-gzip" if path.suffix == ".gz" else "fake-zstd")]) + content)
                continue
            if len(content) < 64 * 1024:
                found.append(b"\0" + content)
            found.extend(b"\0" + line + b"\n" for line in content.splitlines() if line.strip())
    if CRASHES.is_dir():
        found.extend(p.read_bytes() for p in sorted(CRASHES.iterdir()) if p.is_file() and not p.name.startswith("."))
    return list(dict.fromkeys(found))


# ---------------------------------------------------------------------------------------------
# The pure-Python mutation fuzzer (used when atheris is absent, and by the test suite)

_JUNK: tuple[object, ...] = (
    None, "", "7", -1, 0, 1.5, -0.0, True, False, [], {}, [None], {"": None},
    18446744073709551616, -9223372036854775809, 1e308, "\u0000", "\ud7ff\U0010ffff", "a/b~c",
    {"model_call_id": "x"}, [{"model_call_id": 1}], "x" * 300,
)
_TEXT_JUNK = (
    b"NaN", b"-Infinity", b"1e999", b"123456789012345678901234567890", b"\xff", b"\xef\xbb\xbf",
    b"\r", b"\n", b"\x00", b"\"\\ud800\"", b"[" * 40, b"]", b"}", b"{", b'"', b",", b":", b"\\",
    b'"a":1,"a":2', b"\t", b"0", b"-", b"tru", b"null",
)


def _paths(node: object, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*path, index))


def _mutate_json(rnd: random.Random, line: bytes) -> bytes | None:
    import orjson

    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    places = list(_paths(row))
    for _ in range(rnd.randint(1, 4)):
        path = rnd.choice(places)
        if not path:
            continue
        node = row
        try:
            for key in path[:-1]:
                node = node[key]
            last = path[-1]
            action = rnd.randrange(6)
            if action == 0 and isinstance(node, dict):
                node.pop(last, None)
            elif action == 1 and isinstance(node, list) and last < len(node):
                # duplicate an item (a copy: a shared one could be mutated into a cycle)
                node.insert(last, copy.deepcopy(node[last]))
            elif action == 2:
                value = node[last]
                node[last] = -value if type(value) in (int, float) else value
            elif action == 3 and isinstance(node, list) and len(node) > 1:
                other = rnd.randrange(len(node))
                node[last], node[other] = node[other], node[last]
            else:
                node[last] = rnd.choice(_JUNK)
        except (KeyError, IndexError, TypeError):
            continue
    # json, not orjson: it writes integers beyond 64 bits as they are
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode()


def _mutate_bytes(rnd: random.Random, data: bytes, pool: list[bytes]) -> bytes:
    data = bytearray(data)
    for _ in range(rnd.randint(1, 6)):
        action = rnd.randrange(7)
        at = rnd.randint(0, len(data))
        if action == 0 and data:
            data[min(at, len(data) - 1)] = rnd.randrange(256)
        elif action == 1:
            data[at:at] = rnd.choice(_TEXT_JUNK)
        elif action == 2 and data:
            del data[at : at + rnd.randint(1, 64)]
        elif action == 3:
            data = data[:at]  # truncation: the most common real-world damage
        elif action == 4:
            other = rnd.choice(pool)
            start = rnd.randint(0, len(other))
            data[at:at] = other[start : start + rnd.randint(1, 512)]
        elif action == 5 and data:
            end = min(len(data), at + rnd.randint(1, 256))
            data[at:at] = data[at:end] * rnd.randint(1, 8)
        else:
            data[at:at] = b"\n"
    return bytes(data)


def mutate(rnd: random.Random, seed: bytes, pool: list[bytes]) -> bytes:
    """A new input from `seed`: a structural edit of a row, damage to its bytes, or both
    (splicing in bytes from the pool)."""
    mode, content = (seed[0], seed[1:]) if seed else (0, b"")
    if rnd.random() < 0.25:
        mode = rnd.randrange(256)
    lines = content.split(b"\n")
    if rnd.random() < 0.6 and lines:
        index = rnd.randrange(len(lines))
        mutated = _mutate_json(rnd, lines[index])
        if mutated is not None:
            lines[index] = mutated
        content = b"\n".join(lines)
    if rnd.random() < 0.5:
        content = _mutate_bytes(rnd, content, pool)
    return bytes([mode]) + content


def pure_fuzz(runs: int | None, max_total_time: float | None, seed: int, *, save_to: Path | None = CRASHES) -> list[bytes]:
    """Mutate seeds at random (deterministic for a seed); returns the crashing inputs, each
    saved under `save_to` as it is found."""
    rnd = random.Random(seed)
    pool = seeds()
    crashes: list[bytes] = []
    start = time.monotonic()
    done = 0
    for data in pool:  # every seed once first: a seed that crashes is a regression
        crashes += _try(data, save_to)
    while (runs is None or done < runs) and (max_total_time is None or time.monotonic() - start < max_total_time):
        data = mutate(rnd, rnd.choice(pool), pool)
        found = _try(data, save_to)
        crashes += found
        done += 1
        if not found and rnd.random() < 0.02 and len(data) < 256 * 1024:
            pool.append(data)  # keep some mutants, so damage compounds
    return crashes


def _try(data: bytes, save_to: Path | None) -> list[bytes]:
    try:
        check_input(data)
    except Exception as exc:  # noqa: BLE001 - every escape is a finding of the fuzzer
        if save_to is not None:
            save_to.mkdir(exist_ok=True)
            name = f"crash-{hashlib.sha1(data).hexdigest()[:16]}"
            (save_to / name).write_bytes(data)
            print(f"crash ({type(exc).__name__}: {str(exc)[:200]}) -> {save_to / name}", file=sys.stderr)
        return [data]
    return []


# ---------------------------------------------------------------------------------------------
# Entry point


def _dictionary() -> str:
    """A libFuzzer dictionary: the contract's keys and enum values as JSON tokens, plus the
    literals that trouble JSON readers. Made from the packaged schemas, so it never drifts."""
    from trajlint.contract import schemas

    tokens: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    tokens.update(f'"{name}":' for name in value)
                elif key in ("enum", "const"):
                    tokens.update(f'"{v}"' for v in (value if isinstance(value, list) else [value]) if isinstance(v, str))
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for name in schemas.names():
        if name != "report":
            walk(schemas.load(name))
    tokens.update(t.decode("latin-1") for t in _TEXT_JUNK)
    directory = tempfile.mkdtemp(prefix="trajlint-fuzz-dict-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    path = os.path.join(directory, "trajlint.dict")
    with open(path, "w", encoding="latin-1") as handle:
        for token in sorted(tokens):
            escaped = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else f"\\x{ord(c):02x}" for c in token)
            handle.write(f'"{escaped}"\n')
    return path


def _import_everything() -> None:
    """Rules, formats and the build are imported lazily by trajlint; atheris only instruments
    (and so only gets coverage feedback from) modules imported inside its block."""
    import importlib
    import pkgutil

    import trajlint

    for module in pkgutil.walk_packages(trajlint.__path__, "trajlint."):
        importlib.import_module(module.name)


def _custom_mutator(atheris):
    """libFuzzer's byte mutations, and half of the time the JSON-aware ones of the pure fuzzer:
    byte flips alone rarely turn one valid row into another."""
    pool = seeds()

    def mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rnd = random.Random(seed)
        if rnd.random() < 0.5:
            return atheris.Mutate(data, max_size)
        return mutate(rnd, data, pool)[:max_size]

    return mutator


def _flag(args: list[str], name: str) -> str | None:
    return next((a.split("=", 1)[1] for a in args if a.startswith(f"-{name}=")), None)


def main(argv: list[str]) -> int:
    pure = "--pure" in argv
    args = [a for a in argv if a != "--pure"]
    try:
        if pure:
            raise ImportError
        import atheris
    except ImportError:
        runs, limit = _flag(args, "runs"), _flag(args, "max_total_time")
        if not pure:
            print("atheris is not installed: running the pure-Python mutation fuzzer", file=sys.stderr)
        started = time.monotonic()
        found = pure_fuzz(
            int(runs) if runs else (None if limit else 10_000),
            float(limit) if limit else None,
            int(_flag(args, "seed") or 0),
        )
        print(f"{len(found)} crash(es) in {time.monotonic() - started:.0f} s", file=sys.stderr)
        return 1 if found else 0

    with atheris.instrument_imports(include=["trajlint"]):
        _import_everything()
    check_input(b"\0")  # load everything before libFuzzer starts timing

    corpus = [a for a in args[1:] if not a.startswith("-")]
    if not corpus:  # seed a corpus directory of our own
        directory = HERE / "corpus"
        directory.mkdir(exist_ok=True)
        for data in seeds():
            (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)
        args.append(str(directory))
    if _flag(args, "artifact_prefix") is None:
        CRASHES.mkdir(exist_ok=True)
        args.insert(1, f"-artifact_prefix={CRASHES}{os.sep}")
    if _flag(args, "dict") is None:
        args.insert(1, f"-dict={_dictionary()}")
    if _flag(args, "max_len") is None:
        args.insert(1, "-max_len=65536")
    atheris.Setup(args, check_input, custom_mutator=_custom_mutator(atheris))
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
