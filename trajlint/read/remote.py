"""Inputs named by URL (``s3://bucket/run/``, ``gs://…``, ``az://…``, ``memory://…``, ``file://…``),
read through fsspec.

fsspec is imported only when a URL is named, so a run over local files never pays for it (nor
needs it installed). Credentials come from where fsspec and the cloud SDKs look for them (the
environment, a profile, an instance role); a URL that carries them itself
(``s3://key:secret@bucket``) is refused, and no message ever shows them.

An object store has no directories and no inodes: a URL that names a prefix is searched for
``*.jsonl``, ``*.jsonl.gz`` and ``*.jsonl.zst`` objects below it, in sorted order, and an object
is read once however many times it is named. A URL that cannot be listed (no such object,
credentials refused, an endpoint that does not answer) is a `RemoteError`: it says something
about the store, not about the data, and ends the run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, BinaryIO

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_GLOB_CHARS = frozenset("*?[")

# The optional dependency each protocol needs, as `pip install 'trajlint[EXTRA]'` names it.
_EXTRAS = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
    "adl": "azure",
}


class RemoteError(Exception):
    """A URL that cannot be used: `url` (credentials masked) and `reason`, one line together."""

    def __init__(self, url: str, reason: str):
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason


def is_url(path: str) -> bool:
    """Whether `path` names an input by URL rather than a local path."""
    return _URL.match(path) is not None


def protocol(url: str) -> str:
    match = _URL.match(url)
    return match.group(1).lower() if match else ""


# Query parameters that carry a secret: a presigned URL's signature, a SAS token, a password.
_SECRET_PARAMETER = re.compile(r"[?&](?:[^=&]*(?:sig|signature|token|credential|secret|password|key)[^=&]*)=", re.IGNORECASE)


def _userinfo(url: str) -> bool:
    return "@" in url[len(protocol(url)) + 3 :].split("/", 1)[0]


def has_credentials(url: str) -> bool:
    """Whether the URL carries a secret: a user name or password in its authority
    (``scheme://user:secret@host``), or a signature or token among its query parameters."""
    return _userinfo(url) or _SECRET_PARAMETER.search(url) is not None


def redacted(url: str) -> str:
    """`url` with its user information and its query masked, for messages."""
    if not has_credentials(url):
        return url
    if "?" in url:
        url = url.split("?", 1)[0] + "?***"
    if not _userinfo(url):
        return url
    start = len(protocol(url)) + 3
    authority, _, rest = url[start:].partition("/")
    host = authority.rsplit("@", 1)[1]
    return f"{url[:start]}***@{host}" + (f"/{rest}" if rest or url[start:].count("/") else "")


def extra_for(url: str) -> str:
    return _EXTRAS.get(protocol(url), "fsspec")


def _filesystem(url: str) -> tuple[Any, str]:
    """(the fsspec filesystem for `url`, the path within it)."""
    if has_credentials(url):
        raise RemoteError(
            redacted(url),
            "credentials in a URL are refused; give them as the cloud SDK reads them "
            "(environment variables, a profile, an instance role)",
        )
    try:
        import fsspec
    except ImportError:
        raise RemoteError(url, f"reading URLs needs fsspec: pip install 'trajlint[{extra_for(url)}]'") from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError:
        raise RemoteError(
            url, f"reading {protocol(url)}:// URLs needs an extra: pip install 'trajlint[{extra_for(url)}]'"
        ) from None
    except ValueError as exc:
        if "Protocol not known" in str(exc):
            raise RemoteError(url, f"fsspec knows no {protocol(url)}:// file system") from None
        raise RemoteError(url, _reason(exc)) from None


def _reason(exc: BaseException) -> str:
    """One line saying why a store refused, without echoing anything the request carried."""
    if isinstance(exc, FileNotFoundError):
        return "no such object"
    if isinstance(exc, PermissionError):
        return "access denied (check the credentials the cloud SDK finds)"
    name = type(exc).__name__
    text = " ".join(str(exc).split()) or name
    if "InvalidAccessKeyId" in text or "SignatureDoesNotMatch" in text or "credentials" in text.lower():
        return f"access denied (check the credentials the cloud SDK finds): {text[:200]}"
    return f"cannot be read: {text[:200]}"


def expand(url: str, wanted: Callable[[str], bool]) -> list[str]:
    """The object URLs `url` names: itself when it is an object, the objects a glob matches, or the
    objects below a prefix whose keys are `wanted`; sorted. Raises `RemoteError`."""
    fs, path = _filesystem(url)
    try:
        if _GLOB_CHARS.intersection(path):
            matches = sorted(p for p, info in fs.glob(path, detail=True).items() if info.get("type") != "directory")
            if not matches:
                raise RemoteError(url, "glob matched no objects")
            return [_url_of(fs, url, path, p) for p in matches]
        info = fs.info(path)
        if info.get("type") == "directory":
            found = sorted(p for p in fs.find(path) if wanted(p))
            return [_url_of(fs, url.rstrip("/") + "/", path.rstrip("/") + "/", p) for p in found]
        return [url]
    except RemoteError:
        raise
    except Exception as exc:  # noqa: BLE001 - every store raises its own; each is one line
        raise RemoteError(url, _reason(exc)) from None


def _url_of(fs: Any, url: str, path: str, found: str) -> str:
    """The URL of `found`, an object below `url` (whose path in `fs` is `path`), spelled as the
    user spelled `url`: findings and baselines name it so."""
    url_base, path_base = _base(url), _base(path)
    if found.startswith(path_base):
        return url_base + found[len(path_base) :]
    return fs.unstrip_protocol(found)


def _base(text: str) -> str:
    """`text` up to the last "/" before its first glob character."""
    cut = min((i for i, c in enumerate(text) if c in _GLOB_CHARS), default=len(text))
    return text[: text.rfind("/", 0, cut) + 1]


def size(url: str) -> int | None:
    """The object's size in bytes, None when it cannot be told."""
    try:
        fs, path = _filesystem(url)
        return int(fs.size(path))
    except Exception:  # noqa: BLE001 - the read that follows reports why
        return None


# A read fetches byte ranges of this size: large enough that a request's latency is small beside
# its transfer, small enough that a shard's reader does not fetch far past its end.
READ_BLOCK_BYTES = 8 * 1024 * 1024
# Looking for a line end near an offset, or at a file's first lines, reads little.
PROBE_BLOCK_BYTES = 256 * 1024


def open_object(url: str, block_size: int = READ_BLOCK_BYTES) -> BinaryIO | str:
    """The object opened for reading (seekable: a read fetches byte ranges), or why it cannot be."""
    try:
        fs, path = _filesystem(url)
        return fs.open(path, "rb", block_size=block_size)
    except RemoteError as exc:
        return exc.reason
    except Exception as exc:  # noqa: BLE001
        return _reason(exc)

