from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SAMPLES = ROOT.parent / "shared" / "data" / "samples" / "clean-rollouts.jsonl"

# The tests that build the package (a wheel, the pre-commit hook's environment) compile the native
# core each time; with one cargo target directory they share the compiled crates (cargo
# fingerprints every input, so nothing stale is reused) instead of compiling ~60 crates anew.
os.environ.setdefault("CARGO_TARGET_DIR", str(ROOT / "target"))


@pytest.fixture(autouse=True)
def core_mode_read_afresh():
    """`native.mode` reads TRAJLINT_CORE once a process (and the fingerprints' hash follows it);
    a test that sets the variable means its own mode, so each test reads it afresh, and leaves
    no mode behind."""
    from trajlint.read import native

    native.mode.cache_clear()
    native.sha256_hex.cache_clear()
    yield
    native.mode.cache_clear()
    native.sha256_hex.cache_clear()


@pytest.fixture(scope="session")
def rules():
    from trajlint.check.registry import load_rules

    return load_rules()


def check_paths(paths, rules, max_row_bytes=256 * 1024 * 1024):
    from trajlint.check.run import run
    from trajlint.read import iter_sources

    return run(iter_sources([str(p) for p in paths]), rules, max_row_bytes=max_row_bytes)


@pytest.fixture
def check(rules):
    """Lint the given paths with every packaged rule; returns the engine result."""

    def _check(*paths, max_row_bytes=256 * 1024 * 1024):
        return check_paths(paths, rules, max_row_bytes)

    return _check


@pytest.fixture
def write_jsonl(tmp_path):
    def _write(text: str | bytes, name: str = "rows.jsonl") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        return path

    return _write


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class S3:
    """A real S3 endpoint on loopback (moto's server), reached through the environment as any
    AWS SDK finds one: AWS_ENDPOINT_URL and fake credentials."""

    def __init__(self, endpoint: str, bucket: str):
        self.endpoint = endpoint
        self.bucket = bucket

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint)

    def upload(self, local: Path, prefix: str) -> str:
        """Upload a file, or a directory's files, under `prefix`; the URL of what was uploaded."""
        client = self.client()
        files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
        for path in files:
            key = f"{prefix}/{path.name if local.is_file() else path.relative_to(local).as_posix()}"
            client.upload_file(str(path), self.bucket, key)
        return f"s3://{self.bucket}/{prefix}" + (f"/{local.name}" if local.is_file() else "/")

    def require_auth(self, on: bool) -> None:
        """Make the endpoint check credentials (moto accepts any by default)."""
        import urllib.request

        request = urllib.request.Request(
            f"{self.endpoint}/moto-api/reset-auth",
            data=b"0" if on else b"inf",
            method="POST",
            headers={"Content-Type": "text/plain"},
        )
        urllib.request.urlopen(request, timeout=10).read()


@pytest.fixture(scope="session")
def s3():
    """One S3 endpoint per session, with one bucket; its settings stay in the environment for the
    session, so a Ray cluster started later hands them to its workers too."""
    pytest.importorskip("s3fs")
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    patch = pytest.MonkeyPatch()
    endpoint = f"http://127.0.0.1:{port}"
    for name, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        patch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        patch.delenv(name, raising=False)
    store = S3(endpoint, "rollouts")
    store.client().create_bucket(Bucket=store.bucket)
    try:
        yield store
    finally:
        patch.undo()
        server.stop()


@pytest.fixture(scope="session")
def ray_cluster(s3):
    """A two-node Ray cluster on this machine, shared by the session (it takes ~20 s to start),
    with this process connected to it as the driver."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture(scope="session")
def core():
    """The compiled native core. Where it is not built these tests skip, except in CI (CI=true),
    where they fail: a broken build must not pass by skipping."""
    from trajlint.read import native

    if not native.available():
        if os.environ.get("CI") == "true":
            pytest.fail("trajlint._core is not importable: the native core did not build or install")
        pytest.skip("trajlint._core is not built here (pip install . builds it)")
    return native._module()
