"""Generate the JSON Schemas in `schemas/` from the contract models (`trajlint schema --write`).

The models are the single source of truth; the committed schema files are their published form,
and a test keeps the two from drifting apart. The generator shapes pydantic's output for a linter:
nullable simple types as `"type": [..., "null"]` and the record union as `if`/`then` on `kind`, so a
validation error points at the offending key instead of at a failed `anyOf`/`oneOf`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from trajlint.contract import (
    AgentObservationBundle,
    ModelCallCapture,
    ModelCallRef,
    ModelServerRef,
    ObservationGap,
    RolloutRow,
    TrajectoryRecord,
    VerifierInvocations,
)
from trajlint.contract.conversation import ConversationItem
from trajlint.contract.report import ReportDocument

DIALECT = "https://json-schema.org/draft/2020-12/schema"
# The reserved .invalid TLD: these identifiers name the schemas but can never be fetched.
BASE_URI = "https://trajlint.invalid/schemas/"

COMMON_FILE = "common.schema.json"
COMMON_MODELS = (ModelServerRef, ModelCallRef, ObservationGap)

# Section file name -> (root model, title); the row references each section by its file.
SECTIONS: dict[str, tuple[type, str]] = {
    "model-call-capture.schema.json": (ModelCallCapture, "NeMo Gym captured model calls (ng_model_call_capture)"),
    "agent-observations.schema.json": (AgentObservationBundle, "NeMo Gym agent observations (ng_agent_observations)"),
    "trajectory.schema.json": (TrajectoryRecord, "NeMo Gym trajectory record 1.0 (ng_trajectory)"),
    "verifier-invocations.schema.json": (VerifierInvocations, "Verifier invocations (ng_verifier_invocations)"),
}
# Parts the sections share, each in its own file; a section refers to it instead of holding a copy.
CONVERSATION_FILE = "conversation-item.schema.json"
CONVERSATION_TITLE = "NeMo Gym conversation item (a Responses API input item)"
SHARED_PARTS: dict[str, tuple[Any, str, str]] = {
    CONVERSATION_FILE: (ConversationItem, "ConversationItem", CONVERSATION_TITLE),
}
ROW_FILE = "rollout-row.schema.json"
# trajlint's own output contract, versioned with the report's `schema_version`.
REPORT_FILE = "report.schema.json"
REPORT_TITLE = "trajlint JSON report"
ROW_TITLE = "NeMo Gym rollout row"
COMMON_TITLE = "trajlint shared definitions"
COMMON_DESCRIPTION = "Definitions shared by the trajlint schemas: model server and model call references, gaps."

_COMPOSITION_KEYS = {"$ref", "anyOf", "oneOf", "allOf", "not", "if"}
# Keywords whose values are instance data, never subschemas: a "$ref" key inside them is not a reference.
_DATA_KEYWORDS = {"const", "enum", "default", "examples"}


def _admits_null(schema: JsonSchemaValue) -> bool:
    if not schema or schema.get("type") == "null":
        return True
    types = schema.get("type")
    if isinstance(types, list) and "null" in types:
        return True
    if None in schema.get("enum", ()) or ("const" in schema and schema["const"] is None):
        return True
    return any(_admits_null(branch) for branch in [*schema.get("anyOf", []), *schema.get("oneOf", [])])


# The keywords that constrain only values of one JSON type; the others ignore them.
_KEYWORDS_OF_TYPE = {
    "string": {"minLength", "maxLength", "pattern"},
    "array": {"items", "prefixItems", "minItems", "maxItems"},
    "object": {"properties", "required", "additionalProperties", "patternProperties"},
}


def _merge_by_type(branches: Any) -> JsonSchemaValue | None:
    """`anyOf: [{type: string}, {type: array, items: …}]` as `{type: [string, array], items: …}`, when exact.

    One schema with a list of types makes a wrong value one `type` error ("must be a string or an
    array") instead of a failed `anyOf`. It is exact when every branch has its own type and only
    keywords that apply to that type alone.
    """
    if not isinstance(branches, list) or len(branches) < 2:
        return None
    merged: dict[str, Any] = {"type": []}
    for branch in branches:
        kind = branch.get("type") if isinstance(branch, dict) else None
        if not isinstance(kind, str) or kind in merged["type"]:
            return None
        rest = set(branch) - {"type"}
        if not rest <= _KEYWORDS_OF_TYPE.get(kind, set()) or rest & merged.keys():
            return None
        merged["type"].append(kind)
        merged.update((key, branch[key]) for key in rest)
    return merged


def _is_tagged_union(schema: JsonSchemaValue) -> bool:
    """Whether `schema` has the shape `tagged_union_schema` gives a union on a key (every `if` an object)."""
    branches = schema.get("allOf")
    return (
        schema.get("type") == "object"
        and set(schema) == {"type", "required", "properties", "allOf"}
        and isinstance(branches, list)
        and all(isinstance(b, dict) and set(b) == {"if", "then"} and b["if"].get("type") == "object" for b in branches)
    )


class _LinterSchemaGenerator(GenerateJsonSchema):
    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        if _is_tagged_union(inner):
            # Its every branch applies only to objects, so null needs only to be one more type.
            return dict(inner, type=["object", "null"])
        if not isinstance(inner.get("type"), str) or _COMPOSITION_KEYS & inner.keys():
            return super().nullable_schema(schema)
        merged = dict(inner, type=[inner["type"], "null"])
        if "const" in merged:
            merged["enum"] = [merged.pop("const")]
        if "enum" in merged:
            merged["enum"] = [*merged["enum"], None]
        return merged

    def tagged_union_schema(self, schema: core_schema.TaggedUnionSchema) -> JsonSchemaValue:
        tag = schema["discriminator"]
        if callable(getattr(tag, "json_schema", None)):
            # A union read by a function brings that reading as JSON Schema, given its branches.
            return tag.json_schema({value: self.generate_inner(choice) for value, choice in schema["choices"].items()})
        if not isinstance(tag, str):
            return super().tagged_union_schema(schema)
        branches = []
        for value, choice in schema["choices"].items():
            condition = {"type": "object", "required": [tag], "properties": {tag: {"const": value}}}
            branches.append({"if": condition, "then": self.generate_inner(choice)})
        return {
            "type": "object",
            "required": [tag],
            "properties": {tag: {"enum": list(schema["choices"])}},
            "allOf": branches,
        }

    def union_schema(self, schema: core_schema.UnionSchema) -> JsonSchemaValue:
        json_schema = super().union_schema(schema)
        merged = _merge_by_type(json_schema.get("anyOf"))
        return merged if merged is not None and len(json_schema) == 1 else json_schema

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        json_schema = super().default_schema(schema)
        # A None default on a key that may not be null only marks the key optional; don't advertise it.
        if json_schema.get("default", ...) is None and not _admits_null(json_schema):
            del json_schema["default"]
        return json_schema

    def field_title_should_be_set(self, schema: Any) -> bool:
        # Titles derived from field names repeat the key; the descriptions carry the meaning.
        return False


def _pydantic_schema(model: type) -> JsonSchemaValue:
    return TypeAdapter(model).json_schema(schema_generator=_LinterSchemaGenerator)


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            elif key not in _DATA_KEYWORDS:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _rewrite_refs(node: Any, targets: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {
            key: (
                targets.get(value, value)
                if key == "$ref"
                else value if key in _DATA_KEYWORDS else _rewrite_refs(value, targets)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_rewrite_refs(item, targets) for item in node]
    return node


def _prune_defs(schema: JsonSchemaValue) -> JsonSchemaValue:
    """Drop definitions nothing in this file refers to any more (they now live in other files)."""
    defs = schema.pop("$defs", {})
    keep: set[str] = set()
    pending = list(_refs(schema))
    while pending:
        ref = pending.pop()
        name = ref.removeprefix("#/$defs/")
        if ref.startswith("#/$defs/") and name in defs and name not in keep:
            keep.add(name)
            pending.extend(_refs(defs[name]))
    if keep:
        schema["$defs"] = {name: defs[name] for name in defs if name in keep}
    return schema


def _link(schema: JsonSchemaValue, file_name: str) -> JsonSchemaValue:
    """Point references to shared definitions and to other sections at their own files."""
    targets = {f"#/$defs/{model.__name__}": f"{COMMON_FILE}#/$defs/{model.__name__}" for model in COMMON_MODELS}
    for section_file, (model, _) in SECTIONS.items():
        if section_file != file_name:
            targets[f"#/$defs/{model.__name__}"] = section_file
    for part_file, (_, name, _) in SHARED_PARTS.items():
        targets[f"#/$defs/{name}"] = part_file
    return _prune_defs(_rewrite_refs(schema, targets))


def _shared_part(annotation: Any, name: str) -> JsonSchemaValue:
    """A named type as the root of its own file, with the definitions it uses."""
    schema = _pydantic_schema(annotation)
    defs = schema.pop("$defs", {})
    root = defs.pop(name, schema)  # pydantic inlines the alias it was asked for, but may not
    if defs:
        root["$defs"] = defs
    return root


def _document(file_name: str, title: str, body: JsonSchemaValue) -> dict[str, Any]:
    """Put the identifying keys first; the description stays the root model's docstring."""
    rest = {key: value for key, value in body.items() if key not in ("title", "description")}
    header = {"$schema": DIALECT, "$id": BASE_URI + file_name, "title": title, "description": body["description"]}
    return header | rest


def _common() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    for model in COMMON_MODELS:
        schema = _pydantic_schema(model)
        defs.update(schema.pop("$defs", {}))
        defs[model.__name__] = schema
    return _document(COMMON_FILE, COMMON_TITLE, {"description": COMMON_DESCRIPTION, "$defs": defs})


def generate() -> dict[str, dict]:
    """Every packaged contract schema, by file name, in a stable order."""
    schemas = {COMMON_FILE: _common()}
    schemas[ROW_FILE] = _document(ROW_FILE, ROW_TITLE, _link(_pydantic_schema(RolloutRow), ROW_FILE))
    for file_name, (model, title) in SECTIONS.items():
        schemas[file_name] = _document(file_name, title, _link(_pydantic_schema(model), file_name))
    for file_name, (annotation, name, title) in SHARED_PARTS.items():
        schemas[file_name] = _document(file_name, title, _shared_part(annotation, name))
    schemas[REPORT_FILE] = _document(REPORT_FILE, REPORT_TITLE, _pydantic_schema(ReportDocument))
    return schemas


def dump(schema: dict) -> str:
    """The exact text a schema file holds."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write(directory: Path) -> list[Path]:
    """Write every generated schema into `directory`; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, schema in generate().items():
        path = directory / file_name
        path.write_text(dump(schema), encoding="utf-8")
        written.append(path)
    return written
