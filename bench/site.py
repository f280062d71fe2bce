"""Site benchmark: the site-grouped development sets crawled by the real CLI, as real sites.

Each site of cleanportaleval, cetd and msv (page ids `site/n`; cleanportaleval's `host_n`) is
served by its own HTTP server on its own loopback address (127.0.1.1, 127.0.1.2, ...) under its
REAL host name (the most common host of its pages' recorded URLs), every page at its original
URL path (pages without a recorded URL, or whose path another page of the site took, at /n.html)
plus an index page linking them all. `blockcrawl crawl` reaches those names through
`--resolve HOST:PORT:ADDR` (no /etc/hosts edit, no DNS) and crawls index -> pages
(`--max-depth 1 --scope host`: the pages' own links to the real web are never followed), once per
algorithm (`auto`, `site`: site learning; a name the registry does not know is skipped with a
message). The stored main text comes back through `blockcrawl export --what pages` (its `text`
field); a store without that field (schema < 5) is read through `export --what blocks` instead:
the blocks of each page in position order, their headings once each as blocks_text writes them,
crawled with --no-dedup so site dedup does not take repeated paragraphs out of the text.

Beside it, in the same run and on the same pages, trafilatura and readability-lxml (benchmark
peers only, the `bench` extra) extract the raw page bytes, each in a subprocess too, and so does
blockcrawl.extract() (`extract`: the default algorithm without fetching, storing or chunking). CPU per page
is resource.getrusage(RUSAGE_CHILDREN) (user + system) around each subprocess divided by the
pages it was given: the crawl's includes fetching, storing, chunking and its worker processes;
every figure includes its interpreter's start and imports. Scores: /work/shared/bench/score.py
(4-gram shingle P/R/F1, a page not stored scores as an empty prediction).

    python bench/site.py                                   # all three sets, all pages
    python bench/site.py --sets cetd --sites-limit 5 --pages-per-site 10   # a quick run
"""
from __future__ import annotations

import argparse
import html
import json
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from common import BENCH, ROOT  # noqa: E402 - first: it puts the repository on sys.path

SETS = ("cleanportaleval", "cetd", "msv")
PEERS = ("extract", "trafilatura", "readability")  # extract: blockcrawl.extract(bytes, url) alone, no crawl
INDEX = "/sitebench-index.html"
_HOSTNAME = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")


# --------------------------------------------------------------------------- the sites
@dataclass
class Page:
    id: str
    path: str  # path and query served (as the index links it)
    file: Path | None = None
    record: dict[str, Any] = field(default_factory=dict)


@dataclass
class SiteSpec:
    name: str
    host: str  # the name the crawler uses (real host name, or the address when none is known)
    address: str
    pages: list[Page] = field(default_factory=list)
    by_key: dict[str, Page] = field(default_factory=dict)  # url_key of the canonical URL -> page
    port: int = 0

    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"


def site_of(ds: str, rec_id: str) -> str:
    """The site of a page id: `site/n`; cleanportaleval's are `CleanPortalEval-master/host_n`."""
    head, _, tail = rec_id.partition("/")
    return tail.split("_", 1)[0] if ds == "cleanportaleval" else head


def load_sites(bench: Path, ds: str, sites_limit: int | None, pages_per_site: int | None) -> list[SiteSpec]:
    """The set's sites, largest first (site learning needs several pages), each with its pages in
    id order, cut to the limits; addresses and paths assigned (ports later)."""
    sys.path.insert(0, str(bench))
    import score

    groups: dict[str, list[dict[str, Any]]] = {}
    for rec in score.load_gold(str(bench / "data"), ds):
        groups.setdefault(site_of(ds, rec["id"]), []).append(rec)
    names = sorted(groups, key=lambda s: (-len(groups[s]), s))[:sites_limit]
    sites: list[SiteSpec] = []
    taken_hosts: set[str] = set()
    for n, name in enumerate(names, 1):
        recs = sorted(groups[name], key=lambda r: r["id"])[:pages_per_site]
        address = f"127.0.{1 + (n - 1) // 250}.{1 + (n - 1) % 250}"
        hosts = Counter((urlsplit(r["url"]).hostname or "").lower() for r in recs if r.get("url"))
        host = next((h for h, _ in hosts.most_common() if _HOSTNAME.match(h)), "")
        if not host and _HOSTNAME.match(name.lower()):
            host = name.lower()
        if not host or host in taken_hosts:
            host = address
        taken_hosts.add(host)
        site = SiteSpec(name, host, address)
        for r in recs:
            path = ""
            if r.get("url"):
                u = urlsplit(r["url"])
                # "//x": http.server (3.11+) collapses a leading "//" in the request path
                path = "/" + (u.path or "/").lstrip("/") + (f"?{u.query}" if u.query else "")
            site.pages.append(Page(r["id"], path, Path(score.page_path(str(bench / "data"), ds, r)), r))
        sites.append(site)
    return sites


def assign_keys(site: SiteSpec) -> None:
    """Each page's served path and its key (url_key of the URL as the crawler canonicalises it):
    the original path if it canonicalises and no other page (or the index) has it, else /n.html."""
    from blockcrawl.crawl.urls import canonicalize, url_key

    def key(path: str) -> str | None:
        c = canonicalize(site.origin() + path)
        return url_key(c) if c else None

    site.by_key.clear()
    taken = {key(INDEX)}
    for p in site.pages:
        k = key(p.path) if p.path.startswith("/") else None
        if k is None or k in taken:
            stem = re.sub(r"[^A-Za-z0-9._-]", "_", p.id.partition("/")[2] or p.id)
            p.path = f"/{stem}.html"
            k = key(p.path)
        assert k is not None and k not in taken, p.id
        taken.add(k)
        site.by_key[k] = p
    # a page whose rel=canonical names another URL of its host is not stored under its own URL:
    # the crawler fetches the canonical one instead (crawl.sources.links.canonical_elsewhere), which the
    # real site would answer with this page; so it is served there too (if free)
    for p in site.pages:
        c = canonical_of(site.origin() + p.path, page_bytes(p))
        if c is not None and url_key(c) not in taken:
            taken.add(url_key(c))
            site.by_key[url_key(c)] = p


def canonical_of(url: str, body: bytes) -> str | None:
    """The canonical URL the crawler would fold this page into, by its own rule, or None."""
    from blockcrawl.crawl.sources.links import base_url, canonical_elsewhere, scan
    from blockcrawl.parse import load

    dom = load(body, url, "text/html")
    return canonical_elsewhere(url, base_url(dom, url), scan(dom)[1].canonical)


def index_page(site: SiteSpec) -> bytes:
    # absolute: a recorded path "//news/x.html" as an href would name the host "news"
    links = "\n".join(f'<li><a href="{html.escape(site.origin() + p.path)}">page {i}</a></li>'
                      for i, p in enumerate(site.pages))
    return (f"<!DOCTYPE html><html><head><title>{html.escape(site.name)}</title></head><body>"
            f"<h1>{html.escape(site.name)}</h1><ul>\n{links}\n</ul></body></html>").encode()


def page_bytes(p: Page) -> bytes:
    import gzip

    assert p.file is not None
    data = p.file.read_bytes()
    return gzip.decompress(data) if p.file.name.endswith(".gz") else data


def serve(sites: list[SiteSpec]) -> list[ThreadingHTTPServer]:
    """One server per site on its address, all on one port (tried until every address takes it)."""
    from blockcrawl.crawl.urls import canonicalize, url_key

    def handler(site: SiteSpec) -> type[BaseHTTPRequestHandler]:
        index = index_page(site)

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                body, status, ctype = b"not found", 404, "text/plain"
                if self.path == "/robots.txt":
                    body, status = b"User-agent: *\nAllow: /\n", 200
                elif self.path == INDEX:
                    body, status, ctype = index, 200, "text/html; charset=utf-8"
                else:
                    c = canonicalize(site.origin() + self.path)
                    p = site.by_key.get(url_key(c)) if c else None
                    if p is not None:  # no charset: the crawler sniffs it as from a server that says none
                        body, status, ctype = page_bytes(p), 200, "text/html"
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass
        return H

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass

    for _attempt in range(20):
        probe = socket.socket()
        probe.bind((sites[0].address, 0))
        port = probe.getsockname()[1]
        probe.close()
        servers: list[ThreadingHTTPServer] = []
        try:
            for s in sites:
                s.port = port
                assign_keys(s)
                servers.append(Server((s.address, port), handler(s)))
        except OSError:
            for srv in servers:
                srv.server_close()
            continue
        for srv in servers:
            threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 1.0}, daemon=True).start()
        return servers
    raise OSError("no port free on every site address")


# --------------------------------------------------------------------------- runs
def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_child(cmd: list[str], **kw: Any) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """(result, CPU seconds of the subprocess and its waited-for children, wall seconds)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    c0, t0 = child_cpu(), time.perf_counter()
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, **kw)
    return res, child_cpu() - c0, time.perf_counter() - t0


def store_has_text() -> bool:
    """Does this checkout's store keep each page's main text (`text` in export --what pages)?
    Schema 5 added it (CONTRACT: pages.text)."""
    from blockcrawl.store.schema import SCHEMA_VERSION

    return SCHEMA_VERSION >= 5


def crawl(sites: list[SiteSpec], algorithm: str, db: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """Crawl every site of a set with the real CLI; ({page id: stored main text}, run facts)."""
    from blockcrawl.crawl.urls import canonicalize, url_key

    with_text = store_has_text()
    cmd = [sys.executable, "-m", "blockcrawl", "crawl", *(s.origin() + INDEX for s in sites),
           "--store", str(db), "--allow-private", "--algorithm", algorithm, "--max-depth", "1",
           "--scope", "host", "--no-sitemaps", "--no-feeds", "--render", "never", "--no-progress",
           "--timeout", "60", *(a for s in sites for a in ("--resolve", f"{s.host}:{s.port}:{s.address}"))]
    if not with_text:
        cmd.append("--no-dedup")
    res, cpu, wall = run_child(cmd)
    if res.returncode != 0:
        raise SystemExit(f"site bench: crawl failed ({res.returncode}): {res.stderr[-2000:]}")
    summary = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else ""
    keys = {k: p.id for s in sites for k, p in s.by_key.items()}

    def page_id(url: str) -> str | None:
        c = canonicalize(url)
        return keys.get(url_key(c)) if c else None

    def export(what: str) -> list[dict[str, Any]]:
        out = subprocess.run([sys.executable, "-m", "blockcrawl", "export", "--store", str(db), "--what", what],
                             cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                             text=True, check=True).stdout
        return [json.loads(line) for line in out.split("\n") if line.strip()]

    texts: dict[str, str] = {}
    pages = export("pages")
    source = "pages.text"
    if pages and "text" in pages[0]:
        for rec in pages:
            i = page_id(str(rec["url"]))
            if i is not None:
                texts[i] = str(rec.get("text") or "")
    else:
        from blockcrawl.extraction.api import blocks_text
        from blockcrawl.records import Block

        source = "blocks (export --what blocks, --no-dedup)" if not with_text else "blocks (export --what blocks)"
        per: dict[str, list[Block]] = {}
        for i in {page_id(str(r["url"])) for r in pages} - {None}:
            per[str(i)] = []
        for b in export("blocks"):
            i = page_id(str(b["url"]))
            if i is None:
                continue
            path = tuple(b["heading_path"])
            text = str(b["text"])
            label = path[-1] + ": " if path else ""
            body = text[len(label):] if label and text.startswith(label) else text
            per.setdefault(i, []).append(Block(text=text, body=body, heading_path=path, tag_path=str(b["tag_path"]),
                                               position=int(b["position"]), url=str(b["url"]), hash=str(b["hash"]),
                                               kind=str(b["kind"])))
        for i, blocks in per.items():
            blocks.sort(key=lambda b: b.position)
            texts[i] = blocks_text(blocks)
    n = sum(len(s.pages) for s in sites)
    missing = [p.id for s in sites for p in s.pages if p.id not in texts]
    return texts, {"cpu": cpu, "wall": wall, "pages": n, "stored": len(texts), "source": source, "summary": summary,
                   "missing": missing}


def peer_extractor(name: str) -> Callable[[bytes, str | None], str]:
    if name == "extract":
        from blockcrawl import extract

        return lambda raw, url: extract(raw, url).text
    if name == "trafilatura":
        import trafilatura

        return lambda raw, url: trafilatura.extract(raw, url=url) or ""
    if name == "readability":
        import lxml.html
        from readability import Document

        block = re.compile(r"(?i)(?=<(?:/?(?:p|div|br|li|h[1-6]|tr|td|th|table|ul|ol|dl|dd|dt|blockquote|pre|"
                           r"section|article|header|footer|figure|figcaption)\b))")

        def readability_text(raw: bytes, url: str | None) -> str:
            summary = Document(raw, url=url).summary(html_partial=True)
            return str(lxml.html.fromstring(block.sub("\n", summary)).text_content()).strip()
        return readability_text
    raise SystemExit(f"unknown peer {name}")


def peer_main(name: str, job: Path, out: Path) -> int:
    """Subprocess side of a peer run: job = JSON [[id, page file, url], ...]; writes {id: text}."""
    import gzip

    fn = peer_extractor(name)
    preds: dict[str, str] = {}
    failed = 0
    for rec_id, file, url in json.loads(job.read_text()):
        data = Path(file).read_bytes()
        raw = gzip.decompress(data) if file.endswith(".gz") else data
        try:
            preds[rec_id] = fn(raw, url)
        except Exception as e:  # a peer failing on a page scores it as empty
            failed += 1
            if failed == 1:
                print(f"{name} failed on {rec_id}: {e!r}", file=sys.stderr)
            preds[rec_id] = ""
    out.write_text(json.dumps(preds, ensure_ascii=False))
    return 0


def run_peer(name: str, sites: list[SiteSpec], tmp: Path) -> tuple[dict[str, str], dict[str, Any]]:
    job, out = tmp / f"{name}.job.json", tmp / f"{name}.out.json"
    job.write_text(json.dumps([[p.id, str(p.file), p.record.get("url")] for s in sites for p in s.pages]))
    res, cpu, wall = run_child([sys.executable, str(Path(__file__).resolve()), "--peer", name, str(job), str(out)])
    if res.returncode != 0:
        raise SystemExit(f"site bench: {name} failed: {res.stderr[-2000:]}")
    preds = json.loads(out.read_text())
    return preds, {"cpu": cpu, "wall": wall, "pages": len(preds), "stored": len(preds), "source": name,
                   "summary": res.stderr.strip()}


# --------------------------------------------------------------------------- report
def bench_set(bench: Path, ds: str, algorithms: list[str], peers: list[str], sites_limit: int | None,
              pages_per_site: int | None) -> dict[str, Any]:
    sys.path.insert(0, str(bench))
    import score

    sites = load_sites(bench, ds, sites_limit, pages_per_site)
    servers = serve(sites)
    runs: dict[str, tuple[dict[str, str], dict[str, Any]]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="sitebench-") as tmpd:
            tmp = Path(tmpd)
            for algo in algorithms:
                print(f"{ds}: crawling {len(sites)} sites, {sum(len(s.pages) for s in sites)} pages with "
                      f"--algorithm {algo}", file=sys.stderr)
                runs[algo] = crawl(sites, algo, tmp / f"{ds}.{algo}.db")
                print(f"  {runs[algo][1]['summary']}", file=sys.stderr)
            for peer in peers:
                print(f"{ds}: {peer}", file=sys.stderr)
                runs[peer] = run_peer(peer, sites, tmp)
    finally:
        for srv in servers:
            srv.shutdown()
            srv.server_close()
    gold_all = {r["id"]: r for r in score.load_gold(str(bench / "data"), ds)}
    rows: list[dict[str, Any]] = []
    gold = [gold_all[p.id] for s in sites for p in s.pages]
    for name, (preds, facts) in runs.items():
        res = score.score(ds, preds, gold=gold)
        rows.append({"set": ds, "site": "", "extractor": name, "f1": res["f1"], "precision": res["precision"],
                     "recall": res["recall"], "pages": len(gold), "stored": facts["stored"],
                     "cpu_ms": 1000 * facts["cpu"] / max(1, facts["pages"]), "wall": facts["wall"],
                     "source": facts["source"]})
        for s in sites:
            g = [gold_all[p.id] for p in s.pages]
            r = score.score(ds, {p.id: preds.get(p.id, "") for p in s.pages}, gold=g)
            rows.append({"set": ds, "site": s.name, "host": s.host, "extractor": name, "f1": r["f1"],
                         "precision": r["precision"], "recall": r["recall"], "pages": len(g),
                         "stored": sum(1 for p in s.pages if p.id in preds)})
    same = None
    if "auto" in runs and "extract" in runs:  # the one extraction path, end to end through the CLI
        crawled, direct = runs["auto"][0], runs["extract"][0]
        same = (sum(1 for i in direct if crawled.get(i) == direct[i]), len(direct), runs["auto"][1]["source"])
    missing = {name: facts["missing"] for name, (_, facts) in runs.items() if facts.get("missing")}
    return {"set": ds, "sites": len(sites), "rows": rows, "same_as_extract": same, "missing": missing,
            "crawl": {name: facts["summary"] for name, (_, facts) in runs.items() if "missing" in facts},
            "hosts": {s.name: (s.host, s.address) for s in sites}}


def tables(results: list[dict[str, Any]]) -> str:
    out = ["| set | extractor | pages (stored) | F1 | P | R | CPU ms/page | wall s | text from |",
           "|---|---|---|---|---|---|---|---|---|"]
    for res in results:
        for r in res["rows"]:
            if not r["site"]:
                out.append(f"| {r['set']} | {r['extractor']} | {r['pages']} ({r['stored']}) | {r['f1']:.3f} | "
                           f"{r['precision']:.3f} | {r['recall']:.3f} | {r['cpu_ms']:.0f} | {r['wall']:.1f} | "
                           f"{r['source']} |")
    for res in results:
        for name, ids in res.get("missing", {}).items():
            out.append(f"\n{res['set']}: {len(ids)} pages the {name} crawl did not store (scored empty): "
                       + ", ".join(ids[:12]) + (" ..." if len(ids) > 12 else ""))
        for name, summary in res.get("crawl", {}).items():
            out.append(f"\n{res['set']} {name}: {summary}")
        if res.get("same_as_extract"):
            n, m, source = res["same_as_extract"]
            out.append(f"\n{res['set']}: the auto crawl's text (from {source}) is extract()'s on {n} of {m} pages")
    for res in results:
        names = list(dict.fromkeys(r["extractor"] for r in res["rows"]))
        out += ["", f"{res['set']}, F1 per site (P/R in --json):", "",
                "| site | host | pages | " + " | ".join(names) + " |", "|---|---|---|" + "---|" * len(names)]
        per: dict[str, dict[str, dict[str, Any]]] = {}
        for r in res["rows"]:
            if r["site"]:
                per.setdefault(r["site"], {})[r["extractor"]] = r
        for site, by in per.items():
            first = next(iter(by.values()))
            cells = " | ".join(f"{by[n]['f1']:.3f}" + ("" if by[n]["stored"] == first["pages"]
                                                       else f" ({by[n]['stored']} stored)") for n in names)
            out.append(f"| {site} | {first['host']} | {first['pages']} | {cells} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Crawl the site-grouped development sets as real sites on loopback "
                                             "with the blockcrawl CLI; score beside trafilatura and readability.")
    ap.add_argument("--bench", type=Path, default=BENCH, help="folder with score.py and data/")
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS, metavar="NAME")
    ap.add_argument("--algorithms", nargs="+", default=["auto", "site"], metavar="NAME",
                    help="crawl --algorithm values (default: auto site); unknown ones are skipped")
    ap.add_argument("--peers", nargs="*", default=list(PEERS), choices=PEERS, metavar="NAME")
    ap.add_argument("--sites-limit", type=int, metavar="N", help="the N largest sites of each set")
    ap.add_argument("--pages-per-site", type=int, metavar="N", help="the first N pages (by id) of each site")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write every row as JSON")
    ap.add_argument("--peer", nargs=3, metavar=("NAME", "JOB", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.peer:
        return peer_main(args.peer[0], Path(args.peer[1]), Path(args.peer[2]))
    if not (args.bench / "score.py").exists():
        print(f"site bench: no score.py under {args.bench} (use --bench DIR)", file=sys.stderr)
        return 2
    from blockcrawl.extraction.registry import ALGORITHMS

    algorithms = []
    for a in args.algorithms:
        if a in ALGORITHMS:
            algorithms.append(a)
        else:
            print(f"site bench: skipping algorithm {a!r}: not in this checkout's registry "
                  f"({', '.join(ALGORITHMS)})", file=sys.stderr)
    results = [bench_set(args.bench, ds, algorithms, args.peers, args.sites_limit, args.pages_per_site)
               for ds in args.sets]
    print(tables(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
