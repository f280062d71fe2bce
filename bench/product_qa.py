"""Product-facts QA set from WCXB's product pages, and how many answers survive extraction.

`build(out_dir)` copies the product pages of wcxb-dev (provenance.tsv's page_type "product") into
out_dir as a static site (one file per page, stable names, an index.html linking them all, so a
crawl from /index.html reaches every page) and returns (out_dir, queries), each query a dict in
docs-dev's queries.jsonl format: {"id", "query", "pages": [relative paths], "answers": [values]}.

The questions are generated from label/value pairs read from each page's HTML with lxml, on its
own (not blockcrawl's extractor): <dl> terms, two-column table rows, `<b>Label:</b> value<br>`
runs, an element whose first child is a short label and whose rest is the value (`<li><span>Label
</span> value</li>`, label/value <div> pairs), schema.org itemprop and JSON-LD Product/Book
properties. A pair becomes a question only when the value (and, for pairs read from the page's
markup, the label) is in the page's gold text (the annotators' main content: the fact is
visible and is the page's own), the value is a fact and not prose (at most VALUE_WORDS words), and
the value is not part of the product's name. The question names the product (the page's <h1> when
the gold holds it, else the JSON-LD name, else the <title> cut at its site separator) and the
label: "What is the ISBN-13 of <product>?". At most PER_PAGE questions per page, one per label.

`main()` builds the set in a temporary folder and reports "answer kept": for each question,
whether an answer string is in a chunk blockcrawl exports for one of its pages through the crawl's
defaults (SitePipeline(mode="main"): extraction, record block, site dedup, chunking; every page of
the site in path order as one site) - the "chunks" column, the set's "answer kept", the same
definition and page order as bench/qa.py's kept - beside the same check on the page's extracted
text before site dedup and chunking ("extracted": an upper bound, not the kept rate), and on
trafilatura's text (its defaults) as a peer. Check: case-insensitive, whitespace collapsed.

    PYTHONPATH=. python bench/product_qa.py [--bench DIR] [--out DIR] [--missed 20]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BENCH = Path(os.environ.get("BLOCKCRAWL_BENCH") or ROOT.parent / "shared" / "bench")
WCXB = "wcxb-dev"

PER_PAGE = 8  # questions per page at most (a 60-row spec table would dominate the set)
LABEL_CHARS = 40
LABEL_WORDS = 4
VALUE_CHARS = 100
VALUE_WORDS = 12
VALUE_MIN = 3  # characters: "No", "1" are found in any text
LABEL_GAP = 12  # characters between the label's end and the value in the gold text (": ", "\n- ")
PAIR_VALUE_WORDS = 8  # a value of a bare element pair (a feature card's sentence is no fact)
CELL_CHARS = 160  # text of an element read as a label/value pair (longer is a section, not a pair)
NAME_SEPS = re.compile(r"\s+[|–—-]\s+|\s*:\s+(?=[A-Z][\w.]+$)")

# schema.org properties of a Product/Book and the label a question names them by
LD_LABELS = {
    "brand": "brand", "manufacturer": "manufacturer", "sku": "SKU", "mpn": "MPN", "gtin": "GTIN",
    "gtin8": "GTIN", "gtin12": "UPC", "gtin13": "EAN", "gtin14": "GTIN", "isbn": "ISBN",
    "author": "author", "publisher": "publisher", "model": "model", "color": "colour",
    "material": "material", "numberOfPages": "number of pages", "bookFormat": "format",
    "datePublished": "publication date", "releaseDate": "release date", "productID": "product ID",
}
LD_TYPES = re.compile(r"^(?:Product|Book|ProductGroup|IndividualProduct|ProductModel|Vehicle|Car)$")
_WHO = {"author", "manufacturer", "publisher", "brand", "maker", "designer", "artist", "illustrator",
        "translator", "editor", "developer", "seller", "sold by", "written by", "by"}
_BLOCKS = {"div", "p", "li", "ul", "ol", "dl", "table", "tr", "td", "th", "section", "article", "h1", "h2",
           "h3", "h4", "h5", "h6", "br", "hr", "form", "dd", "dt", "tbody", "thead"}
_LABEL_TAGS = {"b", "strong", "span", "label", "em", "dt", "th", "div", "p", "h3", "h4", "h5", "h6", "td"}
_NOT_FIRST = {"this", "that", "these", "the", "a", "an", "our", "your", "we", "you", "it", "my"}
_SKIP = {"script", "style", "noscript", "template", "svg"}


def norm(s: str) -> str:
    return " ".join(s.replace("\u00a0", " ").split()).lower()


def _clean(s: str) -> str:
    return " ".join(s.replace("\u00a0", " ").replace("\u200e", "").replace("\u200b", "").split())


def _text(el) -> str:  # type: ignore[no-untyped-def]
    return _clean(el.text_content())


def _label(s: str) -> str | None:
    s = _clean(s).rstrip(" :：").strip()
    if not s or len(s) > LABEL_CHARS or len(s.split()) > LABEL_WORDS or not s[0].isalpha():
        return None
    if s.endswith((".", "!", "?")) or "%" in s or s.split()[0].lower() in _NOT_FIRST:
        return None
    return s


def _value(s: str) -> str | None:
    s = _clean(s).lstrip(" :：").strip()
    if len(s) < VALUE_MIN or len(s) > VALUE_CHARS or len(s.split()) > VALUE_WORDS:
        return None
    if not any(c.isalnum() for c in s):
        return None
    return s


def _pairs_html(root) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    """(label, value, layout) pairs of the page's markup, in page order."""
    out: list[tuple[str, str, str]] = []
    for el in root.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        if not tag or tag in _SKIP:
            continue
        if tag == "dl":
            label = None
            for k in el:
                if k.tag == "dt":
                    label = _text(k)
                elif k.tag == "dd" and label:
                    out.append((label, _text(k), "dl"))
                    label = None
        elif tag == "tr":
            cells = [c for c in el if c.tag in ("td", "th")]
            if len(cells) == 2:
                out.append((_text(cells[0]), _text(cells[1]), "table"))
        elif tag in ("b", "strong", "span", "label", "em"):
            own = _clean(el.text_content())
            tail = el.tail or ""
            if own.endswith((":", "：")) or tail.lstrip().startswith(":"):
                # the value: the tail and the inline siblings up to the next <br>, label or block
                parts = [tail]
                for sib in el.itersiblings():
                    if sib.tag in _BLOCKS or sib.tag in ("b", "strong") or not isinstance(sib.tag, str):
                        break
                    parts.append(sib.text_content() + (sib.tail or ""))
                out.append((own, "".join(parts), "bold-run"))
        if tag in ("li", "div", "p", "span", "dd", "td"):
            kids = [k for k in el if isinstance(k.tag, str) and k.tag not in _SKIP and k.tag != "br"]
            if not kids or (el.text or "").strip() or kids[0].tag not in _LABEL_TAGS:
                continue
            whole = _text(el)
            if len(whole) > CELL_CHARS:
                continue
            first = _text(kids[0])
            if len(kids) == 1 and (kids[0].tail or "").strip():  # <li><span>Label</span> value</li>
                out.append((first, kids[0].tail or "", "label-first"))
            elif len(kids) == 2 and not (kids[0].tail or "").strip() and kids[0].tag[0] != "h":
                v = _clean(_text(kids[1]) + " " + (kids[1].tail or ""))  # <div><div>L</div><div>V</div></div>
                if len(v.split()) <= PAIR_VALUE_WORDS:
                    out.append((first, v, "pair-elements"))
    return out


def _ld_values(root) -> list[object]:  # type: ignore[no-untyped-def]
    vals: list[object] = []
    for s in root.iter("script"):
        if "ld+json" in (s.get("type") or "").lower() and s.text:
            try:
                vals.append(json.loads(s.text))
            except (ValueError, RecursionError):
                continue
    return vals


def _ld_items(values: list[object]) -> list[dict]:
    out: list[dict] = []
    stack = list(values)
    while stack and len(out) < 50:
        o = stack.pop()
        if isinstance(o, list):
            stack.extend(o)
        elif isinstance(o, dict):
            t = o.get("@type")
            types = t if isinstance(t, list) else [t]
            if any(isinstance(x, str) and LD_TYPES.match(x) for x in types):
                out.append(o)
            stack.extend(v for v in o.values() if isinstance(v, (dict, list)))
    return out


def _ld_text(v: object) -> str | None:
    if isinstance(v, (str, int, float)) and not isinstance(v, bool):
        return str(v)
    if isinstance(v, dict):
        n = v.get("name")
        return n if isinstance(n, str) else None
    if isinstance(v, list) and v:
        return _ld_text(v[0])
    return None


def _pairs_schema(root) -> tuple[list[tuple[str, str, str]], str]:  # type: ignore[no-untyped-def]
    """(label, value, layout) pairs of JSON-LD and itemprop, and the JSON-LD product name."""
    out: list[tuple[str, str, str]] = []
    name = ""
    for item in _ld_items(_ld_values(root)):
        if not name and isinstance(item.get("name"), str):
            name = _clean(item["name"])
        for prop, label in LD_LABELS.items():
            v = _ld_text(item.get(prop))
            if v:
                out.append((label, v, "json-ld"))
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        prop = el.get("itemprop")
        if prop in LD_LABELS:
            v = el.get("content") or _text(el)
            if v:
                out.append((LD_LABELS[prop], v, "itemprop"))
    return out, name


def product_name(root, gold: str, ld_name: str) -> str:  # type: ignore[no-untyped-def]
    g = norm(gold)
    for h in root.iter("h1"):
        t = _text(h)
        if 3 <= len(t) <= 150 and norm(t) in g:
            return t
    if ld_name and len(ld_name) <= 150:
        return ld_name
    title = root.find(".//title")
    t = _text(title) if title is not None else ""
    parts = [p for p in NAME_SEPS.split(t) if p.strip()]
    return max(parts, key=len).strip() if parts else t


def questions_for(html: bytes, gold: str) -> tuple[str, list[tuple[str, str, str]]]:
    """The product's name and its (label, value, layout) facts visible in the gold text."""
    import lxml.html

    try:
        root = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return "", []
    schema, ld_name = _pairs_schema(root)
    name = product_name(root, gold, ld_name)
    g = norm(gold)
    seen: set[str] = set()
    out: list[tuple[str, str, str]] = []
    for raw_label, raw_value, layout in _pairs_html(root) + schema:
        label, value = _label(raw_label), _value(raw_value)
        if not label or not value or norm(label) == norm(value) or label.lower() in seen:
            continue
        if norm(value) not in g or norm(value) in norm(name) or norm(label) in norm(name):
            continue
        if layout not in ("json-ld", "itemprop") and not _beside(g, norm(label), norm(value)):
            continue
        seen.add(label.lower())
        out.append((label, value, layout))
        if len(out) == PER_PAGE:
            break
    return name, out


def _beside(g: str, label: str, value: str) -> bool:
    """The gold says the label just before the value (a pair the reader sees as one)."""
    i = g.find(value)
    while i >= 0:
        if label in g[max(0, i - len(label) - LABEL_GAP):i]:
            return True
        i = g.find(value, i + 1)
    return False


def question(label: str, name: str) -> str:
    word = "Who" if label.lower() in _WHO else "What"
    shown = label if re.search(r"[A-Z]{2}", label) else label.lower()
    return f"{word} is the {shown} of {name}?"


def product_pages(bench: Path) -> list[tuple[str, Path, str]]:
    """(id, html.gz path, gold text) of wcxb-dev's product pages, in id order."""
    data = bench / "data" / WCXB
    types: dict[str, str] = {}
    for line in (data / "provenance.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) >= 7 and cols[6]:
            types[cols[0]] = json.loads(cols[6]).get("page_type", "")
    out = []
    with (data / "gold.jsonl").open(encoding="utf-8") as f:
        for line in f:
            g = json.loads(line)
            if types.get(g["id"]) == "product":
                out.append((g["id"], data / g["page"], g["text"]))
    return sorted(out)


def site_name(page_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", page_id.replace("/", "-")) + ".html"


def build(out_dir: Path, bench: Path = DEFAULT_BENCH) -> tuple[Path, list[dict]]:
    """The static site of wcxb-dev's product pages in out_dir and its questions (module docstring)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    queries: list[dict] = []
    links: list[str] = []
    names: dict[str, list[tuple[str, str]]] = {}  # a product's name -> (page, gold) of its pages
    for page_id, path, gold in product_pages(bench):
        html = gzip.decompress(path.read_bytes())
        rel = site_name(page_id)
        (out_dir / rel).write_bytes(html)
        links.append(f'<li><a href="{rel}">{page_id}</a></li>')
        name, facts = questions_for(html, gold)
        if not name:
            continue
        names.setdefault(norm(name), []).append((rel, norm(gold)))
        for label, value, layout in facts:
            queries.append({"id": f"product-qa-{len(queries) + 1:04d}", "query": question(label, name),
                            "pages": [rel], "answers": [value], "kind": layout, "name": norm(name)})
    # the same product captured twice (two pages of one name): each answers the other's questions
    # when its gold says the answer too (docs-dev's rule: every page that answers is listed)
    for q in queries:
        rel = q["pages"][0]
        q["pages"] += [r for r, g in names[q.pop("name")] if r != rel and norm(q["answers"][0]) in g]
    (out_dir / "index.html").write_text(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Product pages</title></head><body>"
        f"<h1>Product pages</h1><ul>{''.join(links)}</ul></body></html>", encoding="utf-8")
    return out_dir, queries


def _has(texts: list[str], answers: list[str]) -> bool:
    ts = [norm(t) for t in texts]
    return any(norm(a) in t for a in answers for t in ts)


def kept(site: Path, queries: list[dict], peer: bool = True) -> dict[str, dict[str, bool]]:
    """Per question id: answer in blockcrawl's chunks of its pages (answer kept), in their
    extracted text (before site dedup and chunking), in trafilatura's text (peer)."""
    sys.path.insert(0, str(ROOT))
    from blockcrawl.extraction.api import extract
    from blockcrawl.pipeline import SitePipeline

    # every page of the site in path order, index.html included, as bench/qa.py runs it: site
    # dedup drops a block seen on an earlier page, so the pages before one change what it keeps
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    pipe = SitePipeline(mode="main")  # the crawl's defaults
    chunks: dict[str, list[str]] = {}
    texts: dict[str, list[str]] = {}
    traf: dict[str, list[str]] = {}
    for rel in pages:
        html = (site / rel).read_bytes()
        url = f"http://127.0.0.1:8002/{rel}"  # bench/qa.py's address of the set
        r = pipe.process(html, url)
        chunks[rel] = [c.text for c in r.chunks]
        doc = extract(html, url, info=False)
        texts[rel] = [doc.text] + [b.text for b in doc.blocks]
        if peer:
            import trafilatura
            traf[rel] = [trafilatura.extract(html.decode("utf-8", "replace")) or ""]
    out = {}
    for q in queries:
        ps = q["pages"]
        out[q["id"]] = {"chunks": any(_has(chunks[r], q["answers"]) for r in ps),
                        "extracted": any(_has(texts[r], q["answers"]) for r in ps),
                        "trafilatura": peer and any(_has(traf.get(r, []), q["answers"]) for r in ps)}
    return out


def shop_kept(layout: str, n: int = 50) -> tuple[float, int, int]:
    """The shop fixture (tests/support/shopsite.py, product template `layout`) through one site pipeline
    with the crawl's defaults, in crawl order: (share of the books' author, publisher, ISBN-13 and
    publication date found in a chunk of the book's page, chunks of product pages that hold
    another book's title or a rating count, chunks of product pages)."""
    sys.path.insert(0, str(ROOT))
    from blockcrawl.pipeline import SitePipeline
    from tests.support.shopsite import books, shop_routes

    catalogue = books(n)
    routes = shop_routes(catalogue, layout)
    pipe = SitePipeline(mode="main")
    order = ["/"] + [p for p in routes if p.startswith("/category/")] + [f"/{b.slug}" for b in catalogue]
    chunks = {p: [c.text for c in pipe.process(routes[p].body, "http://127.0.0.1:8000" + p).chunks] for p in order}
    found = total = furniture = count = 0
    for b in catalogue:
        cs = chunks[f"/{b.slug}"]
        for fact in (b.author, b.publisher, b.isbn, b.published):
            total += 1
            found += _has(cs, [fact])
        others = [o.title for o in catalogue if o.title != b.title and o.title not in b.title]
        furniture += sum(any(t in c for t in others) or "Ratings" in c for c in cs)
        count += len(cs)
    return found / total, furniture, count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--out", type=Path, help="write the site and queries.jsonl here (default: a temp dir)")
    ap.add_argument("--missed", type=int, default=0, metavar="K", help="print K questions whose answer is lost")
    ap.add_argument("--no-trafilatura", action="store_true")
    args = ap.parse_args(argv)
    tmp = None
    out = args.out
    if out is None:
        tmp = tempfile.mkdtemp(prefix="product-qa-")
        out = Path(tmp)
    try:
        site, queries = build(out, args.bench)
        with (site / "queries.jsonl").open("w", encoding="utf-8") as f:
            for q in queries:
                f.write(json.dumps(q) + "\n")
        res = kept(site, queries, peer=not args.no_trafilatura)
        n = len(queries)
        pages = len({q["pages"][0] for q in queries})
        print(f"{n} questions on {pages} of {len(list(site.glob('*.html'))) - 1} product pages")
        by_kind = Counter(q["kind"] for q in queries)
        cols = ("chunks", "extracted", "trafilatura")
        print(f"{'layout':<14}{'n':>5}" + "".join(f"{c:>13}" for c in cols))
        for kind in [*sorted(by_kind), "all"]:
            qs = queries if kind == "all" else [q for q in queries if q["kind"] == kind]
            row = "".join(f"{sum(res[q['id']][c] for q in qs) / len(qs):>13.3f}" for c in cols)
            print(f"{kind:<14}{len(qs):>5}{row}")
        print("shop fixture (tests/support/shopsite.py, 50 books, 4 facts each): layout, answer kept, "
              "chunks of other books or ratings / chunks of product pages")
        for layout in ("list", "table", "mixed"):
            share, furniture, count = shop_kept(layout)
            print(f"  {layout:<6} {share:.3f}  {furniture} / {count}")
        if args.missed:
            lost = [q for q in queries if not res[q["id"]]["chunks"]][:args.missed]
            for q in lost:
                print(f"  lost: {q['pages'][0]}  {q['query']}  -> {q['answers'][0]!r} ({q['kind']})")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
