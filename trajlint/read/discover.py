"""Named paths, globs and directories -> the files to read (`Source`), or `Unreadable` items.

File selection as ruff makes it (`Selection`): a directory is searched recursively for the files
`include` names (``*.jsonl``, ``*.jsonl.gz`` and ``*.jsonl.zst`` unless configured), leaving out
what `exclude` names (version control, virtual environments, caches, build output) and what
`.gitignore` files ignore. A path named on the command line, or matched by a glob named there, is
read whatever its name, unless `force_exclude` applies the excludes to it too (pre-commit names
every staged file). Files the run itself writes are never read from a directory search.

A directory holding no such file yields nothing and is not a finding (ruff only warns when a whole
run finds no files, which the command line can do by noticing that no `Source` came back). A named
path that is unreadable or a special file, and a glob that matches nothing, are `Unreadable`
items; `missing` tells the command line which named paths do not exist at all. URLs are
expanded by `remote`, and the same `include` patterns pick the objects below a prefix.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from trajlint.read import remote
from trajlint.read.files import _os_reason, _special_kind, _stat_reason
from trajlint.read.items import Unreadable
from trajlint.read.source import Source

#: The files a directory search reads, as ruff's `include`: gitignore-style patterns.
DEFAULT_INCLUDE = ("*.jsonl", "*.jsonl.gz", "*.jsonl.zst")
#: What a directory search never enters or reads, as ruff's default `exclude` (its list, with the
#: caches and environments of the tools that sit beside rollout data, and trajlint's own cache).
DEFAULT_EXCLUDE = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".trajlint_cache",
    ".venv",
    ".vscode",
    "__pycache__",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)
_GLOB_CHARS = frozenset("*?[")

if TYPE_CHECKING:
    import pathspec


def _gitignore(lines: Sequence[str]) -> pathspec.GitIgnoreSpec:
    # pathspec (with the backends it probes on import) is loaded by the first pattern matched:
    # a run over files named on the command line matches none.
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


@dataclass(frozen=True, slots=True)
class Selection:
    """Which files a run reads. Patterns are gitignore-style and relative to `root` (the
    directory of the configuration file, else the working directory), as ruff's are."""

    root: str = "."
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    respect_gitignore: bool = True
    #: Apply `exclude` to the paths named on the command line too.
    force_exclude: bool = False
    #: The name standard input's rows carry in reports, and that `force_exclude` matches.
    stdin_filename: str | None = None
    #: Files this run writes (reports, a baseline, health reports): a search never reads them.
    written: tuple[str, ...] = ()
    _specs: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def _spec(self, kind: str) -> pathspec.GitIgnoreSpec:
        spec = self._specs.get(kind)
        if spec is None:
            spec = _gitignore(getattr(self, kind))
            self._specs[kind] = spec
        return spec

    def relative(self, path: str) -> str:
        """`path` relative to `root`, in the form patterns match (`/` separators)."""
        return os.path.relpath(os.path.abspath(path), os.path.abspath(self.root)).replace(os.sep, "/")

    def excluded(self, path: str, *, is_dir: bool = False) -> bool:
        """Whether `exclude` names `path` or a directory above it (below `root`)."""
        return self.excluded_relative(self.relative(path), is_dir=is_dir)

    def excluded_relative(self, rel: str, *, is_dir: bool = False) -> bool:
        return bool(self.exclude) and self._spec("exclude").match_file(rel + "/" if is_dir else rel)

    def excluded_entry(self, rel: str, name: str, *, is_dir: bool) -> bool:
        """`excluded_relative` for an entry met in a search, whose directories passed already:
        plain names (`.git`, `build/`) are looked up, not matched pattern by pattern."""
        plain = self._specs.get("plain")
        if plain is None:
            plain = self._specs["plain"] = _plain_names(self.exclude)  # type: ignore[assignment]
        if plain is None or plain is False:
            return self.excluded_relative(rel, is_dir=is_dir)
        names, directories, rest = plain
        if name in names or (is_dir and name in directories):
            return True
        return rest is not None and rest.match_file(rel + "/" if is_dir else rel)

    def included_relative(self, rel: str) -> bool:
        suffixes = self._specs.get("suffixes")
        if suffixes is None:
            # `*.jsonl` and the like, the usual include patterns, are a test of the name's end.
            plain = all(p.startswith("*") and not _GLOB_CHARS.intersection(p[1:]) and "/" not in p for p in self.include)
            suffixes = self._specs["suffixes"] = tuple(p[1:] for p in self.include) if plain else False
        if suffixes is not False:
            return rel.endswith(suffixes)
        return self._spec("include").match_file(rel)


def _plain_names(patterns: Sequence[str]) -> Any:
    """(names, directory names, the other patterns' spec or None) when every pattern excludes
    (none starts with "!", which would make their order matter); False otherwise."""
    names, directories, rest = set(), set(), []
    for pattern in patterns:
        text = pattern.strip()
        if text.startswith("!"):
            return False
        bare = text.removesuffix("/")
        if not bare or "/" in bare or _GLOB_CHARS.intersection(bare) or "\\" in bare or bare.startswith("#"):
            rest.append(pattern)
        elif text.endswith("/"):
            directories.add(bare)
        else:
            names.add(bare)
    return names, directories, _gitignore(rest) if rest else None


def missing(paths: Sequence[str]) -> str | None:
    """The first named path that does not exist, nor a link, nor a glob that matches (None: all do).

    An input that is not there is a mistake in the invocation, whatever rules are selected: a gate
    that checks nothing must not pass.
    """
    for path in paths:
        if path == "":
            return "an empty path names no file"
        if path == "-" or "\0" in path or remote.is_url(path) or os.path.lexists(path):
            continue  # a URL that names nothing is reported when it is expanded
        if _GLOB_CHARS.intersection(path):
            if _expand_glob(path):
                continue
            return f"{path}: glob matched no files"
        try:
            os.stat(path)
        except FileNotFoundError:
            return f"{path}: no such file or directory"
        except OSError:
            continue  # permission and the like: an unreadable-file finding says which
    return None


def iter_sources(
    paths: Sequence[str], *, stdin: BinaryIO | None = None, selection: Selection | None = None
) -> Iterator[Source | Unreadable]:
    """Expand named paths into sources, in the order named; directories in sorted order.

    The same file reached twice (named twice, via a glob and a directory, through a symlink) is
    read once, at its first mention.
    """
    select = selection if selection is not None else Selection(exclude=(), respect_gitignore=False)
    walk = _Walk(select)
    seen_urls: set[str] = set()
    stdin_taken = False
    for path in paths:
        if remote.is_url(path):
            yield from _named_url(path, seen_urls, select)
            continue
        if path == "-":
            name = select.stdin_filename
            if name is not None and select.force_exclude and select.excluded(name):
                continue
            if not stdin_taken:
                stdin_taken = True
                stream = stdin if stdin is not None else getattr(sys.stdin, "buffer", None)
                if stream is None:
                    yield Unreadable(name or "-", 0, "standard input is not available")
                else:
                    # Standard input is read as plain JSONL rows, whatever the name it is given.
                    yield Source(name or "-", "", False, stream)
            continue
        if "\0" in path:  # os.stat would raise ValueError: no file name can hold one
            yield Unreadable(path, 0, "contains a NUL byte, which no file name can hold")
            continue
        if select.force_exclude and select.excluded(path, is_dir=os.path.isdir(path)):
            continue
        try:
            info = os.stat(path)
        except OSError as exc:
            if isinstance(exc, FileNotFoundError) and _GLOB_CHARS.intersection(path):
                matches = _expand_glob(path)
                if not matches:
                    yield Unreadable(path, 0, "glob matched no files")
                for match in matches:
                    if select.force_exclude and select.excluded(match, is_dir=os.path.isdir(match)):
                        continue
                    yield from _named(match, walk)
            else:
                yield Unreadable(path, 0, _stat_reason(path, exc))
            continue
        yield from _named(path, walk, info)


def _named_url(url: str, seen: set[str], select: Selection) -> Iterator[Source | Unreadable]:
    """The objects a URL names; a URL that names none, or cannot be listed, is one `Unreadable`
    at line 0 whose path is the URL with any credentials masked."""
    try:
        found = remote.expand(url, lambda key: select.included_relative(key.rsplit("/", 1)[-1]))
    except remote.RemoteError as exc:
        yield Unreadable(exc.url, 0, exc.reason)
        return
    for match in found:
        if match not in seen:
            seen.add(match)
            yield Source(match)


def _expand_glob(pattern: str) -> list[str]:
    """Like ``glob.glob(pattern, recursive=True)``, sorted, except that ``**`` never descends into
    a symlinked directory: the stdlib's does, and two link loops make it explode combinatorially.

    As in glob, names starting with "." are matched only by a component that starts with ".",
    and a trailing ``**`` matches everything below its directory.
    """
    drive, rest = os.path.splitdrive(pattern)
    if os.altsep:
        rest = rest.replace(os.altsep, os.sep)
    parts = rest.split(os.sep)
    base = drive
    if parts[0] == "" and len(parts) > 1:  # absolute
        base, parts = drive + os.sep, parts[1:]
    return sorted(set(_glob_parts(base, parts)))


def _glob_parts(base: str, parts: list[str]) -> Iterator[str]:
    if not parts:
        if base and os.path.lexists(base):
            yield base
        return
    head, rest = parts[0], parts[1:]
    if head == "**":
        for directory in _directories_below(base):
            yield from _glob_parts(directory, rest or ["*"])
    elif _GLOB_CHARS.intersection(head):
        try:
            names = os.listdir(base or os.curdir)
        except OSError:
            return
        if not head.startswith("."):
            names = [name for name in names if not name.startswith(".")]
        for name in fnmatch.filter(names, head):
            yield from _glob_parts(os.path.join(base, name), rest)
    else:
        yield from _glob_parts(os.path.join(base, head), rest)


def _directories_below(base: str) -> Iterator[str]:
    """``base`` and every directory under it, not through symlinks, skipping hidden ones."""
    stack = [base]
    while stack:
        directory = stack.pop()
        yield directory
        try:
            with os.scandir(directory or os.curdir) as scan:
                below = [
                    os.path.join(directory, entry.name)
                    for entry in scan
                    if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
                ]
        except OSError:
            continue
        stack.extend(sorted(below, reverse=True))


class _Walk:
    """One run's directory search: the selection, the files already read, and the `.gitignore`
    rules of each directory (read once each)."""

    def __init__(self, selection: Selection) -> None:
        self.selection = selection
        self.seen: set[tuple[int, int]] = set()
        self.written: set[tuple[int, int]] = set()
        for path in selection.written:
            try:
                info = os.stat(path)
            except (OSError, ValueError):
                continue  # not there yet: nothing to leave out
            self.written.add((info.st_dev, info.st_ino))
        # Per directory (absolute): its gitignore rules and those of the directories above it,
        # deepest first, as (directory, spec).
        self._ignores: dict[str, list[tuple[str, pathspec.GitIgnoreSpec]]] = {}
        self._repository: dict[str, bool] = {}

        # Per directory searched: its absolute path and its path relative to the selection's root,
        # so that each entry's are a join, not a path computation.
        self._places: dict[str, tuple[str, str]] = {}

    def place(self, directory: str) -> tuple[str, str]:
        found = self._places.get(directory)
        if found is None:
            absolute = os.path.abspath(directory)
            found = self._places[directory] = (absolute, self.selection.relative(absolute))
        return found

    def skipped(self, directory: str, name: str, *, is_dir: bool, include: bool = False) -> bool:
        """Whether a directory search leaves the entry `name` of `directory` out: not included
        (with `include`), excluded, or ignored by git."""
        absolute, rel = self.place(directory)
        rel = name if rel == "." else f"{rel}/{name}"
        if include and not self.selection.included_relative(rel):
            return True
        if self.selection.excluded_entry(rel, name, is_dir=is_dir):
            return True
        return self.selection.respect_gitignore and self._gitignored(absolute, os.path.join(absolute, name), is_dir)

    def _gitignored(self, directory: str, path: str, is_dir: bool) -> bool:
        for base, spec in self._chain(directory):
            rel = path[len(base) :].lstrip(os.sep).replace(os.sep, "/") + ("/" if is_dir else "")
            verdict = spec.check_file(rel).include
            if verdict is not None:  # the deepest file that speaks decides (a `!` re-includes)
                return verdict
        return False

    def _chain(self, directory: str) -> list[tuple[str, pathspec.GitIgnoreSpec]]:
        # Iterative, from the nearest directory already known down: however deep the tree, no
        # RecursionError.
        pending = []
        while directory not in self._ignores:
            pending.append(directory)
            parent = os.path.dirname(directory)
            if parent == directory or os.path.exists(os.path.join(directory, ".git")):
                break
            directory = parent
        above: list[tuple[str, pathspec.GitIgnoreSpec]] | None = self._ignores.get(directory)
        for current in reversed(pending):
            chain: list[tuple[str, pathspec.GitIgnoreSpec]] = []
            if os.path.exists(os.path.join(current, ".git")):
                exclude = _gitignore_spec(os.path.join(current, ".git", "info", "exclude"))
                chain = [(current, exclude)] if exclude is not None else []
                inside = True
            else:
                inside = above is not None and self._repository.get(os.path.dirname(current), False)
                chain = list(above) if inside and above is not None else []
            self._repository[current] = inside
            spec = _gitignore_spec(os.path.join(current, ".gitignore")) if inside else None
            if spec is not None:
                chain.insert(0, (current, spec))
            self._ignores[current] = above = chain
        return self._ignores[pending[0]] if pending else above or []


def _gitignore_spec(path: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    return _gitignore(lines) if any(line.strip() for line in lines) else None


def _named(path: str, walk: _Walk, info: os.stat_result | None = None) -> Iterator[Source | Unreadable]:
    """A path the user named (or a glob matched): any regular file is read, directories searched."""
    if info is None:
        try:
            info = os.stat(path)
        except OSError as exc:
            yield Unreadable(path, 0, _stat_reason(path, exc))
            return
    if stat.S_ISDIR(info.st_mode):
        yield from _search_directory(path, walk)
    elif stat.S_ISREG(info.st_mode):
        if _first_visit(info, walk.seen):
            yield Source(path)
    else:
        # Opening a FIFO would block until a writer appears; devices never end.
        yield Unreadable(path, 0, f"is {_special_kind(info.st_mode)}, not a regular file")


def _search_directory(top: str, walk: _Walk) -> Iterator[Source | Unreadable]:
    """Depth-first with entries sorted by name, so the order never depends on the filesystem.

    An explicit stack instead of recursion: however deep the tree, no RecursionError.
    """
    listing = _sorted_entries(top)
    if isinstance(listing, Unreadable):
        yield listing
        return
    # per open directory: its path and its entries not yet visited, last-to-visit first
    stack = [(top, listing)]
    while stack:
        directory, entries = stack[-1]
        if not entries:
            stack.pop()
            continue
        entry = entries.pop()
        try:
            is_directory = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_directory = False  # vanished since listed; the stat below reports it if it matters
        if is_directory:
            if walk.skipped(directory, entry.name, is_dir=True):
                continue
            # Symlinked directories are not followed (is_dir above is False for them): no loops.
            listing = _sorted_entries(entry.path)
            if isinstance(listing, Unreadable):
                yield listing
            else:
                stack.append((entry.path, listing))
            continue
        if walk.skipped(directory, entry.name, is_dir=False, include=True):
            continue
        try:
            info = os.stat(entry.path)  # follows a symlinked file to what it names
        except OSError as exc:
            yield Unreadable(entry.path, 0, _stat_reason(entry.path, exc))
            continue
        # FIFOs, sockets and devices are skipped without being opened.
        if (info.st_dev, info.st_ino) in walk.written:
            continue  # this run's own report: a search that read it would lint trajlint's output
        if stat.S_ISREG(info.st_mode) and _first_visit(info, walk.seen):
            yield Source(entry.path)


def _sorted_entries(directory: str) -> list[os.DirEntry[str]] | Unreadable:
    try:
        with os.scandir(directory) as scan:
            return sorted(scan, key=lambda entry: entry.name, reverse=True)
    except OSError as exc:
        return Unreadable(directory, 0, _os_reason(exc))


def _first_visit(info: os.stat_result, seen: set[tuple[int, int]]) -> bool:
    key = (info.st_dev, info.st_ino)
    if key in seen:
        return False
    seen.add(key)
    return True
