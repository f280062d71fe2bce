"""Fuzzing: seeded random mutations of a handful of varied pages through every front door.

Every mutated page must go through extract(), extract_blocks(), extract_text() and
SitePipeline(mode="main") without an exception and give no chunk over the chunk size (counted
by the model's tokenizer, as the index does). The fast tier (300 pages) runs with the suite;
the full run (2,000 pages) is marked slow: `pytest -m slow tests/test_fuzz.py`.

No call may cost more than RATE_LIMIT times the run's median CPU per input byte (a page counted as
at least the median page size, so small pages are not judged by their fixed cost). Seen at most
26x over 300 pages (a text-heavy page); a step quadratic in a 100 KB page costs thousands of
times. A ratio of calls in the same run, not a number of seconds: see tests/support/scaling.py.
"""
from __future__ import annotations

import gc
import random
import statistics
import time
from typing import Any

import pytest

from blockcrawl import SitePipeline, extract, extract_blocks, extract_text

CHUNK_SIZE = 100
RATE_LIMIT = 300

_PARA = ("The committee met on Tuesday to review the budget for the new library wing. Members agreed that "
         "the reading rooms need better lighting, and that the archive must be kept dry. ")
SEEDS: list[bytes] = [
    # an article with an outline, navigation and a footer
    ("<!DOCTYPE html><html><head><title>Library news</title><meta charset='utf-8'>"
     "<style>p{color:red}</style><script>var a = '<p>not text</p>';</script></head><body>"
     "<nav><a href='/'>Home</a> | <a href='/news'>News</a></nav><article><h1>Library news</h1>"
     + "".join(f"<h2>Section {i}</h2><p>{_PARA * 3}</p><p><b>Bold</b> and <i>it</i>alic words.</p>"
               for i in range(6))
     + "</article><footer>© 2026 Town library</footer></body></html>").encode(),
    # a data table and a form
    ("<html><body><h1>Prices</h1><table><tr><th>Item</th><th>Price</th></tr>"
     + "".join(f"<tr><td>Item {i}</td><td>{i * 3}.50 €</td></tr>" for i in range(60))
     + "</table><form><label>Name <input name=n></label><select><option>a<option>b</select>"
     "<textarea>type here</textarea><button>Send</button></form></body></html>").encode(),
    # Japanese without spaces, utf-8 declared in the header only
    ("<html><body><h1>日本語のページ</h1><div><p>"
     + "日本語の文章です。これはテストの段落で、句読点があります！本当ですか？" * 80
     + "</p><ul>" + "".join(f"<li>項目{i}です。</li>" for i in range(30)) + "</ul></div></body></html>").encode(),
    # Russian in windows-1251, declared by <meta http-equiv>
    ("<html><head><meta http-equiv='Content-Type' content='text/html; charset=windows-1251'></head><body>"
     "<h1>Новости</h1>" + "<p>Привет, мир! Это тестовая страница на русском языке. </p>" * 40
     + "</body></html>").encode("cp1251"),
    # lists, comments, entities, a <pre> and nested sections
    ("<html><body><!-- a comment <p>hidden</p> --><main><section><h2>Lists &amp; code</h2><ul>"
     + "".join(f"<li>Point {i} &mdash; detail &lt;{i}&gt;</li>" for i in range(40))
     + "</ul><pre>def f(x):\n    return x * 2\n</pre><section><h3>Nested</h3><p>" + _PARA * 5
     + "</p></section></section></main></body></html>").encode(),
    # Thai and a long unbroken URL
    ("<html><body><div><h2>ภาษาไทย</h2><p>" + "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำในประโยค" * 60 + "</p><p>"
     + "https://example.org/" + "/".join(f"seg{i}-part_{i}.html?x={i}" for i in range(400))
     + "</p></div></body></html>").encode(),
]

_TAGS = ["div", "p", "ul", "li", "span", "table", "tr", "td", "section", "b", "a", "Div", "h2", "pre", "select"]


def _mutate(rng: random.Random, page: bytes) -> bytes:
    """One to three seeded random mutations of page."""
    data = bytearray(page)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(11)
        n = len(data)
        if kind == 0 and n:  # byte flips
            for _ in range(rng.randint(1, 50)):
                data[rng.randrange(n)] = rng.randrange(256)
        elif kind == 1 and n:  # truncation
            del data[rng.randrange(n):]
        elif kind in (2, 3):  # delete or duplicate a tag
            starts = [i for i in range(len(data)) if data[i] == 0x3C][:5000]
            if starts:
                a = rng.choice(starts)
                b = data.find(b">", a)
                b = len(data) if b < 0 else b + 1
                tag = bytes(data[a:b])
                if kind == 2:
                    del data[a:b]
                else:
                    data[a:a] = tag * rng.randint(1, 2000)
        elif kind == 4:  # deep nesting
            t = rng.choice(_TAGS)
            depth = rng.randint(100, 6000)
            at = rng.randrange(len(data) + 1)
            data[at:at] = (f"<{t}>x" * depth).encode() + (f"</{t}>" * rng.randint(0, depth)).encode()
        elif kind == 5:  # huge attribute
            at = rng.randrange(len(data) + 1)
            value = rng.choice([b"x", b"&amp;", b"\"'", b" a=b "]) * rng.randint(1000, 100_000)
            data[at:at] = b'<div title="' + value + (b'">text</div>' if rng.random() < 0.7 else b"")
        elif kind == 6:  # random bytes: a run inside, or the whole body
            junk = rng.randbytes(rng.randint(1, 20_000))
            if rng.random() < 0.3:
                data = bytearray(junk)
            else:
                at = rng.randrange(len(data) + 1)
                data[at:at] = junk
        elif kind == 7:  # mixed encodings
            text = rng.choice(["Grüße aus Köln", "Привет", "日本語テキスト", "안녕하세요", "ภาษาไทย", "Ελληνικά"])
            enc = rng.choice(["utf-8", "utf-16-le", "utf-16", "cp1252", "cp1251", "shift_jis", "euc-kr", "gb18030",
                              "iso2022_jp", "utf-7", "utf-32"])
            at = rng.randrange(len(data) + 1)
            data[at:at] = f"<p>{text}</p>".encode(enc, "replace")
        elif kind == 8:  # a charset declaration, honest or not
            label = rng.choice(["utf-7", "cp500", "unicode_escape", "utf-16", "iso-2022-kr", "shift_jis", "koi8-r",
                                "x-user-defined", "no-such", "windows-1252", "utf-8"])
            data[0:0] = f"<meta charset='{label}'>".encode()
        elif kind == 9:  # control characters, NULs, BOMs, stray markup
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.choice([b"\x00" * 10, b"\x0b\x1c\x1d", b"\xef\xbb\xbf", b"\xff\xfe", b"<!--", b"<![CDATA[",
                                      b"<script>", b"</body></html>", b"<", b"&#x110000;&#0;&#xd800;", b"\r\n" * 500])
        else:  # one long word / no spaces
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.choice([b"a", "語".encode(), b"-/", "ไทย".encode()]) * rng.randint(100, 20_000)
    return bytes(data)


def _pages(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [_mutate(rng, rng.choice(SEEDS)) for _ in range(n)]


def _calls(pipe: SitePipeline) -> tuple[tuple[str, Any], ...]:
    return (("extract", extract), ("extract_blocks", extract_blocks), ("extract_text", extract_text),
            ("pipeline", pipe.process))


def run_fuzz(n: int, seed: int) -> dict[str, object]:
    from blockcrawl.chunk import default_tokenizer

    tok = default_tokenizer()
    pipe = SitePipeline(mode="main", chunk_size=CHUNK_SIZE, overlap=20, tokenizer=tok)
    failures: list[str] = []
    timed: dict[str, list[tuple[float, int, int]]] = {}  # call -> (CPU s, bytes, page)
    total = 0.0
    chunks = 0
    warm = SitePipeline(mode="main", chunk_size=CHUNK_SIZE, overlap=20, tokenizer=tok)  # its own dedup state
    for _, call in _calls(warm):
        call(SEEDS[0], "https://example.org/warm")  # lazy imports are not the first page's cost
    for i, page in enumerate(_pages(n, seed)):
        url = f"https://example.org/p{i}"
        if i % 25 == 0:
            gc.collect()
        for name, call in _calls(pipe):
            # the collector runs between the timed calls: a full collection landing in one call
            # (0.3 s of CPU in a process holding the tokenizer) is no cost of that page
            gc.disable()
            t = time.process_time()
            try:
                out = call(page, url)
            except Exception as e:  # noqa: BLE001 - the point of the test
                failures.append(f"page {i} {name}: {type(e).__name__}: {e}")
                continue
            finally:
                dt = time.process_time() - t
                gc.enable()
            total += dt
            timed.setdefault(name, []).append((dt, len(page), i))
            if name == "pipeline":
                chunks += len(out.chunks)
                real = tok.count([c.text for c in out.chunks])
                for c, r in zip(out.chunks, real):
                    if c.n_tokens > CHUNK_SIZE or r > CHUNK_SIZE:
                        failures.append(f"page {i}: chunk of {c.n_tokens} ({r}) tokens")
    slowest = (0.0, "", -1)
    for name, rows in timed.items():
        size = statistics.median(b for _, b, _ in rows)
        rate = max(statistics.median(dt / max(b, size) for dt, b, _ in rows), 1e-12)
        for dt, b, i in rows:
            x = dt / (rate * max(b, size))
            slowest = max(slowest, (round(x, 1), name, i))
            if x > RATE_LIMIT:
                failures.append(f"page {i} {name}: {dt:.3f} s, {x:.0f}x the median CPU per byte")
    return {"pages": n, "failures": failures, "slowest": slowest, "cpu_s": total, "chunks": chunks}


@pytest.mark.slow
def test_fuzz_fast_tier():
    res = run_fuzz(300, seed=1)
    assert res["failures"] == [], res["failures"][:10]
    assert res["chunks"] > 300  # the mutated pages still give text


@pytest.mark.slow
def test_fuzz_2000_pages():
    res = run_fuzz(2000, seed=2)
    print({k: v for k, v in res.items() if k != "failures"})
    assert res["failures"] == [], res["failures"][:10]


if __name__ == "__main__":  # python tests/test_fuzz.py [pages] [seed]: the figures of a run
    import sys

    r = run_fuzz(int(sys.argv[1]) if len(sys.argv) > 1 else 2000, int(sys.argv[2]) if len(sys.argv) > 2 else 2)
    print({k: v for k, v in r.items() if k != "failures"})
    print("\n".join(r["failures"][:50]))
