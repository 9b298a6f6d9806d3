"""The package's layout: stages import only downward, no module imports itself in a circle, and
no file of the package is one that common ignore rules leave out."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "trajlint"

# Each stage may import its own modules and those of lower stages, never a higher one.
STAGES = {
    "trajlint": 0,  # the kernel: findings, pointer, the version
    "trajlint.findings": 0,
    "trajlint.pointer": 0,
    "trajlint.row": 0,
    "trajlint.contract": 1,
    "trajlint.read": 2,
    "trajlint.builder": 3,
    "trajlint.health": 4,
    "trajlint.check": 5,
    "trajlint.report": 6,
    "trajlint.cli": 7,
    "trajlint.__main__": 8,
    "trajlint.api": 8,  # the Python API, beside the CLI: it calls what the CLI calls
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _stage(module: str) -> int:
    best = max((name for name in STAGES if module == name or module.startswith(name + ".")), key=len)
    return STAGES[best]


def _runtime_imports(tree: ast.AST) -> set[str]:
    """Modules imported when the code runs (function-local imports too, `TYPE_CHECKING` ones not)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("trajlint"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("trajlint") and not node.level:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                # `from package import module` imports the module; `from module import name` the module
                found.add(candidate if (PACKAGE.parent / (candidate.replace(".", "/") + ".py")).exists()
                          or (PACKAGE.parent / candidate.replace(".", "/")).is_dir() else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in _runtime_imports(ast.parse(path.read_text())) if m in modules and m != name}
            for name, path in modules.items()}


def test_no_stage_imports_a_higher_one():
    upward = [
        f"{module} -> {target}"
        for module, targets in _graph().items()
        for target in targets
        if _stage(target) > _stage(module)
    ]
    assert upward == []


def test_no_import_cycles():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def strongconnect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                strongconnect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            strongconnect(node)
    assert cycles == []


def test_the_checker_finds_what_it_looks_for():
    """The graph is real: it sees the CLI importing the check stage, and the stages are ranked."""
    graph = _graph()
    assert "trajlint.check.run" in graph["trajlint.cli.execute"]
    assert _stage("trajlint.check.rules.health") > _stage("trajlint.health.checks")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_common_ignore_rules_leave_every_package_file_in(tmp_path):
    """GitHub's Python .gitignore holds an unanchored `build/`: a package folder of that name
    would vanish from git and from wheels built by tools that honour .gitignore."""
    files = sorted(
        str(p.relative_to(ROOT))
        for p in PACKAGE.rglob("*")
        # The compiled core is built, not committed: ignoring it is right.
        if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith("_core.")
    )
    shutil.copy(ROOT / "tests" / "data" / "github-python.gitignore", tmp_path / ".gitignore")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    proc = subprocess.run(
        ["git", "-C", str(tmp_path), "check-ignore", "--no-index", *files], capture_output=True, text=True
    )
    assert proc.returncode == 1, f"ignored: {proc.stdout}"  # 1: no path is ignored
    assert len(files) > 50
