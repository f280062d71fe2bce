"""The whole scale-out path with real parts: worker processes on a Redis frontier (tests/support/servers.py)
writing ONE PostgreSQL store (tests/support/pgserver.py), one worker killed -9 mid-crawl. The end state in
PostgreSQL (pages, blocks and chunks of each page) must equal a single-process SQLite crawl of the
same site, and no host may see two requests closer than --delay across the workers."""
from __future__ import annotations

from pathlib import Path

import pytest

from ..store.test_redis_frontier import (
    _cli,
    _requests,
    gap_violations,
    kill_when_working,
    multi_site,
    stored,
)
from ..support.pgserver import PASSWORD, fresh_db


def pg_stored(dsn: str) -> dict[str, tuple[int, int]]:
    """url -> (blocks, chunks) of every page in the PostgreSQL store."""
    import psycopg

    with psycopg.connect(dsn) as con:
        rows = con.execute("SELECT url, (SELECT count(*) FROM blocks WHERE page_id=p.id), "
                           "(SELECT count(*) FROM chunks WHERE page_id=p.id) FROM pages p").fetchall()
    return {str(u): (int(b), int(c)) for u, b, c in rows}


@pytest.mark.slow
def test_two_workers_one_postgres_store_kill_one(redis_server, pg_server, tmp_path: Path):
    delay = 0.1
    sites = multi_site(4, 25, latency=0.02)
    try:
        args = [sites[0].origin + "/p0.html", "--no-progress", "--tokenizer", "words", "--workers", "0",
                "--delay", str(delay)]
        p = _cli("crawl", *args, "--store", str(tmp_path / "single.db"))  # the reference: one plain process
        assert p.wait(timeout=120) == 0
        ref = stored(tmp_path / "single.db")
        assert len(ref) == 100
        for s in sites:
            s.hits.clear()
        dsn = fresh_db(pg_server)
        args += ["--frontier", redis_server.url(), "--lease-seconds", "2", "--store", dsn]
        a = _cli("crawl", *args, "--worker-id", "a", "--user-agent", "test-a")
        b = _cli("crawl", *args, "--worker-id", "b", "--user-agent", "test-b")
        r = redis_server.client
        kill_when_working(r, "a", a)
        out, err = b.communicate(timeout=180)
        assert b.returncode == 0, err[-3000:]
        assert PASSWORD not in out + err  # the DSN's password is never printed
        assert pg_stored(dsn) == ref  # same pages, same blocks and chunks per page, nothing twice
        refetched = int(r.hget("bc:stats", "refetched") or 0)
        dups = 0
        for origin, hits in _requests(sites).items():
            paths = [p for _, p, _ in hits if p != "/robots.txt"]
            dups += len(paths) - len(set(paths))
            handover, close = gap_violations(hits, delay)
            assert not close and not handover, (origin, close, handover)
        assert dups <= refetched  # only pages in flight on the dead worker were fetched again
    finally:
        for s in sites:
            s.stop()
