"""A real, throw-away PostgreSQL server for the PostgreSQL store tests (a helper module, not a test file).

Debian's server binaries (/usr/lib/postgresql/VERSION/bin: initdb, pg_ctl, postgres) in a temporary
cluster on 127.0.0.1 and a free port, its socket in the cluster's folder, fsync off (nothing of it
has to survive). PostgreSQL refuses to run as root, and CI runs as root: then the cluster belongs to
the `postgres` user the Debian package creates, and every server command runs through runuser.
Skips the tests (with the reason) when the binaries, the user or psycopg are missing.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from .require import need_module, skip_or_fail
from .servers import free_port

DB = "blockcrawl_test"
# TCP connections need this password (scram-sha-256), so the tests see a real password in the URL
# (never printed) and a wrong one refused; the server's own commands come through its socket (trust)
PASSWORD = "pg-test-pw-91"


def _bindir() -> Path | None:
    """The newest installed server's bin folder (the one with initdb)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]) if
                   Path(p).parts[-3].isdigit() else 0)
    return Path(found[-1]).parent if found else None


class PgServer:
    """One cluster: start() once, dsn() for a database, stop() at the end."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.user: str | None = None  # run server commands as this user (we are root)
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                skip_or_fail("running as root and there is no 'postgres' user to run PostgreSQL as")
            self.user = "postgres"
        # under /tmp, mode 0755: the postgres user must be able to reach it (pytest's tmp_path is 0700)
        self.dir = Path(tempfile.mkdtemp(prefix="blockcrawl-pg-", dir="/tmp"))
        os.chmod(self.dir, 0o755)
        self.data = self.dir / "data"
        self.port = free_port()
        self.pg_user = self.user or pwd.getpwuid(os.geteuid()).pw_name  # initdb's superuser = the OS user
        self.log = self.dir / "server.log"

    def _run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = list(cmd)
        if self.user is not None:
            argv = ["runuser", "-u", self.user, "--", *argv]
        return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=120)

    def start(self) -> None:
        if self.user is not None:
            shutil.chown(self.dir, self.user, self.user)
        pwfile = self.dir / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.user is not None:
            shutil.chown(pwfile, self.user, self.user)
        try:
            self._run(str(self.bindir / "initdb"), "-D", str(self.data), "--auth-local=trust",
                      "--auth-host=scram-sha-256", "--pwfile", str(pwfile), "-U", self.pg_user,
                      "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
        except subprocess.CalledProcessError as e:
            skip_or_fail(f"initdb failed: {(e.stderr or e.stdout).strip()[-300:]}")
        opts = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.dir} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=60")
        r = self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", opts,
                      "-w", "-t", "60", "start", check=False)
        if r.returncode != 0:
            log = self.log.read_text(errors="replace")[-500:] if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {r.stderr.strip()} {log}")
        self.create_db(DB)

    def create_db(self, name: str) -> str:
        self._run(str(self.bindir / "createdb"), "-h", str(self.dir), "-p", str(self.port), "-U", self.pg_user, name)
        return self.dsn(name)

    def dsn(self, db: str = DB) -> str:
        return f"postgresql://{self.pg_user}:{PASSWORD}@127.0.0.1:{self.port}/{db}"

    def stop(self) -> None:
        try:
            if self.data.exists():
                self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "stop", "-m", "immediate", check=False)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def pg_server_running() -> Iterator[PgServer]:
    """A cluster for the whole session (the `pg_server` fixture of tests/conftest.py)."""
    need_module("psycopg", "the PostgreSQL store needs psycopg: pip install 'blockcrawl[postgres]'")
    bindir = _bindir()
    if bindir is None:
        skip_or_fail("no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb; apt-get install postgresql)")
    server = PgServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


_counter = [0]


def fresh_db(server: PgServer) -> str:
    """A new empty database on the server: its DSN."""
    _counter[0] += 1
    return server.create_db(f"t{os.getpid()}_{_counter[0]}_{int(time.time() * 1000) % 100000}")
