"""`crawl --index`: embed chunks while the crawl stores them, in a process of its own (issue #24.3).

How: the crawl starts `python -m blockcrawl.index.live` beside itself. That process polls the store
read-only (as search does during a crawl) for chunks without a vector, embeds the new ones at nice
10 (the crawler's event loop and parse workers go first: politeness is timed there) and keeps the
vectors in a side SQLite file of its own (the store has one writer, the crawl). When the crawl has
stored its last page it tells the indexer to stop (a stop file: it exits after the batch in
hand), then runs build_index with an embedder that takes the side file's vectors
(PrecomputedEmbedder) and embeds only what the indexer had not reached, at normal priority on
every core: the crawl ends with the site searchable, and the model ran in parallel with the
network instead of after it. (A first version let the niced indexer finish the backlog itself: on a
machine at load 16 that took 3x as long as a plain `index`, nice 10 getting a tenth of a core.)
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ..store.sidevec import SideVectors
from .embed import Embedder
from .schema import vector_key

POLL_SECONDS = 1.0  # between looks at the store when nothing new was found
BATCH = 64  # texts embedded between two writes of the side file (and two stop checks)


class PrecomputedEmbedder:
    """The inner embedder, answering from the side file first: texts the live indexer embedded
    cost a look-up, the rest go to the model."""

    def __init__(self, side: Path, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.side = SideVectors(side)
        self.hits = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing: list[int] = []
        for i, t in enumerate(texts):
            blob = self.side.get(vector_key(self.name, t))
            if blob is not None and len(blob) == 4 * self.dim:
                out[i] = np.frombuffer(blob, dtype=np.float32)
                self.hits += 1
            else:
                missing.append(i)
        if missing:
            out[missing] = self.inner.embed([texts[i] for i in missing])
        return out

    def close(self) -> None:
        self.side.close()


class LiveIndexer:
    """The crawl command's handle on the indexer process."""

    def __init__(self, store: str, workdir: Path, precision: str | None = None) -> None:
        self.side = workdir / "live-vectors.db"
        self.stop_file = workdir / "stop"
        env = dict(os.environ)
        if precision:
            env["BLOCKCRAWL_PRECISION"] = precision
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "blockcrawl.index.live", "--store", store, "--side", str(self.side),
             "--stop-file", str(self.stop_file)], env=env, stdin=subprocess.DEVNULL)

    def finish(self, timeout: float | None = 30.0) -> int:
        """Stop the indexer (after the batch in hand; killed after timeout); its exit code."""
        self.stop_file.touch()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_indexer(store: str, side: Path, stop_file: Path) -> int:
    """The indexer's loop: new chunks of the store -> vectors in the side file, until stop_file
    exists (checked between batches)."""
    try:
        os.nice(10)
    except OSError:
        pass
    from ..errors import BlockcrawlError
    from ..store import open_store
    from .embed import default_embedder

    emb = default_embedder()
    out = SideVectors(side)
    done = out.keys()
    known: set[bytes] | None = None  # vectors the store had before this crawl
    while not stop_file.exists():
        try:
            with open_store(store, readonly=True) as st:
                if known is None:
                    try:
                        known = st.vector_keys()
                    except BlockcrawlError:
                        known = set()
                todo = st.chunks_to_embed()
        except BlockcrawlError:
            todo = []  # the store not there yet, or busy: look again
        new: dict[bytes, str] = {}
        for _cid, text in todo:
            key = vector_key(emb.name, text)
            if key not in done and key not in (known or ()):
                new.setdefault(key, text)
        if not new:
            time.sleep(POLL_SECONDS)
            continue
        keys = list(new)
        for start in range(0, len(keys), BATCH):
            if stop_file.exists():
                break
            part = keys[start:start + BATCH]
            out.put(part, emb.embed([new[k] for k in part]))
            done.update(part)
    out.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="the live indexer `crawl --index` starts (not for direct use)")
    ap.add_argument("--store", required=True)
    ap.add_argument("--side", required=True, type=Path)
    ap.add_argument("--stop-file", required=True, type=Path)
    a = ap.parse_args(argv)
    try:
        return run_indexer(a.store, a.side, a.stop_file)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the crawl decides
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
