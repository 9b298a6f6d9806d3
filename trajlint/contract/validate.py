"""Validate instances against the packaged schemas, with the fastest backend available.

jsonschema-rs validates a rollout section faster than orjson parses it; python-jsonschema is 50-100
times slower but always installed. Both are wrapped to yield the same backend-neutral
`SchemaError` (instance path, keyword, the schema value of that keyword, the offending value, the
schema object holding the keyword), from which trajlint writes its own messages — so a finding
never depends on which library found it. Neither backend ever fetches anything: the Rust one
runs `offline` on a registry of the packaged schemas, the Python one on a registry without
retrieval.

`TRAJLINT_SCHEMA_BACKEND=python|rust` forces a backend (the tests compare both); the default
uses jsonschema-rs when it is installed.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from functools import cache
from typing import Any, NamedTuple, Protocol
from urllib.parse import urljoin

from trajlint.contract import schemas
from trajlint.pointer import resolve, unescape


class SchemaError(NamedTuple):
    path: tuple[str | int, ...]  # where in the validated instance
    keyword: str | None  # the failing keyword; None for a `false` subschema
    expected: Any  # the keyword's value in the schema (e.g. the enum's options)
    instance: Any  # the offending value
    schema: Any  # the schema object that holds the keyword (e.g. `properties` for `additionalProperties`)


class Checker(Protocol):
    def is_valid(self, instance: Any) -> bool: ...

    def errors(self, instance: Any) -> Iterator[SchemaError]: ...


def backend() -> str:
    """"rust" or "python": the backend this process validates with."""
    return _backend()


@cache
def _backend() -> str:
    wanted = os.environ.get("TRAJLINT_SCHEMA_BACKEND", "auto").lower()
    if wanted not in ("auto", "rust", "python"):
        raise ValueError(f"TRAJLINT_SCHEMA_BACKEND must be auto, rust or python, not {wanted!r}")
    if wanted == "python":
        return "python"
    if wanted == "rust":
        import jsonschema_rs  # noqa: F401  (asked for by name: missing is an error)
    # Found, not imported: it is imported where a row is validated. A run whose rows the core
    # proves (the reporting process of `--jobs N`, a clean file) never loads it, which saves
    # about 13 ms of start-up and 3-5 MiB of resident memory.
    elif importlib.util.find_spec("jsonschema_rs") is None:
        return "python"
    return "rust"


def _base() -> str:
    return schemas.load(schemas.names()[0])["$id"].rsplit("/", 1)[0] + "/"


def _uri(ref: str) -> str:
    return urljoin(_base(), ref)


# -- python-jsonschema ------------------------------------------------------------------------------


#: Reported instead of the errors of an instance too deeply nested for a backend to walk
#: (jsonschema-rs stops at about 255 levels, python-jsonschema at Python's recursion limit).
TOO_DEEP = SchemaError((), "depth", None, None, None)


class _LastValid:
    """Remembers the last instance found valid, so that asking again costs nothing.

    A schema rule asks for a row section's errors and the build whether the same section is
    valid (in either order): one validation, not two. Held by identity (and kept alive, so the
    identity cannot be reused); rows are never modified.
    """

    def __init__(self) -> None:
        self._last_valid: Any = None

    def _remember(self, instance: Any, valid: bool) -> bool:
        self._last_valid = instance if valid else None
        return valid

    def _known_valid(self, instance: Any) -> bool:
        return instance is self._last_valid and instance is not None


class _PythonChecker(_LastValid):
    def __init__(self, validator: Any):
        super().__init__()
        self._validator = validator

    def is_valid(self, instance: Any) -> bool:
        if self._known_valid(instance):
            return True
        try:
            return self._remember(instance, self._validator.is_valid(instance))
        except RecursionError:
            return False

    def errors(self, instance: Any) -> Iterator[SchemaError]:
        if self._known_valid(instance):
            return
        try:
            found = [
                SchemaError(tuple(e.absolute_path), e.validator, e.validator_value, e.instance, e.schema)
                for e in self._validator.iter_errors(instance)
            ]
        except RecursionError:
            found = [TOO_DEEP]
        self._remember(instance, not found)
        yield from found


# -- jsonschema-rs ----------------------------------------------------------------------------------

_RUST_KEYWORDS = {"falseSchema": None}


@cache
def _documents() -> dict[str, dict[str, Any]]:
    return {doc["$id"]: doc for doc in (schemas.load(name) for name in schemas.names())}


@cache
def _rust_registry() -> Any:
    import jsonschema_rs

    return jsonschema_rs.Registry(list(_documents().items()))


def _schema_at(location: str) -> tuple[Any, Any]:
    """(the keyword's value, the schema object holding it) at an absolute keyword location."""
    uri, _, fragment = location.partition("#")
    document = _documents().get(uri)
    if document is None or not fragment.startswith("/"):
        return None, None
    if "/dependentRequired/" in fragment:
        # jsonschema-rs points into the keyword's value (`…/dependentRequired/0`); name the keyword.
        fragment = fragment[: fragment.rindex("/dependentRequired/") + len("/dependentRequired")]
    parent_pointer, _, keyword = fragment.rpartition("/")
    parent = resolve(document, parent_pointer, None)
    if not isinstance(parent, dict):
        return None, None
    return parent.get(unescape(keyword)), parent


class _RustChecker(_LastValid):
    def __init__(self, schema: dict[str, Any]):
        import jsonschema_rs

        super().__init__()
        self._validator = jsonschema_rs.validator_for(schema, registry=_rust_registry(), offline=True)

    def is_valid(self, instance: Any) -> bool:
        if self._known_valid(instance):
            return True
        try:
            return self._remember(instance, self._validator.is_valid(instance))
        except (ValueError, RecursionError):
            return False

    def errors(self, instance: Any) -> Iterator[SchemaError]:
        # Most sections are valid, and asking whether is much cheaper than collecting no errors
        # (branches that only decide stop at the first failure): ask first.
        if self.is_valid(instance):
            return
        try:
            raw = list(self._validator.iter_errors(instance))
        except (ValueError, RecursionError):
            yield TOO_DEEP
            return
        self._remember(instance, not raw)
        for error in raw:
            name = error.kind.name
            keyword = _RUST_KEYWORDS.get(name, name)
            location = error.absolute_keyword_location or ""
            expected, holder = _schema_at(location)
            if keyword == "required" and "/dependentRequired/" in location:
                keyword = "dependentRequired"  # reported as `required` by jsonschema-rs
            if keyword is None:
                expected, holder = False, None
            yield SchemaError(tuple(error.instance_path), keyword, expected, error.instance, holder)


# -- cached checkers --------------------------------------------------------------------------------


def checker(name: str) -> Checker:
    """A checker for the packaged schema `name` (e.g. `trajectory`), built once per process."""
    return _checker(name.removesuffix(schemas.SUFFIX), backend())


def part_checker(ref: str) -> Checker:
    """A checker for one part of a packaged schema, e.g. `trajectory.schema.json#/$defs/TrajectoryTurn`."""
    return _part_checker(ref, backend())


@cache
def _checker(name: str, which: str) -> Checker:
    if which == "rust":
        return _RustChecker(schemas.load(name))
    return _PythonChecker(schemas.validator(name))


@cache
def _part_checker(ref: str, which: str) -> Checker:
    if which == "rust":
        return _RustChecker({"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": _uri(ref)})
    return _PythonChecker(schemas.part_validator(ref))
