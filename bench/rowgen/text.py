"""Conversation text of varied length: task prompts, reasoning, answers, tool arguments and outputs.

Row size in real rollout files is driven by how long the texts are (tool outputs above all) and by
how often the growing history is re-sent. Lengths here are drawn from wide, skewed distributions
and multiplied by `scale`, which `--payload-kb` sets, so files can be made heavier or lighter.
"""

from __future__ import annotations

import json
import random

TASKS = (
    ("code", "Fix the failing unit test in utils/date_parse.py so that ISO week dates parse correctly."),
    ("code", "The CSV in data/sales.csv has duplicate order ids. Deduplicate it keeping the latest timestamp and report the row count."),
    ("code", "The binary search in src/search.c overflows on large arrays. Find the bug and patch it."),
    ("code", "Add a --dry-run flag to scripts/cleanup.py that lists the files it would delete without deleting them."),
    ("code", "Find which disk directories under /var/log use the most space and summarise the top five."),
    ("math", "Compute the number of lattice paths from (0,0) to (6,4) that never cross the diagonal y = x."),
    ("math", "Given the function f(x) = x^3 - 6x^2 + 9x + 1, find all local extrema."),
    ("math", "How many positive integers below 1000 are divisible by 3 or 5 but not by 15?"),
    ("qa", "Summarise the differences between TCP Reno and TCP CUBIC congestion control in three sentences."),
    ("qa", "Which of the following best explains why the sky appears blue? A) Rayleigh scattering B) Mie scattering C) Ozone absorption D) Reflection from oceans"),
    ("qa", "Explain when a B-tree index is preferable to a hash index in a relational database."),
)

SYSTEM_PROMPT = "You are a careful software engineering assistant. Use the tools when needed and answer concisely."

_WORDS = ["the", "function", "returns", "value", "test", "parser", "week", "date", "index", "file", "line", "error", "fix", "patch", "check", "output", "result", "first", "second", "loop", "array", "bound", "overflow", "integer", "buffer", "handle", "case", "edge", "input", "expected", "actual", "assertion", "module", "import", "call", "stack", "trace", "config", "flag", "option", "path", "directory", "record", "row", "column", "duplicate", "order", "timestamp", "latest", "count", "sum", "total", "answer", "reason", "step", "verify", "compute", "because", "therefore", "which", "while", "then", "after", "before", "update", "change", "keep", "remove", "add", "read", "write", "run", "command", "script", "shell", "python", "pytest", "report", "summary", "previous", "current", "next", "small", "large", "quick", "simple", "careful", "correct", "wrong", "missing", "extra", "unit", "integration", "behaviour", "boundary", "lower", "upper", "mid", "hash", "table", "tree", "node", "key", "lookup", "cost", "scan", "range", "query", "plan", "cache", "memory", "disk", "space", "log", "usage"]

_REASONING_OPENERS = (
    "Let me check the file to see how the parser handles week numbers.",
    "I should first look at the failing test output before editing anything.",
    "The user wants a concise answer; verify with a quick computation.",
    "Before changing code I want to reproduce the failure.",
    "The previous tool output narrows it down; the bug is likely in the boundary handling.",
)

_COMMANDS = (
    "pytest -x -q tests/test_date_parse.py", "ls -la", "git diff --stat", "wc -l data/sales.csv",
    "du -ah /var/log | sort -rh | head -n 5", "python scripts/cleanup.py --help", "grep -rn TODO src/",
    "make test", "cat setup.cfg", "git log --oneline -5",
)
_PATHS = (
    "utils/date_parse.py", "data/sales.csv", "src/search.c", "README.md", "scripts/cleanup.py",
    "tests/test_date_parse.py", "setup.cfg", "src/index.c",
)
_SNIPPETS = (
    "print(sum(range(10)))", "import math; print(math.comb(10, 4))", "print(sorted([3,1,2]))",
    "import csv; rows = list(csv.DictReader(open('data/sales.csv'))); print(len(rows))",
    "from fractions import Fraction; print(Fraction(1, 3) + Fraction(1, 6))",
)
_PATTERNS = ("mid = (lo + hi)", "TODO", "week", "def parse_iso", "dry_run", "overflow")


class Text:
    """Draws texts of realistic, varied length from one row's RNG."""

    def __init__(self, rng: random.Random, scale: float = 1.0):
        self.rng = rng
        self.scale = scale

    def length(self, median: int, spread: float = 0.8, low: int = 8, high: int = 60_000) -> int:
        """A skewed (log-normal) length around `median` characters, times the payload scale."""
        value = self.rng.lognormvariate(0.0, spread) * median * self.scale
        return max(low, min(high, int(value)))

    def words(self, chars: int) -> str:
        """Prose of about `chars` characters, in sentences."""
        rng = self.rng
        count = max(1, chars // 6)
        words = rng.choices(_WORDS, k=count)
        sentences = []
        for start in range(0, count, 12):
            chunk = words[start : start + 12]
            sentences.append(" ".join(chunk).capitalize() + ".")
        return " ".join(sentences)

    def task(self) -> tuple[str, str]:
        return self.rng.choice(TASKS)

    def reasoning(self) -> str:
        opener = self.rng.choice(_REASONING_OPENERS)
        return opener if self.rng.random() < 0.4 else opener + " " + self.words(self.length(260))

    def answer(self) -> str:
        return self.words(self.length(320))

    def short_remark(self) -> str:
        return self.rng.choice(("Let me look at that.", "Running the tests first.", "Checking the file.", "One moment."))

    def tool_arguments(self, name: str) -> dict[str, str]:
        rng = self.rng
        if name == "bash":
            return {"command": rng.choice(_COMMANDS)}
        if name == "read_file":
            return {"path": rng.choice(_PATHS)}
        if name == "python":
            return {"code": rng.choice(_SNIPPETS)}
        return {"pattern": rng.choice(_PATTERNS)}

    def tool_output(self, name: str) -> str:
        """What a tool returns: file contents and logs are long, computations short."""
        rng = self.rng
        if name == "python":
            return rng.choice(("210", "[1, 2, 3]", "1/2", "467", "True"))
        if name == "read_file":
            return self.code(self.length(1800, spread=0.9))
        if name == "search":
            lines = [f"{rng.choice(_PATHS)}:{rng.randint(1, 400)}: {self.words(50)}" for _ in range(rng.randint(1, 12))]
            return "\n".join(lines)
        if rng.random() < 0.3:
            return rng.choice(("1 passed in 0.04s", "FAILED tests/test_date_parse.py::test_week - AssertionError: 53 != 1"))
        return self.log(self.length(700, spread=1.0))

    def code(self, chars: int) -> str:
        rng = self.rng
        lines, size = [], 0
        while size < chars:
            indent = "    " * rng.randint(0, 3)
            line = f"{indent}{rng.choice(_WORDS)}_{rng.choice(_WORDS)} = {rng.choice(_WORDS)}({rng.choice(_WORDS)})  # {self.words(30)}"
            lines.append(line)
            size += len(line) + 1
        return "\n".join(lines)

    def log(self, chars: int) -> str:
        rng = self.rng
        lines, size = [], 0
        while size < chars:
            line = f"[{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}] {rng.choice(('INFO', 'INFO', 'DEBUG', 'WARN'))} {self.words(60)}"
            lines.append(line)
            size += len(line) + 1
        return "\n".join(lines)

    def summary(self) -> str:
        return (
            "This session is being continued from a previous conversation that ran out of context. "
            "The summary below covers the earlier portion of the conversation.\n\nSummary:\n" + self.words(self.length(300))
        )

    def judge_prompt(self, answer: str) -> str:
        return f"Grade the answer against the reference.\nAnswer: {answer[:400]}\nReply [[A]] if correct, [[B]] otherwise."

    def judge_verdict(self, correct: bool) -> str:
        return "[[A]] The answer is correct." if correct else "[[B]] The answer does not match the reference."


def dumps_arguments(arguments: dict) -> str:
    """Tool-call arguments as the JSON text the OpenAI APIs carry."""
    return json.dumps(arguments)
