"""Link resolution, old (urllib + own canonicalisation, main at 4f80505) vs new (WHATWG by
can-ada + canonicalisation on top): conformance on the web-platform-tests URL cases and
throughput on real hrefs.

    python bench/urls.py [--data /work/shared/bench/data] [--pages 120] [--repeat 5]

Conformance: tests/data/urltestdata.json, scored as tests/crawl/test_crawl_wpt_urls.py does ("after
canonicalisation": the standard's answer with the crawler's rules applied; "exact": the
standard's href without its fragment; "rejected": invalid cases refused).
Throughput: the <a>/<area> hrefs of the first N pages of wcxb-dev (real pages, their real URLs),
resolved page by page as Crawler.add_links does, each run with a fresh Resolver (cold cache);
best of --repeat.
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import subprocess
import tempfile
import time
from pathlib import Path
from types import ModuleType

from common import ROOT  # noqa: E402 - first: it puts the repository on sys.path

from blockcrawl.crawl import urls as new  # noqa: E402
from blockcrawl.crawl.sources.links import base_url, raw_links  # noqa: E402
from blockcrawl.parse import load  # noqa: E402
from tests.crawl.test_crawl_wpt_urls import cases, crawler_form, excluded  # noqa: E402

OLD_COMMIT = "4f80505"


def old_module() -> ModuleType:
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{OLD_COMMIT}:blockcrawl/crawl/urls.py"],
                         check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "old_urls.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_urls", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def conformance(mod: ModuleType) -> dict[str, float]:
    valid = ok = exact = invalid = rejected = 0
    for c in cases():
        r = mod.Resolver()  # fresh: no cache carried between cases
        try:
            url, _ = r.resolve(c.get("base") or "", c["input"])
        except Exception:  # noqa: BLE001 - the old code raised on some inputs
            url = None
        if c.get("failure"):
            invalid += 1
            rejected += url is None
            continue
        if c["protocol"] not in ("http:", "https:") or excluded(c):
            continue
        valid += 1
        ok += url == crawler_form(c)
        exact += url == c["href"].split("#", 1)[0]
    return {"valid": valid, "after canonicalisation": ok / valid, "exact": exact / valid,
            "invalid": invalid, "rejected": rejected / invalid}


def real_links(data: Path, n_pages: int) -> list[tuple[str, list[str]]]:
    out = []
    with open(data / "wcxb-dev" / "gold.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if not rec.get("url"):
                continue
            raw = gzip.decompress((data / "wcxb-dev" / rec["page"]).read_bytes())
            dom = load(raw, rec["url"], "text/html")
            out.append((base_url(dom, rec["url"]), raw_links(dom)))
            if len(out) >= n_pages:
                break
    return out


def throughput(mod: ModuleType, pages: list[tuple[str, list[str]]], repeat: int) -> tuple[float, list[str | None]]:
    best = float("inf")
    res: list[str | None] = []
    for _ in range(repeat):
        r = mod.Resolver()
        res = []
        t0 = time.perf_counter()
        for base, hrefs in pages:
            resolve = r.resolve
            for h in hrefs:
                res.append(resolve(base, h)[0])
        best = min(best, time.perf_counter() - t0)
    return best, res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("/work/shared/bench/data"))
    ap.add_argument("--pages", type=int, default=120)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    old = old_module()
    for name, mod in (("old", old), ("new", new)):
        print(name, {k: round(v, 4) if isinstance(v, float) else v for k, v in conformance(mod).items()})
    pages = real_links(a.data, a.pages)
    n = sum(len(h) for _, h in pages)
    t_old, r_old = throughput(old, pages, a.repeat)
    t_new, r_new = throughput(new, pages, a.repeat)
    diff = sum(x != y for x, y in zip(r_old, r_new))
    print(f"{n} hrefs on {len(pages)} pages: old {t_old / n * 1e6:.2f} us/href, new {t_new / n * 1e6:.2f} us/href, "
          f"new/old time {t_new / t_old:.2f}; results differing {diff} "
          f"(old accepted {sum(x is not None for x in r_old)}, new {sum(x is not None for x in r_new)})")
    shown = 0
    for (x, y) in zip(r_old, r_new):
        if x != y and shown < 15:
            print("   old", x, "\n   new", y)
            shown += 1


if __name__ == "__main__":
    main()
