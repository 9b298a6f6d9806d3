"""The packaged JSON Schemas, their offline registry and cached validators.

trajlint never reaches the network: every schema is registered under its `$id` and the registry has
no retrieval function, so a `$ref` to anything not packaged fails instead of being fetched. Every
`$ref` is resolved once when the registry is built, so a broken package fails at start-up rather
than in the middle of a run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from trajlint.contract.data import schemas_dir

if TYPE_CHECKING:  # python-jsonschema is imported only when used: the fast path does without it
    from jsonschema import Draft202012Validator
    from referencing import Registry

SUFFIX = ".schema.json"


class SchemaPackageError(RuntimeError):
    """A packaged schema is unreadable, lacks its `$id`, or refers to something that does not resolve."""


class UnknownSchemaError(KeyError):
    """No packaged schema has that name (a KeyError: the name is a lookup key)."""

    def __str__(self) -> str:
        return str(self.args[0])


def _files() -> dict[str, Path]:
    return {path.name.removesuffix(SUFFIX): path for path in sorted(schemas_dir().glob(f"*{SUFFIX}"))}


def names() -> list[str]:
    """Short names of the packaged schemas (`rollout-row`, `trajectory`, …), sorted."""
    return list(_files())


def _short_name(name: str) -> str:
    return name.removesuffix(SUFFIX)


@cache
def _load(short_name: str) -> dict[str, Any]:
    path = _files().get(short_name)
    if path is None:
        raise UnknownSchemaError(f"no packaged schema named {short_name!r}; known: {', '.join(names())}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SchemaPackageError(f"packaged schema {path.name} is unreadable: {error}") from error


def load(name: str) -> dict[str, Any]:
    """The schema `name` (short name or file name) as a fresh dict the caller may change."""
    return json.loads(json.dumps(_load(_short_name(name))))


def _refs(node: Any, base: str) -> Iterator[tuple[str, str]]:
    """Every `$ref` in a schema with the base URI it is resolved against (nested `$id`s change it)."""
    if isinstance(node, dict):
        if isinstance(node.get("$id"), str):
            base = urljoin(base, node["$id"]).split("#", 1)[0]
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield base, value
            elif key not in ("const", "enum", "default", "examples"):
                yield from _refs(value, base)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item, base)


def _check_refs(registry: Registry, schemas: dict[str, dict[str, Any]]) -> None:
    import referencing.exceptions

    for short_name, schema in schemas.items():
        for base, ref in _refs(schema, schema["$id"]):
            try:
                registry.resolver(base_uri=base).lookup(ref)
            except referencing.exceptions.Unresolvable as error:
                raise SchemaPackageError(
                    f"schema {short_name}{SUFFIX}: $ref {ref!r} does not resolve ({type(error).__name__})"
                ) from error


@cache
def registry() -> Registry:
    """Every packaged schema under its `$id`, with no retrieval: unknown URIs raise, nothing is fetched."""
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    schemas = {short_name: _load(short_name) for short_name in names()}
    resources = []
    for short_name, schema in schemas.items():
        if not isinstance(schema.get("$id"), str):
            raise SchemaPackageError(f"schema {short_name}{SUFFIX} has no $id")
        resources.append((schema["$id"], Resource.from_contents(schema, default_specification=DRAFT202012)))
    built = Registry().with_resources(resources).crawl()
    _check_refs(built, schemas)
    return built


def validator(name: str) -> Draft202012Validator:
    """A validator for schema `name`, built once per process on the offline registry; formats are not checked."""
    return _validator(_short_name(name))


@cache
def _validator(short_name: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_load(short_name), registry=registry())


def part_validator(ref: str) -> Draft202012Validator:
    """A validator for one part of a packaged schema, e.g. `trajectory.schema.json#/$defs/TrajectoryTurn`.

    The build uses these to keep the valid items of a section whose whole fails validation.
    """
    return _part_validator(ref)


@cache
def _part_validator(ref: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    base = _load(names()[0])["$id"].rsplit("/", 1)[0] + "/"
    return Draft202012Validator({"$ref": urljoin(base, ref)}, registry=registry())
