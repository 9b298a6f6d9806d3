"""Inputs named by URL: read through fsspec from memory://, file:// and a real S3 endpoint on
loopback (moto's server, through s3fs, found by AWS_ENDPOINT_URL), reported as the same files read
from disk are, with the URL as the file's name."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from trajlint.cli import main
from trajlint.read import Source, remote, shards

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "data" / "hostile"
REAL = ROOT / "tests" / "data" / "real" / "v0.6.0"


def _check(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", "--isolated", *args])
    return result.exit_code, result.stdout, result.stderr


def _concise(*args: str) -> tuple[int, list[str]]:
    code, out, _ = _check("--output-format", "concise", *args)
    return code, out.splitlines()


def test_url_helpers():
    assert remote.is_url("s3://bucket/run/") and remote.is_url("memory://x") and remote.is_url("file:///tmp/a")
    assert not remote.is_url("run/a.jsonl") and not remote.is_url("C:\\runs\\a.jsonl") and not remote.is_url("-")
    assert remote.redacted("s3://AKIA:s3cr3t@bucket/run/a.jsonl") == "s3://***@bucket/run/a.jsonl"
    assert remote.redacted("s3://bucket/key@1.jsonl") == "s3://bucket/key@1.jsonl"  # an @ in the key is no user


@pytest.mark.parametrize(
    "url",
    [
        "s3://AKIAKEY:s3cr3tv4lue@rollouts/run/a.jsonl",
        "memory://user:s3cr3tv4lue@host/a.jsonl",
        "https://host/run/a.jsonl?X-Amz-Credential=AKIAKEY&X-Amz-Signature=s3cr3tv4lue",
        "az://container/a.jsonl?sv=2024&sig=s3cr3tv4lue",
    ],
)
def test_credentials_in_a_url_are_refused_and_never_shown(url):
    code, out, err = _check("--output-format", "json", url)
    assert code == 2
    assert "s3cr3tv4lue" not in out + err and "AKIAKEY" not in out + err
    assert "credentials in a URL are refused" in err and len(err.strip().splitlines()) == 1


def test_a_missing_extra_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "gcsfs", None)  # as if not installed
    code, _, err = _check("gs://bucket/run/")
    assert code == 2 and "pip install 'trajlint[gcs]'" in err and len(err.strip().splitlines()) == 1
    monkeypatch.setitem(sys.modules, "fsspec", None)
    code, _, err = _check("s3://bucket/run/")
    assert code == 2 and "pip install 'trajlint[s3]'" in err


def test_a_local_run_does_not_import_fsspec(tmp_path):
    shutil.copy(HOSTILE / "crlf.jsonl", tmp_path / "a.jsonl")
    probe = (
        "import sys\nfrom trajlint.cli import main\n"
        "try:\n    main(['check', '--isolated', '-q', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
        "assert 'fsspec' not in sys.modules, 'fsspec imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def _as_memory(directory: Path, prefix: str) -> str:
    import fsspec

    fs = fsspec.filesystem("memory")
    for path in sorted(directory.iterdir()):
        if path.is_file():
            fs.pipe(f"/{prefix}/{path.name}", path.read_bytes())
    return f"memory://{prefix}/"


def test_memory_urls_report_as_the_files_do(tmp_path, monkeypatch):
    """A prefix, a glob and an object named by URL give the findings the local files give,
    with the URL as the file (compressed objects included)."""
    pytest.importorskip("fsspec")
    url = _as_memory(HOSTILE, "hostile")
    monkeypatch.chdir(HOSTILE.parent)
    local_code, local = _concise("--jobs", "1", "hostile")
    code, remote_lines = _concise("--jobs", "1", url)
    assert code == local_code == 1
    assert [line.replace("memory://hostile/", "hostile/") for line in remote_lines] == local
    assert any(line.startswith("memory://hostile/truncated.jsonl.gz:") for line in remote_lines)
    _, globbed = _concise("--jobs", "1", "memory://hostile/*.jsonl.zst")
    assert globbed and all(line.startswith("memory://hostile/plain-text.jsonl.zst") for line in globbed[:-1])


def test_file_urls_and_sarif_name_the_url(tmp_path):
    shutil.copy(HOSTILE / "nulls.jsonl", tmp_path / "a.jsonl")
    url = (tmp_path / "a.jsonl").as_uri()
    code, out, _ = _check("--output-format", "sarif", url)
    assert code == 1
    locations = {
        loc["physicalLocation"]["artifactLocation"]["uri"] for r in json.loads(out)["runs"][0]["results"] for loc in r["locations"]
    }
    assert locations == {url}


def test_a_url_that_names_nothing_ends_the_run():
    pytest.importorskip("fsspec")
    code, out, err = _check("memory://nothing/here.jsonl")
    assert code == 2 and err.strip().endswith("memory://nothing/here.jsonl: no such object")
    code, _, err = _check("memory://nothing/*.jsonl")
    assert code == 2 and "glob matched no objects" in err


# -- a real S3 endpoint ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3_corpus(s3, tmp_path_factory):
    """The hostile corpus, the real-data corpus and a generated file with defects, in the bucket."""
    generated = tmp_path_factory.mktemp("generated") / "generated.jsonl"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), "--rows", "120", "--defects", "0.15", "-o", str(generated)],
        check=True,
        capture_output=True,
    )
    (generated.parent / "generated.jsonl.gz").write_bytes(gzip.compress(generated.read_bytes()))
    (generated.parent / "generated.jsonl.defects.json").unlink(missing_ok=True)
    return {
        "hostile": (HOSTILE, s3.upload(HOSTILE, "hostile")),
        "real": (REAL, s3.upload(REAL, "real/v0.6.0")),
        "generated": (generated.parent, s3.upload(generated.parent, "generated")),
    }


@pytest.mark.parametrize("corpus", ["hostile", "real", "generated"])
def test_s3_reports_as_the_local_files(s3_corpus, corpus):
    local_dir, url = s3_corpus[corpus]
    local_code, local = _concise("--jobs", "1", str(local_dir))
    for jobs in ("1", "2"):
        code, lines = _concise("--jobs", jobs, url)
        assert code == local_code
        assert [line.replace(url, str(local_dir) + "/") for line in lines] == local


def test_s3_objects_are_cut_into_byte_range_shards(s3_corpus):
    """A plain object is cut at line ends as a file is; its shards hold its lines, once each."""
    local_dir, url = s3_corpus["generated"]
    whole = (local_dir / "generated.jsonl").read_bytes()
    pieces = shards(Source(url + "generated.jsonl"), shard_bytes=len(whole) // 5)
    assert len(pieces) >= 4 and all(p.span is not None for p in pieces)
    lines = [line.raw for piece in pieces for line in piece.lines()]
    assert lines == [line for line in whole.split(b"\n") if line.strip()]


def test_s3_missing_object_is_one_line(s3):
    code, _, err = _check(f"s3://{s3.bucket}/no/such/object.jsonl")
    assert code == 2
    assert err.strip().splitlines() == [f"Error: s3://{s3.bucket}/no/such/object.jsonl: no such object"]


def test_s3_refused_credentials_are_one_line(s3, s3_corpus, monkeypatch):
    import s3fs

    _, url = s3_corpus["hostile"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAREFUSEDKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "refused-s3cr3t")
    s3fs.S3FileSystem.clear_instance_cache()  # fsspec keeps file systems by their arguments, not the environment
    s3.require_auth(True)
    try:
        code, out, err = _check(url)
    finally:
        s3.require_auth(False)
        s3fs.S3FileSystem.clear_instance_cache()
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "access denied" in err
    assert "refused-s3cr3t" not in out + err


def test_build_reads_urls(tmp_path):
    pytest.importorskip("fsspec")
    url = _as_memory(ROOT / "examples", "examples-for-build")
    out = tmp_path / "built.jsonl"
    result = CliRunner().invoke(main, ["build", url, "-o", str(out)])
    local = tmp_path / "local.jsonl"
    CliRunner().invoke(main, ["build", str(ROOT / "examples"), "-o", str(local)])
    assert result.exit_code in (0, 1) and out.read_bytes() == local.read_bytes() and out.stat().st_size > 0


def test_per_file_ignores_name_objects_by_url(tmp_path, monkeypatch):
    pytest.importorskip("fsspec")
    url = _as_memory(HOSTILE, "ignored")
    (tmp_path / "trajlint.toml").write_text('[per-file-ignores]\n"memory://ignored/*.jsonl" = ["ALL"]\n')
    monkeypatch.chdir(tmp_path)
    lines = CliRunner().invoke(main, ["check", "--output-format", "concise", url]).stdout.splitlines()
    assert lines and not any(line.startswith("memory://ignored/") and ".jsonl:" in line for line in lines[:-1])
    assert any(".jsonl.gz:" in line or ".jsonl.zst:" in line for line in lines[:-1])
