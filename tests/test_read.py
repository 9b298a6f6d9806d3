"""Tests for the read stage: paths -> sources -> lines -> parsed values."""

from __future__ import annotations

import gzip
import io
import os
import random
import struct
import threading
import tracemalloc
import zlib
from pathlib import Path

import orjson
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from trajlint import read
from trajlint.read import Line, OversizedLine, ParseError, Source, Unreadable, decompress, iter_sources, parse
from trajlint.read.lines import split_newlines

ROWS = b'{"a":1}\n\n   \n{"b":2}\r\n\t\n{"c":3}'  # blank lines, CRLF, no final newline
ROWS_EXPECTED = [(1, b'{"a":1}'), (4, b'{"b":2}\r'), (6, b'{"c":3}')]


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def gz(data: bytes) -> bytes:
    return gzip.compress(data)


def zst(data: bytes, **options: object) -> bytes:
    return zstandard.ZstdCompressor(**options).compress(data)


def read_all(paths: list[str], max_row_bytes: int = read.DEFAULT_MAX_ROW_BYTES, stdin=None) -> list:
    """Every item the read stage produces, sources replaced by their lines."""
    out: list = []
    for item in iter_sources(paths, stdin=stdin):
        if isinstance(item, Source):
            out.extend(item.lines(max_row_bytes))
        else:
            out.append(item)
    return out


def numbered(items: list) -> list[tuple[int, bytes]]:
    return [(item.number, item.raw) for item in items]


def paths_of(items: list) -> list[str]:
    return [item.path for item in items]


def run_with_timeout(function, seconds: float = 10.0):
    """Run in a daemon thread so a hang (e.g. opening a FIFO) fails the test instead of the run."""
    result: dict = {}

    def target() -> None:
        try:
            result["value"] = function()
        except BaseException as exc:  # re-raised in the test thread
            result["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "reading hung"
    if "error" in result:
        raise result["error"]
    return result["value"]


# ---------------------------------------------------------------------------------------------
# Input forms


@pytest.mark.parametrize(
    "name, encode",
    [("rows.jsonl", lambda d: d), ("rows.jsonl.gz", gz), ("rows.jsonl.zst", zst)],
)
def test_jsonl_forms_give_the_same_numbered_lines(tmp_path, name, encode):
    path = write(tmp_path / name, encode(ROWS))
    items = read_all([str(path)])
    assert all(isinstance(item, Line) and item.path == str(path) for item in items)
    assert numbered(items) == ROWS_EXPECTED


def test_multi_member_gzip_and_multi_frame_zstd(tmp_path):
    first, second = b'{"a":1}\n{"b"', b':2}\n{"c":3}\n'
    path_gz = write(tmp_path / "m.jsonl.gz", gz(first) + gz(second))
    path_zst = write(tmp_path / "m.jsonl.zst", zst(first) + zst(second))
    expected = [(1, b'{"a":1}'), (2, b'{"b":2}'), (3, b'{"c":3}')]
    assert numbered(read_all([str(path_gz)])) == expected
    assert numbered(read_all([str(path_zst)])) == expected


def test_empty_files_give_nothing(tmp_path):
    paths = [
        write(tmp_path / "e.jsonl", b""),
        write(tmp_path / "e.jsonl.gz", b""),
        write(tmp_path / "e.jsonl.zst", b""),
        write(tmp_path / "b.jsonl", b"\n \n\r\n"),
    ]
    assert read_all([str(p) for p in paths]) == []


def test_named_json_file_is_one_row_at_line_1(tmp_path):
    path = write(tmp_path / "row.json", b'{\n  "a": 1,\n\n  "b": [1, 2]\n}\n')
    (item,) = read_all([str(path)])
    assert item == Line(str(path), 1, b'{\n  "a": 1,\n\n  "b": [1, 2]\n}\n')
    assert parse(item.raw) == {"a": 1, "b": [1, 2]}


def test_named_compressed_json_file_is_one_row(tmp_path):
    path = write(tmp_path / "row.json.gz", gz(b'{\n"a": 1}\n'))
    assert numbered(read_all([str(path)])) == [(1, b'{\n"a": 1}\n')]


def test_empty_json_file_still_yields_its_row_so_it_is_reported(tmp_path):
    path = write(tmp_path / "row.json", b"")
    (item,) = read_all([str(path)])
    assert item == Line(str(path), 1, b"")
    assert parse(item.raw).kind == "truncated"


def test_json_file_bounded_by_max_row_bytes(tmp_path):
    path = write(tmp_path / "row.json", b'{"a": "' + b"x" * 5000 + b'"}')
    assert read_all([str(path)], max_row_bytes=1000) == [OversizedLine(str(path), 1, 5009)]
    assert read_all([str(path)], max_row_bytes=5009)[0] == Line(str(path), 1, b'{"a": "' + b"x" * 5000 + b'"}')


def test_other_named_files_are_read_as_jsonl_with_compression_by_suffix(tmp_path):
    text = write(tmp_path / "rows.txt", b'{"a":1}\n{"b":2}\n')
    packed = write(tmp_path / "rows.log.zst", zst(b'{"a":1}\n'))
    items = read_all([str(text), str(packed)])
    assert [(i.path, i.number) for i in items] == [(str(text), 1), (str(text), 2), (str(packed), 1)]


def test_stdin_argument_is_read_as_path_dash_and_left_open(tmp_path):
    stdin = io.BytesIO(b'{"a":1}\n\n{"b":2}\n')
    items = read_all(["-", "-"], stdin=stdin)  # named twice, read once
    assert items == [Line("-", 1, b'{"a":1}'), Line("-", 3, b'{"b":2}')]
    assert not stdin.closed


def test_directory_is_searched_recursively_sorted_and_filtered(tmp_path):
    root = tmp_path / "runs"
    for relative in ["b.jsonl", "a/z.jsonl.zst", "a/y.jsonl", "a.jsonl.gz", "c/d/e.jsonl", "A.jsonl"]:
        data = b'{"x":1}\n'
        if relative.endswith(".gz"):
            data = gz(data)
        elif relative.endswith(".zst"):
            data = zst(data)
        write(root / relative, data)
    for ignored in ["notes.txt", "row.json", "x.jsonl.bz2", "c/readme.md", "jsonl"]:
        write(root / ignored, b"not json at all\n")
    (root / "empty").mkdir()
    items = read_all([str(root)])
    assert paths_of(items) == [
        os.path.join(str(root), relative)
        for relative in ["A.jsonl", "a/y.jsonl", "a/z.jsonl.zst", "a.jsonl.gz", "b.jsonl", "c/d/e.jsonl"]
    ]
    assert all(isinstance(item, Line) for item in items)


def test_directory_paths_keep_the_spelling_the_user_gave(tmp_path, monkeypatch):
    write(tmp_path / "runs" / "a.jsonl", b"{}\n")
    monkeypatch.chdir(tmp_path)
    assert paths_of(read_all(["runs"])) == ["runs/a.jsonl"]
    assert paths_of(read_all(["./runs/"])) == ["./runs/a.jsonl"]


def test_empty_directory_is_not_a_finding(tmp_path):
    (tmp_path / "empty" / "deeper").mkdir(parents=True)
    write(tmp_path / "other" / "notes.txt", b"x\n")
    assert list(iter_sources([str(tmp_path / "empty"), str(tmp_path / "other")])) == []


def test_glob_is_expanded_recursively_when_no_such_literal_path(tmp_path, monkeypatch):
    write(tmp_path / "runs" / "a.jsonl", b"{}\n")
    write(tmp_path / "runs" / "deep" / "b.jsonl", b"{}\n")
    write(tmp_path / "runs" / "c.txt", b"{}\n")
    monkeypatch.chdir(tmp_path)
    assert paths_of(read_all(["runs/*.jsonl"])) == ["runs/a.jsonl"]
    assert paths_of(read_all(["runs/**/*.jsonl"])) == ["runs/a.jsonl", "runs/deep/b.jsonl"]
    assert paths_of(read_all(["runs/?.txt"])) == ["runs/c.txt"]  # a matched file counts as named


def test_glob_matching_nothing_is_unreadable(tmp_path):
    pattern = str(tmp_path / "*.jsonl")
    assert list(iter_sources([pattern])) == [Unreadable(pattern, 0, "glob matched no files")]


def test_literal_path_with_glob_characters_wins_over_expansion(tmp_path):
    literal = write(tmp_path / "run[1].jsonl", b"{}\n")
    write(tmp_path / "run1.jsonl", b"[]\n")
    assert [item.raw for item in read_all([str(literal)])] == [b"{}"]


def test_same_file_named_twice_or_reached_twice_is_read_once(tmp_path, monkeypatch):
    path = write(tmp_path / "runs" / "a.jsonl", b"{}\n")
    os.symlink(path, tmp_path / "runs" / "alias.jsonl")
    monkeypatch.chdir(tmp_path)
    sources = list(iter_sources(["runs/a.jsonl", "./runs/a.jsonl", "runs", "runs/*.jsonl", "runs/alias.jsonl"]))
    assert sources == [Source("runs/a.jsonl")]


def test_source_derives_compression_and_shape_from_its_path():
    assert (Source("x.JSONL.GZ").compression, Source("x.jsonl.zst").compression) == ("gzip", "zstd")
    assert Source("x.jsonl").compression == ""
    assert Source("x.json").whole and Source("x.json.zst").whole and not Source("x.jsonl").whole


# ---------------------------------------------------------------------------------------------
# Unreadable paths, special files, symlinks


def test_missing_path_is_unreadable(tmp_path):
    missing = str(tmp_path / "nope.jsonl")
    assert list(iter_sources([missing])) == [Unreadable(missing, 0, "no such file or directory")]


def test_path_through_a_file_is_unreadable(tmp_path):
    write(tmp_path / "a.jsonl", b"{}\n")
    bad = str(tmp_path / "a.jsonl" / "b.jsonl")
    assert list(iter_sources([bad])) == [Unreadable(bad, 0, "not a directory")]


def test_file_vanishing_between_listing_and_reading_is_unreadable(tmp_path):
    path = write(tmp_path / "a.jsonl", b"{}\n")
    (source,) = iter_sources([str(path)])
    path.unlink()
    assert list(source.lines()) == [Unreadable(str(path), 0, "no such file or directory")]


def test_named_fifo_is_unreadable_and_never_opened(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    items = run_with_timeout(lambda: read_all([str(fifo)]))
    assert items == [Unreadable(str(fifo), 0, "is a FIFO, not a regular file")]


def test_named_device_is_unreadable():
    assert list(iter_sources(["/dev/null"])) == [Unreadable("/dev/null", 0, "is a device, not a regular file")]


def test_fifo_found_in_a_directory_is_skipped_without_hanging(tmp_path):
    write(tmp_path / "a.jsonl", b"{}\n")
    os.mkfifo(tmp_path / "b.jsonl")
    os.symlink(tmp_path / "b.jsonl", tmp_path / "c.jsonl")  # a link to the FIFO: skipped too
    items = run_with_timeout(lambda: read_all([str(tmp_path)]))
    assert items == [Line(str(tmp_path / "a.jsonl"), 1, b"{}")]


def test_source_swapped_for_a_fifo_after_listing_does_not_hang(tmp_path):
    path = write(tmp_path / "a.jsonl", b"{}\n")
    (source,) = iter_sources([str(path)])
    path.unlink()
    os.mkfifo(path)
    items = run_with_timeout(lambda: list(source.lines()))
    assert items == [Unreadable(str(path), 0, "is a FIFO, not a regular file")]


def test_dangling_symlink_found_while_searching_is_unreadable(tmp_path):
    write(tmp_path / "a.jsonl", b"{}\n")
    os.symlink(tmp_path / "gone.jsonl", tmp_path / "b.jsonl")
    os.symlink(tmp_path / "gone.txt", tmp_path / "c.txt")  # not a rollout name: ignored
    items = read_all([str(tmp_path)])
    assert items == [
        Line(str(tmp_path / "a.jsonl"), 1, b"{}"),
        Unreadable(str(tmp_path / "b.jsonl"), 0, "is a symbolic link to a missing file"),
    ]


def test_named_dangling_symlink_and_symlink_loop_are_unreadable(tmp_path):
    os.symlink(tmp_path / "gone.jsonl", tmp_path / "dangling.jsonl")
    os.symlink(tmp_path / "loop.jsonl", tmp_path / "loop.jsonl")
    named = [str(tmp_path / "dangling.jsonl"), str(tmp_path / "loop.jsonl")]
    assert list(iter_sources(named)) == [
        Unreadable(named[0], 0, "is a symbolic link to a missing file"),
        Unreadable(named[1], 0, "is a symbolic link loop"),
    ]


def test_symlinked_directories_are_not_followed_so_loops_end(tmp_path):
    root = tmp_path / "runs"
    write(root / "sub" / "a.jsonl", b"{}\n")
    os.symlink(root, root / "sub" / "loop")
    os.symlink(root / "sub", root / "twin")
    items = run_with_timeout(lambda: read_all([str(root)]))
    assert paths_of(items) == [str(root / "sub" / "a.jsonl")]
    # A glob does follow links (as a shell would) but still ends, and reads each file once.
    items = run_with_timeout(lambda: read_all([str(root / "**" / "*.jsonl")]))
    assert len(items) == 1 and items[0].raw == b"{}"


def test_named_symlink_to_a_directory_is_searched(tmp_path):
    write(tmp_path / "real" / "a.jsonl", b"{}\n")
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert paths_of(read_all([str(tmp_path / "link")])) == [str(tmp_path / "link" / "a.jsonl")]


def test_very_deep_directory_tree_does_not_overflow_the_stack(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for _ in range(1200):  # deeper than Python's recursion limit; built level by level
        os.mkdir("d")
        os.chdir("d")
    write(Path("a.jsonl"), b"{}\n")
    os.chdir(tmp_path)
    try:
        items = read_all(["d"])
        assert len(items) == 1 and items[0].path == "d/" * 1200 + "a.jsonl"
        assert len(read_all(["d/**/*.jsonl"])) == 1
    finally:
        # pytest's own cleanup recurses per level and would overflow on this tree.
        os.chdir("d/" * 1200)
        os.remove("a.jsonl")
        for _ in range(1200):
            os.chdir("..")
            os.rmdir("d")


# ---------------------------------------------------------------------------------------------
# Line splitting


def test_line_numbers_count_blank_and_whitespace_lines(tmp_path):
    data = b"\n\n" + b'{"a":1}\n' + b" \t \r\n" + b'  {"b":2}  \n' + b"\n"
    path = write(tmp_path / "a.jsonl", data)
    assert numbered(read_all([str(path)])) == [(3, b'{"a":1}'), (5, b'  {"b":2}  ')]


def test_a_line_of_other_whitespace_is_not_blank(tmp_path):
    # Only JSON whitespace makes a blank line; a form feed is a (bad) row the parser reports.
    path = write(tmp_path / "a.jsonl", b"\x0c\n{}\n")
    items = read_all([str(path)])
    assert numbered(items) == [(1, b"\x0c"), (2, b"{}")]
    assert parse(items[0].raw).kind == "syntax"


def test_crlf_keeps_the_carriage_return_which_json_ignores(tmp_path):
    path = write(tmp_path / "a.jsonl", b'{"a":1}\r\n{"b":2}\r\n')
    items = read_all([str(path)])
    assert [parse(item.raw) for item in items] == [{"a": 1}, {"b": 2}]
    assert items[0].raw.endswith(b"\r")


def test_bytes_are_passed_through_untouched(tmp_path):
    raw = b'{"s": "\xff\xfe", "t": "\\u00e9\xc3\xa9"}'
    path = write(tmp_path / "a.jsonl", b"\xef\xbb\xbf{}\n" + raw + b"\n")
    assert [item.raw for item in read_all([str(path)])] == [b"\xef\xbb\xbf{}", raw]


def reference_lines(data: bytes, max_row_bytes: int) -> list[tuple[int, bytes] | tuple[int, int]]:
    """The obvious, memory-hungry implementation the streaming one must agree with."""
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    out: list = []
    for number, raw in enumerate(pieces, 1):
        if not raw.strip(b" \t\r"):
            continue
        out.append(("over", number, len(raw)) if len(raw) > max_row_bytes else ("line", number, raw))
    return out


def as_tuples(items: list) -> list:
    return [
        ("over", item.number, item.size) if isinstance(item, OversizedLine) else ("line", item.number, item.raw)
        for item in items
    ]


@pytest.mark.parametrize("chunk_bytes", [1, 2, 3, 7, 64, 4096])
@pytest.mark.parametrize("encode, suffix", [(lambda d: d, ""), (gz, ".gz"), (zst, ".zst")])
def test_chunk_boundaries_never_change_the_lines(tmp_path, monkeypatch, chunk_bytes, encode, suffix):
    monkeypatch.setattr(decompress, "_CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(decompress, "_ZSTD_READ_BYTES", chunk_bytes)
    generator = random.Random(chunk_bytes)
    parts = []
    for _ in range(300):
        kind = generator.random()
        if kind < 0.15:
            parts.append(generator.choice([b"", b" ", b"\t\r", b"\r"]))
        else:
            parts.append(b'{"k":"' + b"x" * generator.randint(0, 60) + b'"}' + generator.choice([b"", b"\r"]))
    data = b"\n".join(parts) + generator.choice([b"", b"\n"])
    max_row_bytes = 40
    path = write(tmp_path / ("a.jsonl" + suffix), encode(data))
    assert as_tuples(read_all([str(path)], max_row_bytes)) == reference_lines(data, max_row_bytes)


def test_oversized_line_is_skipped_with_exact_size_and_bounded_memory(tmp_path):
    huge = b'{"pad": "' + b"x" * (8 * 1024 * 1024) + b'"}'
    path = write(tmp_path / "a.jsonl", b'{"a":1}\n' + huge + b'\n\n{"b":2}\n')
    source = Source(str(path))
    tracemalloc.start()
    try:
        items = list(source.lines(max_row_bytes=1000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert items == [
        Line(str(path), 1, b'{"a":1}'),
        OversizedLine(str(path), 2, len(huge)),
        Line(str(path), 4, b'{"b":2}'),
    ]
    assert peak < 2 * 1024 * 1024, f"peak {peak} bytes while skipping an 8 MiB line"


@pytest.mark.parametrize("encode, suffix", [(lambda d: d, ""), (gz, ".gz"), (zst, ".zst")])
def test_oversized_line_inside_compressed_stream(tmp_path, encode, suffix):
    big = b"[" + b"1," * 500_000 + b"1]"
    path = write(tmp_path / ("a.jsonl" + suffix), encode(b"{}\n" + big + b"\n[2]\n"))
    assert as_tuples(read_all([str(path)], 1000)) == [("line", 1, b"{}"), ("over", 2, len(big)), ("line", 3, b"[2]")]


def test_oversized_last_line_without_newline(tmp_path):
    path = write(tmp_path / "a.jsonl", b"{}\n" + b"y" * 300_000)
    assert read_all([str(path)], 1000)[-1] == OversizedLine(str(path), 2, 300_000)


def test_line_of_exactly_max_row_bytes_is_kept(tmp_path):
    path = write(tmp_path / "a.jsonl", b"a" * 100 + b"\n" + b"b" * 101 + b"\n")
    assert as_tuples(read_all([str(path)], 100)) == [("line", 1, b"a" * 100), ("over", 2, 101)]


# ---------------------------------------------------------------------------------------------
# Broken streams


def many_rows(count: int = 20_000) -> bytes:
    generator = random.Random(count)
    return b"".join(b'{"i": %d, "text": "%s"}\n' % (i, generator.randbytes(24).hex().encode()) for i in range(count))


def assert_prefix_then_unreadable(items: list, path: Path, data: bytes, decoded: bytes, reason: str) -> None:
    """Exactly the complete lines available before the failure, then one Unreadable after them."""
    complete = decoded.count(b"\n")
    *lines, last = items
    assert complete > 0
    assert numbered(lines) == list(enumerate(data.split(b"\n")[:complete], 1))
    assert last == Unreadable(str(path), complete + 1, reason)


def test_truncated_gzip_yields_lines_before_then_unreadable(tmp_path):
    data = many_rows()
    packed = gz(data)
    cut = packed[: len(packed) * 2 // 3]
    path = write(tmp_path / "a.jsonl.gz", cut)
    decoded = zlib.decompressobj(31).decompress(cut)
    items = read_all([str(path)])
    assert_prefix_then_unreadable(items, path, data, decoded, "gzip stream ends before its end-of-stream marker")


def test_gzip_cut_right_after_a_newline_still_reports_the_next_line(tmp_path):
    path = write(tmp_path / "a.jsonl.gz", gz(b'{"a":1}\n{"b":2}\n')[:-8])  # trailer (CRC, size) missing
    items = read_all([str(path)])
    assert items[-1] == Unreadable(str(path), 3, "gzip stream ends before its end-of-stream marker")
    assert numbered(items[:-1]) == [(1, b'{"a":1}'), (2, b'{"b":2}')]


def test_truncated_zstd_yields_lines_before_then_unreadable(tmp_path):
    data = many_rows()
    packed = zst(data)
    cut = packed[: len(packed) * 2 // 3]
    path = write(tmp_path / "a.jsonl.zst", cut)
    decoded = zstandard.ZstdDecompressor().decompressobj().decompress(cut)
    items = read_all([str(path)])
    assert_prefix_then_unreadable(items, path, data, decoded, "zstd stream ends inside a frame (truncated)")


def zstd_frames_of_every_layout() -> list[bytes]:
    """Frames whose headers and blocks differ: checksum, skippable frame, RLE blocks, raw blocks,
    no content size, empty frame."""
    noise = random.Random(3).randbytes(3000)
    return [
        zst(b'{"a":1}\n' * 40, write_checksum=True),
        struct.pack("<II", 0x184D2A5A, 5) + b"skip!",
        zst(b" " * 300_000, level=1),  # RLE blocks
        zst(noise, level=1),  # a raw block
        zst(b'{"b":2}\n' * 40, write_content_size=False),
        zst(b""),
    ]


def frame_ends(frames: list[bytes]) -> set[int]:
    ends, position = {0}, 0
    for frame in frames:
        position += len(frame)
        ends.add(position)
    return ends


def zstd_layout_says_truncated(data: bytes) -> bool:
    frames = decompress._ZstdFrames(io.BytesIO(data))
    while frames.read(7):  # small reads: headers straddle reads
        pass
    return frames.truncated


def test_zstd_frame_layout_is_followed_to_every_possible_cut():
    frames = zstd_frames_of_every_layout()
    stream = b"".join(frames)
    ends = frame_ends(frames)
    for cut in range(len(stream) + 1):
        assert zstd_layout_says_truncated(stream[:cut]) == (cut not in ends), cut


def test_zstd_frame_with_a_dictionary_id_is_followed():
    samples = [b"row %d %s" % (i, b"alpha" * (i % 7)) for i in range(2000)]
    dictionary = zstandard.train_dictionary(2048, samples)
    frame = zstandard.ZstdCompressor(dict_data=dictionary).compress(b"row 5 alphaalpha\n" * 10)
    assert frame[4] & 3  # the descriptor announces a dictionary id
    for cut in range(len(frame) + 1):
        assert zstd_layout_says_truncated(frame[:cut]) == (cut not in (0, len(frame))), cut


def test_zstd_cut_between_frames_is_complete_and_inside_a_frame_is_truncated(tmp_path):
    frames = zstd_frames_of_every_layout()
    stream = b"".join(frames)
    ends = sorted(frame_ends(frames))
    cuts = set(ends) | {end + 1 for end in ends[:-1]} | {end - 1 for end in ends[1:]}
    cuts |= {(start + end) // 2 for start, end in zip(ends, ends[1:])}
    for cut in sorted(cuts):
        path = write(tmp_path / f"cut{cut}.jsonl.zst", stream[:cut])
        items = read_all([str(path)])
        problems = [item for item in items if isinstance(item, Unreadable)]
        if cut in ends:
            assert problems == [], cut
        else:
            assert problems == [items[-1]] and items[-1].reason == "zstd stream ends inside a frame (truncated)", cut


def test_corrupt_gzip_is_unreadable_not_an_exception(tmp_path):
    packed = bytearray(gz(many_rows(2000)))
    packed[len(packed) // 2 : len(packed) // 2 + 64] = b"\xff" * 64
    path = write(tmp_path / "a.jsonl.gz", bytes(packed))
    *lines, last = read_all([str(path)])
    assert isinstance(last, Unreadable) and last.reason.startswith("gzip data is corrupt")
    # Damaged deflate data may still decode (to garbage) until a check fails: the lines read
    # before the failure are all yielded, the Unreadable comes after them.
    assert lines[0] == Line(str(path), 1, many_rows(2000).split(b"\n")[0])
    assert last.line > lines[-1].number


def test_gzip_with_a_bad_crc_is_unreadable(tmp_path):
    packed = bytearray(gz(b'{"a":1}\n'))
    packed[-8] ^= 0xFF
    path = write(tmp_path / "a.jsonl.gz", bytes(packed))
    assert read_all([str(path)])[-1] == Unreadable(str(path), 2, "gzip data is corrupt (CRC check failed)")


def test_corrupt_zstd_is_unreadable_not_an_exception(tmp_path):
    packed = bytearray(zst(many_rows(2000), write_checksum=True))
    packed[len(packed) // 2 : len(packed) // 2 + 64] = b"\x00" * 64
    path = write(tmp_path / "a.jsonl.zst", bytes(packed))
    *lines, last = read_all([str(path)])
    assert isinstance(last, Unreadable) and last.reason.startswith("zstd data is corrupt")
    assert all(isinstance(line, Line) for line in lines)
    assert not lines or last.line > lines[-1].number


def test_zstd_followed_by_garbage_reports_the_line_after_the_good_data(tmp_path):
    path = write(tmp_path / "a.jsonl.zst", zst(b'{"a":1}\n') + b"garbage\n")
    assert read_all([str(path)]) == [
        Line(str(path), 1, b'{"a":1}'),
        Unreadable(str(path), 2, "data after the last zstd frame is not zstd"),
    ]


@pytest.mark.parametrize("suffix, reason", [(".jsonl.zst", "not a zstd stream"), (".jsonl.gz", "not a gzip stream")])
def test_compressed_name_holding_plain_text_is_unreadable_as_a_whole(tmp_path, suffix, reason):
    path = write(tmp_path / ("a" + suffix), b'{"a":1}\n{"b":2}\n')
    assert read_all([str(path)]) == [Unreadable(str(path), 0, reason)]


def test_truncated_compressed_json_document_is_unreadable_at_line_1(tmp_path):
    path = write(tmp_path / "row.json.gz", gz(b'{"a": 1}')[:-4])
    assert read_all([str(path)]) == [Unreadable(str(path), 1, "gzip stream ends before its end-of-stream marker")]


# ---------------------------------------------------------------------------------------------
# Guarantees: read-only, handles closed


def test_inputs_are_byte_identical_and_keep_their_mtime(tmp_path):
    files = [
        write(tmp_path / "a.jsonl", ROWS),
        write(tmp_path / "b.jsonl.gz", gz(ROWS)),
        write(tmp_path / "c.jsonl.zst", zst(ROWS)),
        write(tmp_path / "d.json", b"{}"),
        write(tmp_path / "e.jsonl.gz", gz(ROWS)[:-5]),
    ]
    for path in files:
        os.utime(path, ns=(1_000_000_000, 2_000_000_000))
    before = {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in files}
    read_all([str(tmp_path), str(tmp_path / "d.json")])
    assert {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in files} == before


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("suffix, encode", [("", lambda d: d), (".gz", gz), (".zst", zst)])
def test_file_is_closed_when_the_consumer_stops_early(tmp_path, suffix, encode):
    path = write(tmp_path / ("a.jsonl" + suffix), encode(many_rows(1000)))
    baseline = open_descriptors()
    lines = Source(str(path)).lines()
    next(lines)
    assert open_descriptors() == baseline + 1
    lines.close()
    assert open_descriptors() == baseline
    for _ in Source(str(path)).lines():
        break  # the abandoned generator is finalised at once
    assert open_descriptors() == baseline


# ---------------------------------------------------------------------------------------------
# parse


@pytest.mark.parametrize(
    "raw, value",
    [
        (b'{"a": [1, 2.5, "x", null, true]}', {"a": [1, 2.5, "x", None, True]}),
        (b'  {"a": 1}  \r', {"a": 1}),
        (b"[1, 2]", [1, 2]),  # any JSON value: the caller decides a non-object is a finding
        (b'"NaN Infinity"', "NaN Infinity"),
        (b"18446744073709551615", 18446744073709551615),  # u64 max: exact
        (b"-9223372036854775808", -9223372036854775808),  # i64 min: exact
    ],
)
def test_parse_valid_json(raw, value):
    assert parse(raw) == value


def test_parse_integers_beyond_64_bits_become_floats():
    # orjson (3.8 to 3.13 checked) silently turns them into floats; a later rule reports the loss.
    assert parse(b"18446744073709551616") == pytest.approx(1.8446744073709552e19)
    assert isinstance(parse(b'{"n": 123456789012345678901234567890}')["n"], float)
    assert isinstance(parse(b"-9223372036854775809"), float)


@pytest.mark.parametrize(
    "raw, kind, message, offset",
    [
        (b'{"a": "\xff"}', "utf8", "invalid UTF-8 byte 0xff at byte 7", 7),
        (b'{"a": "\xc3"}', "utf8", "invalid UTF-8 byte 0xc3 at byte 7", 7),
        (b'\xef\xbb\xbf{"a": 1}', "bom", "line starts with a UTF-8 byte order mark", 0),
        (b'{"a": NaN}', "non-finite", "NaN is not valid JSON (at byte 6)", 6),
        (b"NaN", "non-finite", "NaN is not valid JSON (at byte 0)", 0),
        (b'{"a": Infinity}', "non-finite", "Infinity is not valid JSON (at byte 6)", 6),
        (b'{"a": -Infinity}', "non-finite", "-Infinity is not valid JSON (at byte 6)", 6),
        (b"[1,-Infinity]", "non-finite", "-Infinity is not valid JSON (at byte 3)", 3),
        (b'{"a": [1, 2', "truncated", "line ends inside a JSON value (truncated?)", 11),
        (b'{"a": "abc', "truncated", "line ends inside a JSON value (truncated?)", 10),
        (b'{"a": 1\r', "truncated", "line ends inside a JSON value (truncated?)", 8),
        (b"", "truncated", "no JSON value: the input is empty or only whitespace", 0),
        (b'{"a": 1} {"b": 2}', "syntax", "extra data after the JSON value at byte 9", 9),
        (b'{"a": 1}x', "syntax", "extra data after the JSON value at byte 8", 8),
        (b"[1e400]", "syntax", "number out of range: too large for a 64-bit float (at byte 1)", 1),
    ],
)
def test_parse_errors_name_their_cause(raw, kind, message, offset):
    assert parse(raw) == ParseError(kind, message, offset)


def test_parse_syntax_error_offsets_are_in_bytes_not_characters():
    error = parse('{"éé": 1 x}'.encode())
    assert isinstance(error, ParseError) and error.kind == "syntax"
    assert error.offset == 11 and error.message.startswith("invalid JSON at byte 11")


def test_parse_lone_surrogate_is_a_syntax_error():
    error = parse(b'{"a": "\\ud800"}')
    assert isinstance(error, ParseError) and error.kind == "syntax"
    assert "surrogate" in error.message


def test_parse_never_raises_on_noise():
    generator = random.Random(7)
    alphabet = b'{}[]":,0123456789.eE+-tfnaluIiNy \t\r\\\xff\xc3\xef\xbb\xbf'
    for _ in range(3000):
        raw = bytes(generator.choice(alphabet) for _ in range(generator.randint(0, 24)))
        result = parse(raw)
        if isinstance(result, ParseError):
            assert result.kind in {"utf8", "bom", "non-finite", "truncated", "syntax"}
            assert result.message and (result.offset is None or 0 <= result.offset <= len(raw))
        else:
            assert result == orjson.loads(raw)


# -- the head of a file or stream ------------------------------------------------------------------


class _Trickle(io.BytesIO):
    """A pipe that hands out a few bytes at a time."""

    def read1(self, size: int = -1) -> bytes:
        return super().read1(min(size if size >= 0 else 7, 7))

    def read(self, size: int | None = -1) -> bytes:
        return super().read(min(size if size is not None and size >= 0 else 7, 7))


CONTENT = b'\n{"a": 1}\n  \n{"b": 2}\r\n{bad\n' + b'{"long": "' + b"y" * 300 + b'"}\n{"c": 3}\n{"d": 4}'


@pytest.mark.parametrize("stream", [io.BytesIO, _Trickle])
@pytest.mark.parametrize(("lines", "max_bytes", "max_row_bytes"), [(8, 10**6, 10**6), (2, 10**6, 10**6), (8, 40, 10**6), (8, 10**6, 100)])
def test_head_is_the_same_from_a_file_and_a_stream_and_the_stream_reads_whole(tmp_path, stream, lines, max_bytes, max_row_bytes):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(CONTENT)
    from_file, same = read.head(Source(str(path)), max_row_bytes, lines=lines, max_bytes=max_bytes)
    from trajlint.read.source import file_identity

    # The file comes back bound to the version whose head was read.
    assert same == Source(str(path), identity=file_identity(path.stat()))
    from_stream, replayed = read.head(Source("-", "", False, stream(CONTENT)), max_row_bytes, lines=lines, max_bytes=max_bytes)
    assert [(line.number, line.raw) for line in from_stream] == [(line.number, line.raw) for line in from_file]
    expected = [(1 + 1, b'{"a": 1}'), (4, b'{"b": 2}\r'), (5, b"{bad"), (7, b'{"c": 3}'), (8, b'{"d": 4}')]
    if max_row_bytes == 100:
        expected_head = expected[: lines - 1]  # the long line counts among the lines, unread
    elif max_bytes == 40:
        expected_head = expected[:3]  # what ends within the first 40 bytes
    else:
        expected_head = [*expected[:3], (6, b'{"long": "' + b"y" * 300 + b'"}'), *expected[3:]][:lines]
    assert [(line.number, line.raw) for line in from_file] == expected_head
    # What the check reads from the stream afterwards is the whole stream, from its start.
    whole = list(Source("-", "", False, io.BytesIO(CONTENT)).lines(max_row_bytes))
    assert list(replayed.lines(max_row_bytes)) == whole


def test_head_of_compressed_broken_and_missing_files(tmp_path):
    compressed = tmp_path / "rows.jsonl.gz"
    compressed.write_bytes(gzip.compress(b'{"a": 1}\n{"b": 2}\n')[:-6])  # cut short: the lines before still count
    lines, _ = read.head(Source(str(compressed)), 1000)
    assert [line.raw for line in lines] == [b'{"a": 1}', b'{"b": 2}']
    not_gzip = tmp_path / "plain.jsonl.gz"
    not_gzip.write_bytes(b'{"a": 1}\n')
    assert read.head(Source(str(not_gzip)), 1000)[0] == []
    assert read.head(Source(str(tmp_path / "missing.jsonl")), 1000)[0] == []
    whole = tmp_path / "row.json"
    whole.write_bytes(b'{\n  "a": 1\n}\n')
    assert [line.raw for line in read.head(Source(str(whole)), 1000)[0]] == [b'{\n  "a": 1\n}\n']
    assert read.head(Source(str(whole)), 1000, max_bytes=5)[0] == []


def test_head_holds_no_more_than_a_row_of_a_file(tmp_path):
    path = write(tmp_path / "big.jsonl", b'{"pad": "' + b"x" * (20 << 20) + b'"}\n{"a": 1}\n')
    tracemalloc.start()
    try:
        lines, _ = read.head(Source(str(path)), 1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == []  # the long line is not looked at, and nothing ends within the budget after it
    assert peak < 4 << 20, f"peak {peak:,} bytes"


_BLANKISH = [b"", b" ", b"\r", b"\t\r ", b'{"a":1}', b"x", b" {}", b"\x0b"]


def _reference_lines(data: bytes) -> list[tuple[int, bytes]]:
    """Every line that is not blank (only JSON whitespace), numbered from 1, the plain way."""
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()
    return [(n, raw) for n, raw in enumerate(pieces, 1) if raw.strip(b" \t\r")]


@pytest.mark.parametrize("seed", range(40))
def test_blank_lines_are_skipped_at_any_chunking(seed):
    """Runs of blank and whitespace-only lines take a faster path (counted, not visited one by
    one); the lines and their numbers are those of the plain split, however chunks fall."""
    from trajlint.read.items import LineTally
    from trajlint.read.lines import _split_lines

    rng = random.Random(seed)
    lines = [rng.choice(_BLANKISH) if rng.random() < 0.3 else b"" for _ in range(rng.randint(0, 400))]
    data = b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b"")
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 30)))) if len(data) > 1 else []
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
    got = [(item.number, item.raw) for item in _split_lines("f", iter(chunks), 1 << 20, LineTally())]
    assert got == _reference_lines(data)


@given(
    st.lists(st.sampled_from([b"", b"\n", b"\n\n", b"{}", b" ", b"x" * 700, b"y" * 1500, b"z" * 40_000]), max_size=30)
)
@settings(max_examples=300, deadline=None)
def test_chunks_split_at_newlines_as_bytes_split_does(pieces: list[bytes]) -> None:
    # Short and long lines, in either order and mixed, take both ways of splitting.
    chunk = b"".join(pieces)
    assert split_newlines(chunk) == chunk.split(b"\n")


def test_a_file_of_long_lines_reads_the_same_lines_as_one_of_short_lines(tmp_path: Path) -> None:
    rows = [orjson.dumps({"row": i, "text": "w" * (i * 997 % 5000)}) for i in range(400)]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(rows) + b"\n\n  \n" + rows[0])
    read_back = [line.raw for line in Source(str(path)).lines(1 << 20, read.LineTally()) if isinstance(line, Line)]
    assert read_back == [*rows, rows[0]]
