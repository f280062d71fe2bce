"""`crawl --index`: embed chunks while the crawl stores them, in a process of its own.

How: the crawl starts `python -m blockcrawl.index.live` beside itself. That process polls the store
read-only (as search does during a crawl) for the chunks stored since its last look, embeds them on
all CPUs but one (the crawl's event loop and parse workers keep a core) at normal priority, and keeps
the vectors in a side SQLite file of its own (the store has one writer, the crawl). When the crawl
has stored its last page it tells the indexer to stop (a stop file: it exits after the batch in
hand, or is terminated 1 s later), then runs build_index with an embedder that takes the side
file's vectors (PrecomputedEmbedder) and embeds only what the indexer had not reached, on every
core: the crawl ends with the site searchable, and the model ran in parallel with the network
instead of after it.

Why not nice 10 (the first version): on a shared machine (load 12-17 from other jobs) a niced
process gets almost no CPU. 150 docs pages at --delay 0.25: nice 10 with 2 threads embedded 165 of
1,879 chunks during a 52 s crawl (3.42x the crawl alone), normal priority with 1 thread 528 (2.53x),
and the crawl's pages/s was the same (2.9 and 3.4 against 3.1-3.3 alone), the gaps at the server
still >= the delay: politeness is timed in the crawl's loop, and a busy CPU can only delay a
request, never send it early. A first version also let the niced indexer finish the backlog
itself: at load 16 that took 3x as long as a plain `index`.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..store.sidevec import SideVectors
from .embed import Embedder
from .schema import vector_key

NICE = 0  # the indexer's niceness (see above: 10 starved it on a shared machine)
KEEP_CPUS = 1  # CPUs left to the crawl: the indexer embeds on the others (at least one thread)
POLL_SECONDS = 1.0  # between looks at the store when nothing new was found
BATCH = 16  # texts embedded between two writes of the side file (and two stop checks): ~0.3 s on 2 idle cores
STOP_GRACE = 1.0  # seconds the crawl waits for the batch in hand before it terminates the indexer


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
        self.stats_file = workdir / "stats.json"
        env = dict(os.environ)
        if precision:
            env["BLOCKCRAWL_PRECISION"] = precision
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "blockcrawl.index.live", "--store", store, "--side", str(self.side),
             "--stop-file", str(self.stop_file), "--stats", str(self.stats_file)], env=env, stdin=subprocess.DEVNULL)

    def finish(self, grace: float = STOP_GRACE) -> int:
        """Stop the indexer: it exits after the batch in hand if that takes under `grace` s, else it
        is terminated (the batch's texts are embedded again by the final build, at full priority,
        sooner than the indexer's fewer threads would finish them); its exit code."""
        self.stop_file.touch()
        try:
            return self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.terminate()  # SIGTERM: run_indexer still writes its stats
        try:
            return self.proc.wait(5.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def stats(self) -> dict[str, float]:
        """What the indexer did (run_indexer's counters), {} if it wrote none (killed)."""
        try:
            got = json.loads(self.stats_file.read_text())
        except (OSError, ValueError):
            return {}
        return got if isinstance(got, dict) else {}

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_indexer(store: str, side: Path, stop_file: Path, stats_file: Path | None = None) -> int:
    """The indexer's loop: new chunks of the store -> vectors in the side file, until stop_file
    exists (checked between batches). Each look reads only the chunks stored since the last one
    (chunks_to_embed(after=...)): the first version read every chunk without a vector on every
    look, ~2,000 texts a second at the end of a 60-page crawl, quadratic in the crawl's size.
    stats_file: where it writes what it did (LiveStats as JSON) when it stops."""
    t0 = time.perf_counter()
    signal.signal(signal.SIGTERM, _terminated)
    from ..errors import BlockcrawlError
    from ..limits import available_cpus
    from ..store import open_store
    from .embed import default_embedder

    emb = default_embedder()
    emb.workers = max(1, available_cpus() - KEEP_CPUS)
    # the model is loaded first, at the crawl's priority, were NICE raised: ~0.3 s of CPU on an idle
    # machine, but niced on a loaded one (load 14) the imports and the ONNX session take 25 s, the
    # whole of a 500-page crawl, before the first chunk is embedded
    emb.embed(["warm up"])
    load_s = time.perf_counter() - t0
    if NICE:
        try:
            os.nice(NICE)
        except OSError:
            pass
    out = SideVectors(side)
    done = out.keys()
    known: set[bytes] | None = None  # vectors the store had before this crawl
    last_id = 0  # the highest chunk id read so far
    st: Any = None
    stats = {"looks": 0, "read": 0, "embedded": 0, "read_s": 0.0, "embed_s": 0.0, "load_s": load_s}
    try:
        while not stop_file.exists():
            t = time.perf_counter()
            try:
                if st is None:
                    st = open_store(store, readonly=True)
                if known is None:
                    try:
                        known = st.vector_keys()
                    except BlockcrawlError:
                        known = set()
                todo = st.chunks_to_embed(after=last_id)
            except BlockcrawlError:
                todo = []  # the store not there yet, or busy: look again with a new reader
                if st is not None:
                    st.close()
                    st = None
            stats["looks"] += 1
            stats["read"] += len(todo)
            stats["read_s"] += time.perf_counter() - t
            new: dict[bytes, str] = {}
            for cid, text in todo:
                last_id = max(last_id, cid)
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
                t = time.perf_counter()
                vecs = emb.embed([new[k] for k in part])
                out.put(part, vecs)
                done.update(part)
                stats["embedded"] += len(part)
                stats["embed_s"] += time.perf_counter() - t
    finally:
        if st is not None:
            st.close()
        out.close()
        if stats_file is not None:
            stats["wall_s"] = time.perf_counter() - t0
            stats_file.write_text(json.dumps(stats))
    return 0


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(0)  # between two bytecodes: a side-file commit in progress completes first


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="the live indexer `crawl --index` starts (not for direct use)")
    ap.add_argument("--store", required=True)
    ap.add_argument("--side", required=True, type=Path)
    ap.add_argument("--stop-file", required=True, type=Path)
    ap.add_argument("--stats", type=Path, default=None)
    a = ap.parse_args(argv)
    try:
        return run_indexer(a.store, a.side, a.stop_file, a.stats)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the crawl decides
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
