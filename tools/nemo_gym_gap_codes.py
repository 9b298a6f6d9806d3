"""The observation-gap codes NeMo Gym emits, read from its installed source.

    python tools/nemo_gym_gap_codes.py [--site-packages DIR] [--write]

Reads every module (tests left out) of the packages the nemo-gym wheel installs — `nemo_gym` and
the agent, model, resources and environment packages beside it — and finds each place that
makes a gap: `ObservationGap(code=...)`, a gap dict (`{"code": ...}` in a statement about gaps),
and calls to the helpers that forward their argument to one of those (`_gap(code)`,
`self.gap(code)`, `add_gap(code)`, ...; found by following the argument, so a new helper needs
no change here). A code is a string literal, either branch of a conditional, or a local or
module variable assigned those. A code this cannot tell statically (an attribute, a call) is
reported as unresolved, unless `BY_HAND` resolves it from a reading of the source.

Prints `code  path:line ...`, one code a line, and any unresolved site; `--write` stores the
result as `tests/data/nemo-gym-0.7-gap-codes.json`, which the test suite holds
`trajlint`'s gap table against (and, where the venv exists, this extraction against).
Exit status: 0, or 1 when a site is unresolved.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "tests" / "data" / "nemo-gym-0.7-gap-codes.json"
DEFAULT_GYM_PYTHON = os.environ.get("NEMO_GYM_PYTHON", "/tmp/nemo-gym-0.7-venv/bin/python")
VERSION = "0.7.0"

#: The packages of the nemo-gym wheel (its dist-info's top_level.txt).
PACKAGES = (
    "nemo_gym",
    "responses_api_agents",
    "responses_api_models",
    "resources_servers",
    "benchmarks",
    "environments",
    "environment_servers",
)

#: Codes that come from an expression read statically as nothing: (module, expression) ->
#: {code: where the literal is}. Each was read in the 0.7.0 source.
BY_HAND: dict[tuple[str, str], dict[str, str]] = {
    # NOOA's termination reason: runner.py sets it to one of two literals when the policy's
    # budget runs out or its output is invalid; app.py passes it on as the gap's code.
    ("responses_api_agents/nooa_agent/app.py", "run_result.termination_reason"): {
        "policy_budget_exceeded": "responses_api_agents/nooa_agent/runner.py:161",
        "invalid_policy_output": "responses_api_agents/nooa_agent/runner.py:163",
    },
}


@dataclass
class Extraction:
    codes: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # code -> {"path:line"}
    unresolved: list[str] = field(default_factory=list)  # "path:line: expression"


@dataclass(frozen=True)
class _Helper:
    """A function that passes one of its parameters on as a gap's code."""

    param: str
    position: int | None  # its index among the positional arguments a caller passes; None: keyword-only


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _helper_of(fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> _Helper:
    positional = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    return _Helper(param, positional.index(param) if param in positional else None)


class _Module:
    def __init__(self, rel: str, tree: ast.Module):
        self.rel = rel
        self.tree = tree
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.source_lines: list[str] = []

    def function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node
        return None

    def statement(self, node: ast.AST) -> ast.AST:
        while node in self.parents and not isinstance(node, ast.stmt):
            node = self.parents[node]
        return node

    def assignments(self, scope: ast.AST, name: str) -> list[ast.expr]:
        """The values assigned to `name` directly in `scope` (a function's body or the module)."""
        values = []
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                if scope is self.tree and self.function(node) is not None:
                    continue  # a module variable is assigned at module level
                values.append(node.value)
        return values


def _sinks(module: _Module, helpers: dict[str, _Helper]) -> list[tuple[ast.AST, ast.expr]]:
    """(site, code expression) for every gap made in the module, directly or through a helper."""
    sinks = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call):
            name = _name(node.func)
            if name == "ObservationGap":
                code = next((k.value for k in node.keywords if k.arg == "code"), node.args[0] if node.args else None)
                if code is not None:
                    sinks.append((node, code))
            elif name in helpers:
                helper = helpers[name]
                code = next((k.value for k in node.keywords if k.arg == helper.param), None)
                if code is None and helper.position is not None and len(node.args) > helper.position:
                    arg = node.args[helper.position]
                    code = None if isinstance(arg, ast.Starred) else arg
                if code is not None:
                    sinks.append((node, code))
        elif isinstance(node, ast.Dict):
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
            if "code" in keys and set(keys) <= {"code", "invocation_id", "detail"}:
                # The shape of a gap, in a statement about gaps (not, say, a tool's `{"code": src}`).
                statement = ast.unparse(module.statement(node)).lower()
                if "gap" in statement:
                    sinks.append((node, node.values[keys.index("code")]))
    return sinks


def _resolve(module: _Module, site: ast.AST, expr: ast.expr, seen: frozenset[str] = frozenset()) -> tuple[set[str], str | None, bool]:
    """(codes, parameter it forwards, resolved): literals found, or the enclosing function's
    parameter the expression is, or unresolved."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return {expr.value}, None, True
    if isinstance(expr, ast.IfExp):
        a, pa, ok_a = _resolve(module, site, expr.body, seen)
        b, pb, ok_b = _resolve(module, site, expr.orelse, seen)
        return a | b, pa or pb, ok_a and ok_b
    if isinstance(expr, ast.Name) and expr.id not in seen:
        fn = module.function(site)
        if fn is not None:
            params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
            if expr.id in params:
                return set(), expr.id, True
        for scope in (fn, module.tree):
            if scope is None:
                continue
            values = module.assignments(scope, expr.id)
            if values:
                codes, ok = set(), True
                for value in values:
                    found, _, resolved = _resolve(module, site, value, seen | {expr.id})
                    codes |= found
                    ok = ok and resolved
                return codes, None, ok
    return set(), None, False


def _modules(site_packages: Path) -> list[_Module]:
    modules = []
    for package in PACKAGES:
        for path in sorted((site_packages / package).rglob("*.py")):
            rel = path.relative_to(site_packages).as_posix()
            if "tests" in Path(rel).parts:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            if "gap" not in text.lower():
                continue
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue  # templates and fixtures shipped as .py; none makes a gap
            modules.append(_Module(rel, tree))
    return modules


def extract(site_packages: Path) -> Extraction:
    modules = _modules(site_packages)
    helpers: dict[str, _Helper] = {}
    while True:  # until no new helper turns up: a helper may call another
        result = Extraction()
        found: dict[str, _Helper] = {}
        for module in modules:
            for site, expr in _sinks(module, helpers):
                codes, param, resolved = _resolve(module, site, expr)
                where = f"{module.rel}:{site.lineno}"
                for code in codes:
                    result.codes[code].add(where)
                if param is not None:
                    fn = module.function(site)
                    assert fn is not None
                    helper = _helper_of(fn, param)
                    if found.setdefault(fn.name, helper) != helper:
                        # Helpers are known by name across modules; two that take the code in
                        # different places would be read wrongly, so say so.
                        result.unresolved.append(f"{where}: helper {fn.name} also takes its code elsewhere")
                if not resolved:
                    hand = BY_HAND.get((module.rel, ast.unparse(expr)))
                    if hand is None:
                        result.unresolved.append(f"{where}: {ast.unparse(expr)}")
                    else:
                        for code, literal in hand.items():
                            result.codes[code].add(literal)
        if found.keys() <= helpers.keys():
            return result
        helpers.update(found)


def site_packages_of(gym_python: str) -> Path | None:
    """The site-packages of the venv whose python is `gym_python`, if it holds nemo-gym."""
    venv = Path(gym_python).parent.parent
    for candidate in sorted(venv.glob("lib/python3*/site-packages")):
        if (candidate / "nemo_gym").is_dir():
            return candidate
    return None


def installed_version(site_packages: Path) -> str | None:
    found = sorted(site_packages.glob("nemo_gym-*.dist-info"))
    return found[0].name[len("nemo_gym-") : -len(".dist-info")] if found else None


def document(result: Extraction) -> dict[str, object]:
    return {
        "nemo_gym": VERSION,
        "generated_by": "tools/nemo_gym_gap_codes.py",
        "codes": {code: sorted(sites, key=_site_key) for code, sites in sorted(result.codes.items())},
    }


def _site_key(site: str) -> tuple[str, int]:
    path, _, line = site.rpartition(":")
    return path, int(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site-packages", help="where nemo-gym is installed [default: that of $NEMO_GYM_PYTHON's venv]")
    parser.add_argument("--write", action="store_true", help=f"store the codes in {COMMITTED.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    site = Path(args.site_packages) if args.site_packages else site_packages_of(DEFAULT_GYM_PYTHON)
    if site is None or not (site / "nemo_gym").is_dir():
        print(f"no nemo-gym installation found (looked in {site or DEFAULT_GYM_PYTHON})", file=sys.stderr)
        return 3
    version = installed_version(site)
    if version != VERSION:
        print(f"{site} holds nemo-gym {version}, not {VERSION}", file=sys.stderr)
        return 3
    result = extract(site)
    for code, sites in document(result)["codes"].items():  # type: ignore[union-attr]
        print(f"{code}  {' '.join(sites)}")
    for site_text in result.unresolved:
        print(f"unresolved: {site_text}", file=sys.stderr)
    if args.write:
        COMMITTED.write_text(json.dumps(document(result), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {COMMITTED.relative_to(ROOT)} ({len(result.codes)} codes)", file=sys.stderr)
    return 1 if result.unresolved else 0


if __name__ == "__main__":
    sys.exit(main())
