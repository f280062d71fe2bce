"""One writer per store: an exclusive flock on a sidecar file (STORE.lock), held while the writer lives.

Why not SQLite's own locks: they last one transaction, and a crawl commits every second or so, so a
second crawl slipped in between and reset the first one's frontier (109 of 199 pages were never
fetched after --resume). `PRAGMA locking_mode=EXCLUSIVE` would last the connection, but in WAL
mode it also shuts out readers, and search/export must keep working during a crawl.

Why flock on a sidecar file: the kernel drops it when the process dies, kill -9 included, so there
is no stale lock to clean up and no pid to check; it is taken before the database file exists (a crawl
creating a store); and it never touches the file SQLite locks itself (where flock is emulated by
fcntl locks, on NFS for one, a flock on the database would collide with SQLite's own).
The lock file is left in place on close: unlinking it would let a process that opened the old file
and one that creates a new one both hold "the" lock.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import StoreError


def lock_path(store: Path) -> Path:
    return store.with_name(store.name + ".lock")


class WriterLock:
    """Held from construction to release(); StoreError (one line) if another writer holds it."""

    def __init__(self, store: Path, what: str) -> None:
        import fcntl

        self.path = lock_path(store)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except IsADirectoryError:
            raise StoreError(f"cannot lock {store}: {self.path} is a folder, where the store's lock file "
                             "belongs (move the folder away)") from None
        except OSError as e:
            raise StoreError(f"cannot write {store}: {e.strerror or e} (a read-only store can be searched "
                             "and exported, not crawled or indexed)") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            finally:
                os.close(fd)
            raise StoreError(f"{store} is being written by {holder}: one crawl or index at a time "
                             "(search and export still work)") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{what} (pid {os.getpid()})\n".encode(), 0)
        self.fd: int | None = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the only descriptor drops the flock
            self.fd = None
