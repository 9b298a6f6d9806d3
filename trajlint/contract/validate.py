"""Validate instances against the packaged schemas, with the fastest backend available.

jsonschema-rs validates a rollout section faster than orjson parses it; python-jsonschema is 50-100
times slower but always installed. Both are wrapped to yield the same backend-neutral
`SchemaError` (instance path, keyword, the schema value of that keyword, the offending value, the
schema object holding the keyword), from which trajlint writes its own messages — so a finding
never depends on which library found it. Neither backend ever fetches anything: the Rust one
runs `offline` on a registry of the packaged schemas, the Python one on a registry without
retrieval.

`TRAJLINT_SCHEMA_BACKEND=python|rust` forces a backend (the tests compare both); the default
uses jsonschema-rs when it is installed. In a check run with the native core, the "rust" backend's
validators are the core's, compiled from the same crate at the same version (`validate_through`):
one engine in the process rather than two, with jsonschema-rs for what the core cannot be handed.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator
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
            yield _schema_error(error.instance_path, error.kind.name, error.absolute_keyword_location, error.instance)


def _schema_error(path: Any, name: str, location: str | None, instance: Any) -> SchemaError:
    """A `SchemaError` from what jsonschema-rs (or the native core, with the same crate) reports."""
    keyword = _RUST_KEYWORDS.get(name, name)
    location = location or ""
    expected, holder = _schema_at(location)
    if keyword == "required" and "/dependentRequired/" in location:
        keyword = "dependentRequired"  # reported as `required` by jsonschema-rs
    if keyword is None:
        expected, holder = False, None
    return SchemaError(tuple(path), keyword, expected, instance, holder)


# -- the native core's validators -------------------------------------------------------------------

#: The native core's `schema_validator`, when the check stage hands it over (`validate_through`).
_core_compile: Callable[[bytes], Any] | None = None
_core_checked = False


def validate_through(compile_schema: Callable[[bytes], Any] | None, checked: bool = False) -> None:
    """Validate with the native core's compiled validators (its `schema_validator`) from now on
    in this process, or with jsonschema-rs again (None). The check stage hands them over when the
    core validates exactly as jsonschema-rs does (the same crate at the same version, the same
    documents): a process then holds one validation engine. With `checked`, jsonschema-rs
    validates too and any difference raises `CoreDisagrees`."""
    global _core_compile, _core_checked
    if (compile_schema, checked) != (_core_compile, _core_checked):
        _core_compile, _core_checked = compile_schema, checked
        _checker.cache_clear()
        _part_checker.cache_clear()


class CoreDisagrees(Exception):
    """Under check, the native core's validator and jsonschema-rs answered differently."""


def _text(instance: Any) -> bytes | None:
    """orjson's JSON text of the instance, when it reads back as the instance itself: orjson
    writes NaN and the infinities as null and a tuple as a list, and refuses an integer past 64
    bits, a key that is no string and text that is no UTF-8; jsonschema-rs validates those."""
    import orjson

    try:
        text = orjson.dumps(instance)
    except TypeError:  # orjson.JSONEncodeError
        return None
    # `==` takes 1, 1.0 and True for one another, but orjson writes each as it reads it back.
    return text if orjson.loads(text) == instance else None


class _CoreChecker(_LastValid):
    """The native core's validator of a schema; jsonschema-rs's (`reference`, made when first
    needed) for an instance the core cannot be handed exactly, or a schema it does not compile."""

    def __init__(self, schema: dict[str, Any], compile_schema: Callable[[bytes], Any], reference: _RustChecker | None = None):
        import orjson

        super().__init__()
        self._schema = schema
        self._validator = compile_schema(orjson.dumps(schema))
        self._reference = reference

    def _jsonschema_rs(self) -> _RustChecker:
        if self._reference is None:
            self._reference = _RustChecker(self._schema)
        return self._reference

    def _verdict(self, instance: Any) -> tuple[bytes | None, bool | None]:
        """The instance's JSON text and the core's verdict on it; None for what it cannot take."""
        text = _text(instance) if self._validator is not None else None
        return text, None if text is None else self._validator.is_valid(text)

    def is_valid(self, instance: Any) -> bool:
        if self._known_valid(instance):
            return True
        _, valid = self._verdict(instance)
        if valid is None:
            return self._jsonschema_rs().is_valid(instance)
        return self._remember(instance, valid)

    def errors(self, instance: Any) -> Iterator[SchemaError]:
        if self._known_valid(instance):
            return
        # Asked first, as for jsonschema-rs; the instance is written as JSON once for both.
        text, valid = self._verdict(instance)
        if valid:
            self._remember(instance, True)
            return
        raw = None if valid is None else self._validator.errors(text)
        if raw is None:
            yield from self._jsonschema_rs().errors(instance)
            return
        import orjson

        self._remember(instance, not raw)
        for path, name, location, value in raw:
            yield _schema_error(path, name, location, orjson.loads(value))


class _CheckedChecker:
    """Both engines on every call, the core's answer compared with jsonschema-rs's."""

    def __init__(self, core: _CoreChecker, reference: _RustChecker, what: str):
        self._core, self._reference, self._what = core, reference, what

    def is_valid(self, instance: Any) -> bool:
        core, reference = self._core.is_valid(instance), self._reference.is_valid(instance)
        if core != reference:
            raise CoreDisagrees(f"{self._what}: the core finds the instance {'' if core else 'in'}valid, jsonschema-rs {'' if reference else 'in'}valid")
        return reference

    def errors(self, instance: Any) -> Iterator[SchemaError]:
        core, reference = list(self._core.errors(instance)), list(self._reference.errors(instance))
        # The same errors in any order (no finding depends on it: `src/validators.rs`), compared
        # by repr: `==` takes 1, 1.0 and True for one another, and a message would not.
        if sorted(map(repr, core)) != sorted(map(repr, reference)):
            raise CoreDisagrees(f"{self._what}: the core reports {core!r}, jsonschema-rs {reference!r}")
        yield from reference


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
        return _compiled(schemas.load(name), name)
    return _PythonChecker(schemas.validator(name))


@cache
def _part_checker(ref: str, which: str) -> Checker:
    if which == "rust":
        return _compiled({"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": _uri(ref)}, ref)
    return _PythonChecker(schemas.part_validator(ref))


def _compiled(schema: dict[str, Any], what: str) -> Checker:
    """The schema's checker on the jsonschema crate: the native core's when it was handed over
    (`validate_through`), else jsonschema-rs's."""
    if _core_compile is None:
        return _RustChecker(schema)
    if _core_checked:
        reference = _RustChecker(schema)
        return _CheckedChecker(_CoreChecker(schema, _core_compile, reference), reference, what)
    return _CoreChecker(schema, _core_compile)
