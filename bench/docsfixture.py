"""A generated documentation site with code (a 500-page docs fixture with code), for
bench/crawl_index.py and bench/embed_variants.py. All text is written here and recombined by a seeded
random generator: no third-party content, nothing read from /work/shared.

Each page has what real generated docs have: a shared template (a sidebar listing the section's
pages, a top bar of sections, a footer), a title, prose paragraphs, code blocks with long tokens
(dotted names, URLs, flags, hex constants: the tokens that once made the chunker slide windows),
a table of options with a header row, and "see also" links. ~900 words a page on average.
"""
from __future__ import annotations

import random
from html import escape

SECTIONS = ["getting-started", "configuration", "storage", "networking", "scheduling", "security",
            "plugins", "command-line", "http-api", "python-api", "deployment", "monitoring", "logging",
            "caching", "queues", "migrations", "testing", "packaging", "templates", "search",
            "indexing", "replication", "backups", "performance", "troubleshooting"]
NOUNS = ["worker", "queue", "store", "index", "request", "session", "token", "record", "batch", "cache",
         "handler", "route", "schema", "field", "table", "snapshot", "segment", "replica", "shard",
         "lease", "timeout", "retry", "connection", "pool", "buffer", "stream", "channel", "plugin",
         "template", "manifest", "bundle", "archive", "checksum", "header", "payload", "cursor"]
VERBS = ["opens", "closes", "reads", "writes", "flushes", "retries", "validates", "rejects", "accepts",
         "schedules", "compacts", "merges", "splits", "copies", "locks", "releases", "renews", "drops",
         "rebuilds", "replays", "signs", "verifies", "encodes", "decodes", "streams", "caches"]
ADJS = ["durable", "optional", "default", "shared", "local", "remote", "stale", "fresh", "partial",
        "empty", "large", "small", "first", "last", "pending", "active", "idle", "broken", "signed",
        "compressed", "encrypted", "ordered", "unique", "nested", "temporary", "persistent"]
ADVS = ["once", "again", "at startup", "on shutdown", "in the background", "before the next batch",
        "after a timeout", "when the pool is full", "for every request", "only on the leader",
        "unless disabled", "in order", "at most once", "while holding the lock", "between two runs"]
REASONS = ["so that a crash loses at most one batch", "because readers never block the writer",
           "which keeps memory bounded", "so the next run starts where this one stopped",
           "because the server may close idle connections", "which makes retries safe",
           "so that two processes never write the same file", "because clocks drift between hosts",
           "which avoids a full scan", "so a slow client cannot stall the others"]
TYPES = ["int", "float", "bool", "string", "duration", "path", "url", "list[string]", "bytes"]


def _sentence(r: random.Random) -> str:
    a, n, v, n2 = r.choice(ADJS), r.choice(NOUNS), r.choice(VERBS), r.choice(NOUNS)
    forms = [f"The {a} {n} {v} its {n2} {r.choice(ADVS)}",
             f"Each {n} {v} the {r.choice(ADJS)} {n2}, {r.choice(REASONS)}",
             f"When a {n} is {a}, the service {v} the {n2} {r.choice(ADVS)}",
             f"A {n2} that {v} a {a} {n} is logged with its id",
             f"Set the option below if your {n} {v} {r.choice(ADJS)} {n2}s {r.choice(ADVS)}",
             f"By default nothing {v} a {n2}: the {n} does it {r.choice(ADVS)}, {r.choice(REASONS)}"]
    return r.choice(forms) + "."


def _para(r: random.Random, k: int) -> str:
    return "<p>" + " ".join(_sentence(r) for _ in range(k)) + "</p>"


def _code(r: random.Random, sec: str, page: int) -> str:
    mod = f"acme.{sec.replace('-', '_')}.{r.choice(NOUNS)}_{r.choice(NOUNS)}"
    cls = "".join(w.title() for w in (r.choice(ADJS), r.choice(NOUNS), "Config"))
    url = f"https://docs.example.org/{sec}/{r.choice(NOUNS)}/{page}/reference.html#{r.choice(NOUNS)}-{r.choice(VERBS)}"
    lines = [f"from {mod} import {cls}, open_{r.choice(NOUNS)}",
             "",
             f"cfg = {cls}(timeout={r.randint(1, 90)}, retries={r.randint(0, 9)}, "
             f"{r.choice(NOUNS)}_dir=\"/var/lib/acme/{sec}/{r.choice(NOUNS)}s\")",
             f"with open_{r.choice(NOUNS)}(cfg, url=\"{url}\") as h:",
             f"    for {r.choice(NOUNS)} in h.{r.choice(VERBS)}(limit={r.randint(10, 5000)}):",
             f"        h.{r.choice(VERBS)}({r.choice(NOUNS)}, checksum=0x{r.getrandbits(64):016x})",
             f"# acme-{sec} --{r.choice(NOUNS)}-{r.choice(NOUNS)}=/etc/acme/{sec}.{r.choice(NOUNS)}.toml "
             f"--log-level=debug --{r.choice(ADJS)}-{r.choice(NOUNS)}s"]
    return "<pre><code class=\"language-python\">" + escape("\n".join(lines)) + "</code></pre>"


def _table(r: random.Random, sec: str) -> str:
    rows = []
    for _ in range(r.randint(4, 9)):
        name = f"{sec}.{r.choice(NOUNS)}_{r.choice(NOUNS)}"
        rows.append(f"<tr><td><code>{name}</code></td><td>{r.choice(TYPES)}</td><td>{r.randint(0, 600)}</td>"
                    f"<td>{_sentence(r)}</td></tr>")
    return ("<table><caption>Options</caption><thead><tr><th>Option</th><th>Type</th><th>Default</th>"
            "<th>Description</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def docs_site(pages: int = 500, seed: int = 24) -> dict[str, bytes]:
    """path -> HTML of a docs site of `pages` pages (plus "/", the home page linking every section)."""
    r = random.Random(seed)
    per = -(-pages // len(SECTIONS))
    paths = [(s, i) for s in SECTIONS for i in range(per)][:pages]
    by_sec: dict[str, list[int]] = {}
    for s, i in paths:
        by_sec.setdefault(s, []).append(i)
    top = "".join(f'<a href="/{s}/0.html">{s.replace("-", " ").title()}</a> ' for s in by_sec)
    out: dict[str, bytes] = {}
    for s, i in paths:
        title = f"{s.replace('-', ' ').title()}: {r.choice(ADJS).title()} {r.choice(NOUNS)}s ({i})"
        side = "".join(f'<li><a href="/{s}/{j}.html">{s} {j}</a></li>' for j in by_sec[s])
        body = [f"<h1>{escape(title)}</h1>", _para(r, r.randint(3, 6))]
        for k in range(r.randint(2, 4)):
            body.append(f"<h2>{r.choice(VERBS).title()} the {r.choice(NOUNS)} ({k + 1})</h2>")
            body.append(_para(r, r.randint(3, 7)))
            if r.random() < 0.8:
                body.append(_code(r, s, i))
            body.append(_para(r, r.randint(2, 5)))
            if r.random() < 0.35:
                body.append(_table(r, s))
        also = r.sample(paths, 3)
        body.append("<h2>See also</h2><ul>" + "".join(f'<li><a href="/{a}/{b}.html">{a} {b}</a></li>'
                                                        for a, b in also) + "</ul>")
        html = (f"<!doctype html><html><head><title>{escape(title)} - Acme docs</title></head><body>"
                f"<header><nav class=\"top\">{top}</nav></header>"
                f"<aside class=\"sidebar\"><ul>{side}</ul></aside>"
                f"<main><article>{''.join(body)}</article></main>"
                "<footer>Acme documentation. Written for this benchmark.</footer></body></html>")
        out[f"/{s}/{i}.html"] = html.encode()
    home = "".join(f'<li><a href="/{s}/0.html">{s}</a></li>' for s in by_sec)
    out["/"] = f"<html><head><title>Acme docs</title></head><body><ul>{home}</ul></body></html>".encode()
    return out
