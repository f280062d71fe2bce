"""Which `blockcrawl serve` is running for a store, so that `blockcrawl search` can ask it instead of
loading the model and the vectors itself (a warm serve answers in milliseconds; a cold
search process pays ~0.3 s of model load and the vectors' first read on every call).

How a search finds the serve: `blockcrawl serve` writes a small JSON record (pid, loopback port, a
random token) to a per-user folder, named by a hash of the store's location (the real path of an
SQLite file, or the postgresql:// URL: no password is written, only its hash), and removes it on
exit. A search reads the record and uses it only if all of these hold, else it searches locally:
- the folder is the user's own and not writable by others (a record planted by another user on a
  shared /tmp is never trusted);
- the process named by pid is alive (a serve killed with SIGKILL leaves its file: stale);
- the store is the same file (device and inode) as when the serve started;
- the host is a loopback address (nothing leaves the machine);
- the server answers with the record's token in the X-Blockcrawl-Serve header (a port reused by
  another program after a crash is not taken for the serve).
Any failure to connect or a non-200 answer other than a 400 (bad input, reported as search would)
falls back to a local search too. The decisions are pure functions (usable, outcome); reading the
folder and the HTTP call are the only effects.
"""
from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

TOKEN_HEADER = "X-Blockcrawl-Serve"
CONNECT_TIMEOUT = 0.5  # s: a loopback connect takes microseconds; past this the serve is hung
ANSWER_TIMEOUT = 30.0  # s for the search itself (a serve under load queues it)
LOOPBACK = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True, slots=True)
class ServeRecord:
    pid: int
    host: str  # where a search connects: a loopback address
    port: int
    token: str  # random per serve run; the server sends it back in TOKEN_HEADER
    file: str = ""  # the SQLite file's device:inode when serve started ("" for a URL)


def file_id(location: str | os.PathLike[str]) -> str:
    """device:inode of a store file: a store deleted and crawled anew under the same name while a
    serve runs is another file (the serve still reads the old, unlinked one): not its store."""
    loc = str(location)
    if loc.startswith(("postgres://", "postgresql://")):
        return ""
    from ..errors import StoreError
    from ..store import sqlite_path

    try:
        st = os.stat(sqlite_path(loc))  # sqlite:///site.db is site.db
    except (OSError, StoreError):
        return "missing"
    return f"{st.st_dev}:{st.st_ino}"


def store_key(location: str | os.PathLike[str]) -> str:
    """The record's name for a store: a hash of its real path (or URL), so that `site.db` and
    `./x/../site.db` find the same serve."""
    loc = str(location)
    if not loc.startswith(("postgres://", "postgresql://")):
        from ..errors import StoreError
        from ..store import sqlite_path

        try:
            loc = str(sqlite_path(loc))
        except StoreError:
            pass
        loc = os.path.realpath(loc)
    return hashlib.sha256(loc.encode()).hexdigest()[:32]


def records_dir(create: bool = False) -> Path | None:
    """The per-user folder of records ($XDG_RUNTIME_DIR/blockcrawl, else <tmp>/blockcrawl-<uid>),
    made 0700 if missing and create (serve; a search only reads); None when it is missing or not
    safely ours (another owner, writable by others)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    base = Path(runtime) / "blockcrawl" if runtime and os.path.isdir(runtime) else \
        Path(tempfile.gettempdir()) / f"blockcrawl-{uid}"
    try:
        if create:
            base.mkdir(mode=0o700, exist_ok=True)
        st = base.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o022:
        return None
    return base


def connect_host(listen_host: str) -> str | None:
    """Where a local search reaches a serve listening on listen_host; None: not on loopback."""
    if listen_host in ("0.0.0.0", "127.0.0.1", "localhost") or listen_host.startswith("127."):
        return "127.0.0.1"
    if listen_host in ("::", "::1"):
        return "::1"
    return None


def new_token() -> str:
    return secrets.token_hex(16)


def publish(location: str, listen_host: str, port: int, token: str) -> Path | None:
    """Write this process's record for the store (serve, once it listens); its path, or None when
    there is nowhere safe to write it or the serve is not reachable on loopback."""
    host, folder = connect_host(listen_host), records_dir(create=True)
    if host is None or folder is None:
        return None
    rec = ServeRecord(os.getpid(), host, port, token, file_id(location))
    path = folder / f"{store_key(location)}.json"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({"pid": rec.pid, "host": rec.host, "port": rec.port, "token": rec.token,
                                   "file": rec.file}))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)  # atomic: a search never reads half a record
    except OSError:
        return None
    return path


def token_of(path: Path) -> str | None:
    rec = _read(path)
    return rec.token if rec is not None else None


def withdraw(path: Path, token: str | None) -> None:
    """Remove the record at path if it is still this serve's (a newer serve may have replaced it)."""
    if token is not None and token_of(path) == token:
        with contextlib.suppress(OSError):
            path.unlink()


def _read(path: Path) -> ServeRecord | None:
    try:
        d = json.loads(path.read_text())
        return ServeRecord(int(d["pid"]), str(d["host"]), int(d["port"]), str(d["token"]), str(d.get("file", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's: usable() still wants the token back
    except OSError:
        return False
    return True


def usable(rec: ServeRecord | None, alive: bool, file: str = "") -> bool:
    """Pure: whether a record may be tried at all (file: the store's file_id now)."""
    return (rec is not None and alive and rec.host in LOOPBACK and 0 < rec.port < 65536 and rec.pid > 0
            and rec.file == file)


def find(location: str) -> ServeRecord | None:
    """The running serve's record for the store, or None (no record, stale, not ours)."""
    folder = records_dir()
    if folder is None:
        return None
    rec = _read(folder / f"{store_key(location)}.json")
    return rec if rec is not None and usable(rec, pid_alive(rec.pid), file_id(location)) else None


@dataclass(frozen=True, slots=True)
class Answer:
    """What the serve said: hits (status 200), or an error message to report (status 400)."""

    status: int
    hits: list[dict[str, Any]]
    error: str = ""


def outcome(status: int, token_sent: str | None, token: str, body: bytes) -> Answer | None:
    """Pure: the serve's HTTP answer -> an Answer to use, or None (search locally instead)."""
    if token_sent != token or status not in (200, 400):
        return None
    try:
        d = json.loads(body)
    except ValueError:
        return None
    if not isinstance(d, dict):
        return None
    if status == 400:
        return Answer(400, [], str(d.get("error", "bad request")))
    hits = d.get("hits")
    return Answer(200, hits) if isinstance(hits, list) else None


def ask(rec: ServeRecord, query: str, params: dict[str, Any]) -> Answer | None:
    """GET /api/search from the serve; None on any failure to get a usable answer."""
    qs = urlencode({"q": query, **{k: v for k, v in params.items() if v is not None}})
    conn = http.client.HTTPConnection(rec.host, rec.port, timeout=CONNECT_TIMEOUT)
    try:
        conn.connect()
        if conn.sock is not None:
            conn.sock.settimeout(ANSWER_TIMEOUT)
        conn.request("GET", f"/api/search?{qs}", headers={"Connection": "close"})
        resp = conn.getresponse()
        return outcome(resp.status, resp.getheader(TOKEN_HEADER), rec.token, resp.read())
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()
