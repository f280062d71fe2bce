"""A host's lease lost while Redis was away (the outage outlasted the lease term: a real
redis-server saved, stopped, and started again after the lease expired): the items this worker
had taken from the host's queue are dropped here, and must come back to whoever claims the host
next - this worker again, or another one - with none lost. The items not finished stay in the
host's todo hash in Redis until a done mark removes them; a claim (`take`) hands out all of them.
Fault injected at the exact point: between two claims, with one URL in flight, one finished (its
done mark sent) and the rest queued here."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from blockcrawl.crawl.frontier import DONE, IN_FLIGHT, Item
from blockcrawl.store.redis_frontier import RedisFrontier
from blockcrawl.store.redis_layout import keys

from ..support.servers import RedisServer, redis_server_in

LEASE = 0.5  # seconds; the outage below lasts longer


class NoLog:
    def log(self, *a: object, **kw: object) -> None:
        pass


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    yield from redis_server_in(tmp_path)


def frontier(server: RedisServer, worker: str) -> RedisFrontier:
    return RedisFrontier(server.url(), NoLog(), worker_id=worker, lease_seconds=LEASE)  # type: ignore[arg-type]


def _working(f: RedisFrontier, h: str, n: int) -> list[str]:
    """f holds h with n URLs: p0 finished (done mark sent), p1 in flight, the rest queued here."""
    f.share([Item(f"{h}/p{i}.html", h, 1) for i in range(n)])
    got, _ = f.claim()
    assert f.owned == {h} and len(got) == n
    f.mark(f"{h}/p0.html", IN_FLIGHT)
    f.mark(f"{h}/p0.html", DONE, 200)
    f.flush()
    f.mark(f"{h}/p1.html", IN_FLIGHT)
    return [f"{h}/p{i}.html" for i in range(1, n)]  # not finished


def _away_past_the_lease(server: RedisServer) -> None:
    server.restart(down=LEASE + 0.5)
    assert server.client.exists(keys("x")["lease"]) == 0  # (a started server answers)


def test_lease_lost_while_redis_was_away_the_same_worker_gets_its_items_back(redis_server):
    h = "http://127.0.0.1:21"
    f = frontier(redis_server, "w")
    left = _working(f, h, 6)
    _away_past_the_lease(redis_server)
    assert redis_server.client.get(keys(h)["lease"]) is None  # expired while Redis was away
    got, lost = f.claim()  # the tick finds the lease gone; the same claim takes the host again
    assert h in lost and f.owned == {h}
    assert sorted(it.url for it in got) == sorted(left)  # every URL not finished, p1 (in flight) too
    assert f.refetched == 1
    for url in left:
        f.mark(url, DONE, 200)
    f.flush()
    assert f.finished() and redis_server.client.hlen(keys(h)["todo"]) == 0


def test_lease_lost_while_redis_was_away_another_worker_gets_the_items(redis_server):
    h = "http://127.0.0.1:22"
    a, b = frontier(redis_server, "a"), frontier(redis_server, "b")
    left = _working(a, h, 6)
    _away_past_the_lease(redis_server)
    got_b, _ = b.claim()  # b claims first after the outage
    assert b.owned == {h} and sorted(it.url for it in got_b) == sorted(left)
    got_a, lost_a = a.claim()
    assert lost_a == [h] and got_a == [] and not a.owned
    assert not a.holds(Item(f"{h}/p2.html", h, 1))
    # a's fetch in flight ends (stored in a's store; its done mark goes out): b has fetched it too
    a.mark(f"{h}/p1.html", DONE, 200)
    a.flush()
    for it in got_b:
        b.mark(it.url, DONE, 200)
    b.flush()
    assert b.finished()


def test_a_host_found_again_after_an_outage_is_claimed_with_its_whole_queue(redis_server):
    """The lease expired during the outage and no claim came between: links found for the host
    afterwards (shared while nobody holds it) join its queue, and the next claim hands out the
    old and the new URLs together."""
    h = "http://127.0.0.1:23"
    f = frontier(redis_server, "w")
    left = _working(f, h, 4)
    _away_past_the_lease(redis_server)
    assert f.share([Item(f"{h}/new.html", h, 2)]) == []  # nobody holds h now: queued in Redis
    got, lost = f.claim()
    assert lost == [h] and f.owned == {h}
    assert sorted(it.url for it in got) == sorted([*left, f"{h}/new.html"])


def test_a_crawl_whose_lease_expires_while_redis_is_away_loses_no_page(redis_server, tmp_path, monkeypatch, caplog):
    """The whole engine: two hosts of 20 pages, one worker with a 1 s lease; once it has stored 5
    pages, Redis is restarted (saved, away 1.5 s) right before a claim, so that claim finds the
    leases gone and takes the hosts again. Every page is stored; the only cost allowed is a URL in
    flight at the loss fetched twice."""
    import logging

    from blockcrawl.crawl import CrawlConfig, crawl
    from blockcrawl.store import Store

    from .test_redis_frontier import SPEC, multi_site, stored

    sites = multi_site(2, 20)
    real_claim = RedisFrontier.claim
    fired: list[int] = []

    def claim(self: RedisFrontier) -> tuple[list[Item], list[str]]:
        if not fired and self.pages >= 5 and self.owned:
            fired.append(self.pages)
            redis_server.restart(down=1.5)
        return real_claim(self)

    monkeypatch.setattr(RedisFrontier, "claim", claim)
    caplog.set_level(logging.WARNING, logger="blockcrawl.crawl")
    try:
        with Store(tmp_path / "w.db") as store:
            cfg = CrawlConfig(seeds=[sites[0].origin + "/p0.html"], progress=False, backoff=0.05, workers=0,
                              frontier=redis_server.url(), worker_id="w", lease_seconds=1.0, max_time=90)
            stats = crawl(store, cfg, SPEC)
    finally:
        for s in sites:
            s.stop()
    assert fired, "the crawl ended before the fault was injected"
    assert "lost (another worker holds it now)" in caplog.text  # the race was exercised
    assert stats.errors == 0
    assert set(stored(tmp_path / "w.db")) == {f"{s.origin}/p{j}.html" for s in sites for j in range(20)}
