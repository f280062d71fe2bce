"""PipelineConfig, the algorithm registry (and its plug-ins), the one extraction path shared by
extract() / SitePipeline / the crawl workers, and the crawl workers' reliability."""
from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import blockcrawl
from blockcrawl import PipelineConfig, SitePipeline
from blockcrawl.crawl import CrawlConfig, crawl
from blockcrawl.crawl.analysis import process
from blockcrawl.errors import ConfigError
from blockcrawl.extraction import registry
from blockcrawl.store import Store

from .extraction.test_auto import COMMENTS, FOOTER, NAV, PROSE, SIDEBAR, article_page
from .support.crawlsite import Route, Site, chain_site

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- PipelineConfig
@pytest.mark.parametrize("bad", [
    {"algorithm": "nope"}, {"mode": "summary"}, {"chunk_size": 0}, {"chunk_size": -5},
    {"overlap": 200, "chunk_size": 200}, {"overlap": -1}, {"chunk_size": math.nan},
    {"chunk_size": 2.5}, {"overlap": True}, {"tokenizer": "nope"}, {"tokenizer": "/no/such/tokenizer.json"},
    {"max_bytes": 0}, {"max_bytes": math.inf}, {"dedup": "yes"}, {"algorithm": None},
])
def test_bad_config_values_raise_config_error(bad):
    with pytest.raises(ConfigError):
        PipelineConfig(**bad)
    with pytest.raises(ConfigError):  # the keyword form of SitePipeline validates the same way
        SitePipeline(**bad)


def test_config_is_frozen_slotted_picklable_and_the_one_default():
    from blockcrawl.pipeline import DEFAULTS

    c = PipelineConfig(mode="main", tokenizer="words", max_bytes=1234)
    assert pickle.loads(pickle.dumps(c)) == c
    with pytest.raises(AttributeError):
        c.mode = "blocks"  # type: ignore[misc]
    assert not hasattr(c, "__dict__")
    assert c.replace(overlap=10).overlap == 10 and c.overlap != 10
    with pytest.raises(ConfigError):
        c.replace(overlap=c.chunk_size)
    # one default algorithm: the library, the crawl (its old PipelineSpec said 'all') and both CLIs
    from blockcrawl.cli import build_parser

    parser = build_parser()
    ext = parser.parse_args(["extract", "x.html"])
    crw = parser.parse_args(["crawl", "http://x.test/", "--store", "x.db"])
    assert DEFAULTS.algorithm == "auto" == ext.algorithm == crw.algorithm == process.CRAWL_DEFAULT.algorithm
    assert blockcrawl.extract("<p>x</p>").algorithm == DEFAULTS.algorithm
    assert (ext.chunk_size, ext.overlap, ext.max_bytes) == (DEFAULTS.chunk_size, DEFAULTS.overlap, DEFAULTS.max_bytes)
    assert SitePipeline(mode="main").config == PipelineConfig(mode="main")
    assert SitePipeline(PipelineConfig(mode="main", tokenizer="words")).algorithm == "auto"


@pytest.mark.slow
def test_crawl_cli_rejects_bad_pipeline_options_in_one_line(tmp_path):
    for args, msg in ((["--overlap", "300"], "overlap"), (["--tokenizer", "nope"], "tokenizer"),
                      (["--chunk-size", "0"], "chunk_size")):
        r = subprocess.run([sys.executable, "-m", "blockcrawl", "crawl", "http://127.0.0.1:9/", "--store",
                            str(tmp_path / "c.db"), *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- registry
def test_one_table_of_algorithm_records():
    table = registry.ALGORITHMS
    assert {"all", "auto", "tps", "tps-text", "cepr", "cetr", "template", "template+cepr"} <= set(table)
    for name, algo in table.items():
        assert isinstance(algo, registry.Algorithm) and algo.name == name and algo.description
        assert (algo.page is not None) or algo.is_site
    assert [n for n, a in table.items() if a.is_site] == ["template", "template+cepr", "site", "auto+template"]
    with pytest.raises(TypeError):
        table["mine"] = table["all"]  # type: ignore[index]
    with pytest.raises(ConfigError, match="unknown algorithm"):
        registry.get("nope")


def test_cli_extract_does_not_import_algorithm_code_it_does_not_use():
    code = ("import sys; from blockcrawl.cli import main; main(['extract', '-', '--mode', 'text', "
            "'--format', 'text']); print(sorted(m for m in sys.modules if m.startswith(("
            "'blockcrawl.extraction.tps', 'blockcrawl.extraction.cepr', 'blockcrawl.extraction.template'))))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, input=b"<p>hello</p>", capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().strip().splitlines()[-1] == "[]"


PLUGIN = '''
from blockcrawl.extraction.registry import Algorithm

def first_paragraph(dom):
    """Keeps the first paragraph only."""
    keep = [False] * len(dom)
    p = dom.find("p")
    for k in range(p, dom.end[p]) if p >= 0 else ():
        keep[k] = True
    return keep

ALGORITHM = Algorithm("ignored", page=first_paragraph, description="the first paragraph")
'''


@pytest.fixture
def plugin_dist(tmp_path, monkeypatch):
    """A distribution with two `blockcrawl.algorithms` entry points, installed by putting its
    dist-info on sys.path (and PYTHONPATH, for subprocesses)."""
    (tmp_path / "bc_plugin_demo.py").write_text(PLUGIN, encoding="utf-8")
    info = tmp_path / "bc_plugin_demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bc-plugin-demo\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[blockcrawl.algorithms]\nfirst-p = bc_plugin_demo:ALGORITHM\nfirst-p-fn = bc_plugin_demo:first_paragraph\n"
        "auto = bc_plugin_demo:first_paragraph\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(ROOT)]))
    registry.reload_plugins()
    yield tmp_path
    registry.reload_plugins()


PAGE_2P = ("<html><body><nav><a href='/'>Home</a></nav><p>The first paragraph of the page, the one to keep.</p>"
           "<p>The second paragraph, which the plug-in drops.</p></body></html>")


def test_plugin_algorithm_from_an_entry_point(plugin_dist):
    assert "first-p" in registry.names() and "first-p" not in registry.ALGORITHMS
    algo = registry.get("first-p")
    assert algo.name == "first-p" and algo.description == "the first paragraph"
    assert registry.get("first-p-fn").description == "Keeps the first paragraph only."
    assert registry.get("auto") is registry.ALGORITHMS["auto"]  # a plug-in cannot shadow a built-in
    for name in ("first-p", "first-p-fn"):
        assert blockcrawl.extract(PAGE_2P, algorithm=name).text == "The first paragraph of the page, the one to keep."
        assert PipelineConfig(algorithm=name).algorithm == name
    r = subprocess.run([sys.executable, "-m", "blockcrawl", "extract", "-", "--mode", "main", "--algorithm",
                        "first-p", "--format", "text", "--tokenizer", "words"], cwd=ROOT, input=PAGE_2P.encode(),
                       capture_output=True, timeout=60, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().strip() == "The first paragraph of the page, the one to keep."


def test_broken_plugin_is_a_config_error(plugin_dist):
    info = plugin_dist / "bc_plugin_demo-1.0.dist-info" / "entry_points.txt"
    info.write_text("[blockcrawl.algorithms]\nbroken = bc_plugin_missing:nothing\n", encoding="utf-8")
    registry.reload_plugins()
    with pytest.raises(ConfigError, match="broken"):
        blockcrawl.extract("<p>x</p>", algorithm="broken")


# --------------------------------------------------------------------------- one extraction path
def _ld_page() -> str:
    ld = json.dumps({"@context": "https://schema.org", "@type": "NewsArticle", "headline": "Flood",
                     "articleBody": " ".join(PROSE)})
    return (f'<html><head><title>Flood</title><script type="application/ld+json">{ld}</script></head>'
            f'<body>{NAV}<div id="root"></div>{FOOTER}</body></html>')


def _pages() -> dict[str, str]:
    sections = "".join(f"<section><h2>Part {i}</h2><p>{p}</p><h3>Detail {i}</h3><p>{p[::-1]}</p></section>"
                       for i, p in enumerate(PROSE))
    posts = "".join(f'<div class="post"><div class="meta"><a href="/u/{i}">member{i}</a> wrote</div>'
                    f'<div class="msg"><p>{p}</p></div></div>' for i, p in enumerate(PROSE))
    return {
        "article": article_page(),
        "title heading": article_page().replace("<title>Flood - The Valley Gazette</title>",
                                                "<title>Flood reaches the lower town | Gazette</title>"),
        "title heading repeated inside": article_page(
            "<h3>Flood reaches the lower town</h3><p>" + PROSE[1] + "</p>").replace(
            "<title>Flood - The Valley Gazette</title>", "<title>Flood reaches the lower town</title>"),
        "sections": f"<html><head><title>Report</title></head><body>{NAV}<article><h1>Report</h1>{sections}"
                    f"</article>{SIDEBAR}</body></html>",
        "forum": f"<html><body>{NAV}<div id='thread'>{posts}</div>{COMMENTS}{FOOTER}</body></html>",
        "json-ld only": _ld_page(),
        "tiny": "<html><body>" + NAV + "<p>Opening hours: 9 to 5.</p></body></html>",
        "table": "<table>" + "".join(f"<tr><td>{p}</td><td>{i}</td></tr>" for i, p in enumerate(PROSE)) + "</table>",
        "empty": "",
        "malformed": "<div><p>unclosed <b>tags " + PROSE[0],
    }


@pytest.mark.parametrize("algorithm", ["auto", "all", "cetr"])
def test_extract_pipeline_and_crawl_worker_give_the_same_text(algorithm):
    cfg = PipelineConfig(mode="main", algorithm=algorithm, tokenizer="words", dedup=False)
    process.init_state(cfg)
    try:
        for name, html in _pages().items():
            url = f"http://site.test/{name.replace(' ', '-')}"
            doc = blockcrawl.extract(html, url, algorithm=algorithm)
            res = SitePipeline(cfg).process(html, url)
            assert res.text == doc.text, name
            assert res.blocks == doc.blocks, name
            out = process.analyse("site.test", html.encode(), url, "text/html; charset=utf-8", links=False)
            assert out.blocks == doc.blocks, name
            assert out.content_hash == hashlib.blake2b(doc.text.encode(), digest_size=16).hexdigest(), name
    finally:
        process.init_state(process.CRAWL_DEFAULT)


def test_title_heading_is_block_context_but_not_text():
    page = _pages()["title heading"]
    doc = blockcrawl.extract(page)
    assert "Flood reaches the lower town" not in doc.text and PROSE[0] in doc.text
    assert doc.blocks[0].heading_path[0] == "Flood reaches the lower town"
    inner = blockcrawl.extract(_pages()["title heading repeated inside"]).text
    assert inner.count("Flood reaches the lower town") == 1  # the h3 is a heading of its own


def test_script_rendered_article_is_stored_when_crawled(tmp_path):
    site = Site({"/": Route(_ld_page()), "/robots.txt": Route("", status=404)}).start()
    try:
        store = Store(tmp_path / "c.db")
        crawl(store, CrawlConfig(seeds=[site.origin + "/"], progress=False, workers=0, timeout=5.0),
              PipelineConfig(mode="main", tokenizer="words"))
        store.commit()
        text = " ".join(t for (t,) in store.db.execute("SELECT text FROM blocks"))
        chunks = store.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        site.stop()
    assert PROSE[0] in text and PROSE[3] in text and chunks > 0


# --------------------------------------------------------------------------- crawl workers
def test_gzip_served_as_html_is_inflated_only_up_to_max_bytes():
    inflated = ("<html><body>" + "<p>" + "word " * 40 + "</p>" * 1) * 20_000  # ~4.4 MB of paragraphs
    body = gzip.compress(inflated.encode(), 9)
    assert len(body) < 100_000
    process.init_state(PipelineConfig(mode="blocks", tokenizer="words", dedup=False, max_bytes=50_000))
    try:
        out = process.analyse("g.test", body, "http://g.test/", "text/html", links=False)
    finally:
        process.init_state(process.CRAWL_DEFAULT)
    text = sum(len(b.body) for b in out.blocks)
    assert 0 < text <= 50_000, text


def test_crawl_default_config_takes_the_crawl_max_bytes():
    from blockcrawl.crawl.engine.loop import Crawler

    c = Crawler(Store(":memory:"), CrawlConfig(seeds=["http://x.test/"], max_bytes=4096))
    assert c.spec.max_bytes == 4096 and c.spec.mode == "main" and c.spec.algorithm == "auto"


def _marked(marker: str) -> dict[int, str]:
    """pid -> cmdline of live (not zombie) processes whose environment holds marker."""
    found = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if marker.encode() not in f.read():
                    continue
            with open(f"/proc/{d}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    continue
            with open(f"/proc/{d}/cmdline", "rb") as f:
                found[int(d)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
    return found


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_a_crawler_killed_during_their_start_up(tmp_path):
    """kill -9 lands on the crawler while its 2 workers start (before: their parent watcher
    started after the parent was gone, and 5 workers were alive 70 s later)."""
    site = Site(chain_site(30, latency=0.01)).start()
    survivors: dict[int, str] = {}
    markers: list[str] = []
    spawned = 0
    try:
        # offsets after the first worker process appears: at once, mid start-up, once running
        for i, offset in enumerate((0.0, 0.05, 0.15, 0.4, 1.5)):
            marker = f"BLOCKCRAWL_TEST_MARK=w{os.getpid()}x{i}x{time.time_ns()}"
            env = dict(os.environ, PYTHONPATH=str(ROOT), BLOCKCRAWL_TEST_MARK=marker.split("=", 1)[1])
            p = subprocess.Popen([sys.executable, "-m", "blockcrawl", "crawl", site.origin + "/p0.html", "--store",
                                  str(tmp_path / f"k{i}.db"), "--workers", "2", "--tokenizer", "words",
                                  "--no-progress"], cwd=ROOT, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and p.poll() is None:
                if len(_marked(marker)) > 1:  # the crawler and at least one child
                    break
                time.sleep(0.005)
            time.sleep(offset)
            spawned += len(_marked(marker)) - 1
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            markers.append(marker)
        # the orphans go on their own (before: alive for good); waited for, not timed: the 60 s
        # are a guard against a hang, a loaded machine only makes the wait longer
        deadline = time.monotonic() + 60
        while True:
            survivors = {pid: cmd for marker in markers for pid, cmd in _marked(marker).items()}
            if not survivors or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        site.stop()
        for pid in survivors:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    assert spawned >= 5  # the kills did land while worker processes existed
    assert not survivors, survivors


@pytest.mark.parametrize("proxy", ["http://[::1", "http://", "http://user:SECRET@host:99999/", "http://h:port/"])
def test_a_bad_proxy_url_is_a_config_error_that_does_not_repeat_it(proxy):
    from blockcrawl.crawl.net.credentials import Credentials

    with pytest.raises(ConfigError, match="proxy is not a valid URL") as e:
        CrawlConfig(seeds=["http://x.test/"], credentials=Credentials(proxy=proxy))
    assert "SECRET" not in str(e.value)
    CrawlConfig(seeds=["http://x.test/"], credentials=Credentials(proxy="socks5://[::1]:1080"))  # fine


def test_a_user_agent_with_a_line_break_is_refused_as_a_header_is(tmp_path):
    for ua in ("bot/1.0\r\nX-Injected: 1", "bot/1.0\nx", "bot\0"):
        with pytest.raises(ConfigError, match="user_agent must not hold a line break"):
            CrawlConfig(seeds=["http://x.test/"], user_agent=ua)
    CrawlConfig(seeds=["http://x.test/"], user_agent="mybot/2.0 (+https://example.org/bot)")
    for args in (["--user-agent", "bot/1.0\r\nX-Injected: 1"], ["--header", "X-A: 1\r\nX-Injected: 1"],
                 ["--proxy", "http://[::1"]):
        r = subprocess.run([sys.executable, "-m", "blockcrawl", "crawl", "http://127.0.0.1:9/", "--store",
                            str(tmp_path / "c.db"), *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert r.stderr.startswith("blockcrawl crawl: ") and args[0][2:] in r.stderr, r.stderr
    assert not (tmp_path / "c.db").exists()
