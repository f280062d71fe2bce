"""The crawl engine's side of page info and site learning, on the in-memory fetcher and a fake
clock: page info stored with each page, revised pages stored over their first version, learned
models saved (versioned per site) and handed back to the pipeline by --resume, --only-articles.

The analyser is a double with the pipeline's contract (PageOut.info / .revised / .model): it
"learns" a site after `learn` pages, revises the pages seen before, relearns after `relearn`
more, and treats URLs with "odd" in them as pages the model does not fit (cluster -1)."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Self

from blockcrawl.crawl import CrawlConfig, Crawler
from blockcrawl.crawl.analysis.process import PageOut
from blockcrawl.crawl.engine.clock import FakeClock
from blockcrawl.crawl.net.memfetch import MemoryFetcher, Response
from blockcrawl.pipeline import PipelineConfig
from blockcrawl.records import Block, Chunk, PageInfo, PageMeta
from blockcrawl.store import Store

A = "http://a.test"
_HREF = re.compile(rb'href="([^"]*)"')
_TEXT = re.compile(rb"<p>([^<]*)</p>")


def page(text: str, *links: str) -> str:
    return "<html><body><p>" + text + "</p>" + "".join(f'<a href="{u}">x</a>' for u in links) + "</body></html>"


def model_json(site: str, n: int, version_hint: int, **extra: object) -> str:
    return json.dumps({"format": 1, "site": site, "clusters": [
        {"id": 0, "pages": n, "patterns": ["/p*.html"], "hint": version_hint}], **extra})


class LearningAnalyzer:
    """Analyzer protocol in the loop's thread, with the pipeline's site-learning contract."""

    def __init__(self, learn: int = 3, relearn: int | None = None, counts: dict[str, int] | None = None) -> None:
        self.learn, self.relearn, self.counts = learn, relearn, counts
        self.seen: dict[str, list[tuple[str, str]]] = {}  # site -> (url, text) in order
        self.models: dict[str, str] = {}
        self.since: dict[str, int] = {}  # pages analysed since the site's model was learned
        self.loaded: list[tuple[str, str, int]] = []  # (site, model, pages analysed before)
        self.learned = 0
        self.finished: list[tuple[str, dict[str, int]]] = []  # (site, pages seen per site then)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    async def prime(self, site: str, pairs: list[tuple[str, str]]) -> None:
        pass

    async def load_model(self, site: str, model: str) -> bool:
        self.loaded.append((site, model, len(self.seen.get(site, []))))
        self.models[site] = model
        self.since[site] = 0
        return True

    @staticmethod
    def out(url: str, text: str, cluster: int, prefix: str = "") -> PageOut:
        body = prefix + text
        h = hashlib.blake2b(body.encode(), digest_size=8).hexdigest()
        block = Block(body, body, (), "html/body/p", 0, url, h)
        chunk = Chunk(body, url, (), 0, 0, h, len(body.split()))
        kind = "article" if "art" in url else "listing"
        info = PageInfo(text=body, kind=kind, kind_score=0.9 if kind == "article" else 0.1,
                        summary=body[:10], meta=PageMeta(title=text, language="en"), cluster=cluster)
        return PageOut("t", hashlib.blake2b(body.encode(), digest_size=16).hexdigest(), url, [], [block],
                       [chunk], markdown=body, info=info)

    async def analyse(self, site: str, body: bytes, url: str, content_type: str | None, links: bool,
                      extract: bool | None = None) -> PageOut:
        m = _TEXT.search(body)
        text = m.group(1).decode() if m else ""
        seen = self.seen.setdefault(site, [])
        seen.append((url, text))
        learn_now = (site not in self.models and len(seen) >= self.learn) or (
            self.relearn is not None and site in self.models and self.since[site] + 1 >= self.relearn)
        if learn_now:
            self.learned += 1
            extra = {"pages": self.counts["pages"], "fallbacks": self.counts["fallbacks"]} if self.counts else {}
            self.models[site] = model_json(site, len(seen), self.learned, **extra)
            self.since[site] = 0
        elif site in self.models:
            self.since[site] += 1
        has_model = site in self.models
        cluster = -1 if not has_model or "odd" in url else 0
        res = self.out(url, text, cluster, "model: " if has_model else "")
        res.hrefs = [h.decode() for h in _HREF.findall(body)] if links else []
        if learn_now:
            res.model = self.models[site]
            res.revised = []
            for u, t in seen[:-1]:
                r = self.out(u, t, -1 if "odd" in u else 0, "revised: ")
                r.url = u
                res.revised.append(r)
        return res

    async def finish(self, site: str) -> PageOut | None:
        """The pipeline's SitePipeline.finish: a site not yet learned with >= 2 pages learns now
        and every page seen is revised."""
        seen = self.seen.get(site, [])
        self.finished.append((site, {s: len(v) for s, v in self.seen.items()}))
        if site in self.models or len(seen) < 2:
            return None
        self.learned += 1
        self.models[site] = model_json(site, len(seen), self.learned)
        self.since[site] = 0
        res = PageOut("", "", "", [], model=self.models[site])
        for u, t in seen:
            r = self.out(u, t, -1 if "odd" in u else 0, "revised: ")
            r.url = u
            res.revised.append(r)
        return res


def site(n: int, odd: tuple[int, ...] = ()) -> dict:
    names = [f"/p{i}{'odd' if i in odd else ''}{'art' if i % 2 else ''}.html" for i in range(n)]
    routes: dict = {A + "/": Response(page("home", *names))}
    for name in names:
        routes[A + name] = Response(page("text of " + name))
    return routes


def run(tmp_path: Path, routes: dict, analyzer: LearningAnalyzer, spec: PipelineConfig | None = None,
        **kw) -> tuple[Store, Crawler]:
    kw.setdefault("progress", False)
    kw.setdefault("sitemaps", False)
    kw.setdefault("per_host", 1)
    kw.setdefault("concurrency", 1)
    clock = FakeClock()
    store = Store(tmp_path / "s.db")
    seeds = kw.pop("seeds", [A + "/"])
    crawler = Crawler(store, CrawlConfig(seeds=seeds, **kw), fetcher=MemoryFetcher(routes, clock), clock=clock,
                      analyzer=analyzer, listeners=[], spec=spec)
    clock.run(crawler.run())
    store.commit()
    return store, crawler


def pages(store: Store) -> dict[str, dict]:
    return {str(r["url"]): r for r in store.records("pages")}


def test_revised_pages_replace_their_first_version_and_the_model_is_saved(tmp_path):
    an = LearningAnalyzer(learn=3)
    store, crawler = run(tmp_path, site(6, odd=(4,)), an)
    recs = pages(store)
    assert len(recs) == 7 and crawler.stats.models == 1 and crawler.stats.revised == 2
    order = [url for url, _ in an.seen[A]]
    first, learned_on, after = order[:2], order[2], order[3:]
    for url in first:  # stored again by the model: content, info replaced; the fetch's columns kept
        r = recs[url]
        assert r["text"].startswith("revised: ") and r["cluster"] == 0 and r["n_blocks"] == r["n_chunks"] == 1
        assert r["status"] == 200 and r["title"] == "t" and r["final_url"] == url
        blocks = [b["text"] for b in store.records("blocks") if b["url"] == url]
        assert blocks == [r["text"]]  # the first version's block is gone
    assert recs[learned_on]["text"].startswith("model: ")
    assert {u: recs[u]["cluster"] for u in after} == {u: -1 if "odd" in u else 0 for u in after}
    (row,) = store.site_models()
    assert row["site"] == A and row["version"] == 1 and row["model"] == an.models[A]
    # the engine counted: 2 revised + the learning page + 4 later pages; the "odd" one fell back
    assert row["pages"] == 7 and row["fallbacks"] == 1
    assert isinstance(row["learned_at"], float)
    # page info stored with every page: kind, summary, meta as a nested object
    art = next(r for u, r in recs.items() if "art" in u)
    assert art["kind"] == "article" and art["kind_score"] == 0.9 and art["meta"]["language"] == "en"
    store.close()


def test_relearning_bumps_the_version_and_model_counts_come_from_the_json(tmp_path):
    an = LearningAnalyzer(learn=2, relearn=3, counts={"pages": 40, "fallbacks": 5})
    store, crawler = run(tmp_path, site(6), an)
    (row,) = store.site_models()
    assert crawler.stats.models == an.learned == 2  # of 7 pages: learned on the 2nd, again on the 5th
    assert row["version"] == an.learned and row["model"] == an.models[A]
    # the JSON's counts at learning, and the pages after it counted by the engine
    pages_after = len(an.seen[A]) - 2 - 3 * (an.learned - 1)
    assert row["pages"] == 40 + pages_after and row["fallbacks"] == 5
    store.close()


def test_resume_hands_the_stored_model_to_the_pipeline_before_the_sites_first_page(tmp_path):
    routes = site(8)
    an = LearningAnalyzer(learn=3)
    store, crawler = run(tmp_path, routes, an, max_pages=5)
    assert crawler.stats.models == 1
    (before,) = store.site_models()
    store.close()
    an2 = LearningAnalyzer(learn=3)
    store, crawler = run(tmp_path, routes, an2, resume=True)
    assert an2.loaded == [(A, before["model"], 0)]  # before any page of the site was analysed
    assert an2.learned == 0 and crawler.stats.models == 0
    (after,) = store.site_models()
    assert after["version"] == 1 and after["learned_at"] == before["learned_at"]
    assert after["pages"] == before["pages"] + len(an2.seen[A]) > before["pages"]
    assert all(r["cluster"] == 0 for r in store.records("pages") if r["url"] in {u for u, _ in an2.seen[A]})
    store.close()


def test_a_new_crawl_on_the_store_learns_again_with_the_next_version(tmp_path):
    routes = site(4)
    store, _ = run(tmp_path, routes, LearningAnalyzer(learn=3))
    store.close()
    an = LearningAnalyzer(learn=3)
    store, _ = run(tmp_path, routes, an)  # not --resume: no model sent, one learned anew
    assert an.loaded == [] and an.learned == 1
    assert [r["version"] for r in store.site_models()] == [2]
    store.close()


def test_only_articles_stores_blocks_of_articles_and_follows_every_page_s_links(tmp_path):
    routes = site(6)
    routes[A + "/p0.html"] = Response(page("a listing", "/deep-art.html"))
    routes[A + "/deep-art.html"] = Response(page("reached through a listing"))
    store, crawler = run(tmp_path, routes, LearningAnalyzer(learn=100), only_articles=True)
    recs = pages(store)
    assert A + "/deep-art.html" in recs  # linked from a listing page: followed
    for url, r in recs.items():
        assert (r["n_blocks"] > 0) == ("art" in url), url
        assert r["kind"] == ("article" if "art" in url else "listing") and r["text"]
    assert crawler.stats.not_articles == sum("art" not in u for u in recs)
    md = {u: m for u, _, m, _ in store.page_markdown()}
    assert md[A + "/"] is None and md[A + "/deep-art.html"]
    store.close()


SITE = PipelineConfig(mode="main", algorithm="site", learn_pages=100, learn_seconds=5.0)


def test_a_site_smaller_than_learn_pages_learns_when_the_crawl_ends(tmp_path):
    an = LearningAnalyzer(learn=100)
    store, crawler = run(tmp_path, site(3), an, spec=SITE)
    assert an.learned == 1 and crawler.stats.models == 1 and crawler.stats.revised == 4
    assert all(r["text"].startswith("revised: ") for r in pages(store).values())
    [row] = store.site_models()
    assert row["site"] == A and row["version"] == 1
    store.close()


def test_without_site_learning_nothing_is_asked_at_the_end(tmp_path):
    an = LearningAnalyzer(learn=100)
    store, crawler = run(tmp_path, site(3), an)  # the default spec: auto
    assert an.finished == [] and an.learned == 0 and crawler.stats.revised == 0
    store.close()


def test_a_site_idle_for_learn_seconds_learns_while_others_crawl(tmp_path):
    b = "http://b.test"
    routes = site(2)
    names = [f"/q{i}.html" for i in range(12)]
    routes[b + "/"] = Response(page("home b", *names))
    for name in names:
        routes[b + name] = Response(page("b text " + name))
    # one request a second per host: a.test is done after ~3 s, b.test after ~13 s
    an = LearningAnalyzer(learn=100)
    store, crawler = run(tmp_path, routes, an, spec=SITE, seeds=[A + "/", b + "/"], delay=1.0)
    first = an.finished[0]
    assert first[0] == A and first[1][b] < len(names) + 1  # learned while b.test was crawling
    assert an.learned == 2 and crawler.stats.revised == 3 + len(names) + 1
    assert {r["site"] for r in store.site_models()} == {A, b}
    store.close()


def test_a_stopped_crawl_does_not_learn_at_the_end(tmp_path):
    an = LearningAnalyzer(learn=100)
    store, crawler = run(tmp_path, site(8), an, spec=SITE, max_time=2.5, delay=1.0)
    assert crawler.stats.stopped == "stopped: time limit"
    assert an.learned == 0 and crawler.stats.revised == 0 and store.site_models() == []
    store.close()
