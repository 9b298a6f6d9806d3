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


def bundle(name: str) -> dict[str, Any]:
    """The schema `name` as one standalone document: every packaged schema it refers to is copied
    into its `$defs` and every `$ref` rewritten to point there, so a validator needs no files
    beside it and no network (check-jsonschema, editors). It validates exactly as `name` does.

    Another schema's definitions are named `<schema>.<definition>` and its root `<schema>`; the
    root schema keeps its own definitions' names.
    """
    root = _short_name(name)
    load(root)  # an unknown name fails here, with the known ones named
    done: dict[str, dict[str, Any]] = {}
    pending = [root]
    while pending:
        short = pending.pop()
        if short in done:
            continue
        document = load(short)
        done[short] = document
        for _base, ref in _refs(document, ""):
            target = ref.split("#", 1)[0]
            if target:
                pending.append(_short_name(target))
    out = _rewrite(done[root], root, root)
    defs: dict[str, Any] = dict(out.get("$defs", {}))
    for short in sorted(done):
        if short == root:
            continue
        body = _rewrite(done[short], short, root)
        for definition, schema in body.pop("$defs", {}).items():
            defs[f"{short}.{definition}"] = schema
        for key in ("$id", "$schema"):
            body.pop(key, None)
        defs[short] = body
    if defs:
        out["$defs"] = defs
    if isinstance(out.get("$id"), str):
        out["$id"] = out["$id"].removesuffix(SUFFIX) + ".bundle" + SUFFIX
    return out


def _pointer(name: str) -> str:
    return "#/$defs/" + name.replace("~", "~0").replace("/", "~1")


def _rewrite(node: Any, short: str, root: str) -> Any:
    """`node` of schema `short` with its `$ref`s pointing into the bundle of `root`."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                out[key] = _bundled_ref(value, short, root)
            elif key in ("const", "enum", "default", "examples"):
                out[key] = value
            else:
                out[key] = _rewrite(value, short, root)
        return out
    if isinstance(node, list):
        return [_rewrite(item, short, root) for item in node]
    return node


def _bundled_ref(ref: str, short: str, root: str) -> str:
    target, _, fragment = ref.partition("#")
    owner = _short_name(target) if target else short
    prefix = "#/$defs/"
    if fragment.startswith("/$defs/"):
        definition = fragment[len("/$defs/") :]
        if owner == root:
            return prefix + definition
        return prefix + f"{owner}.{definition}"
    if fragment in ("", "/"):
        return "#" if owner == root else _pointer(owner)
    raise SchemaPackageError(f"cannot bundle the reference {ref!r} in {short}{SUFFIX}")
