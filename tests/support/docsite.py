"""A small documentation site of file-format pages with highlighted code, written for these tests
(self-written text, no third-party content). Each page has a shared template (nav, footer), a
title heading in a <header>, a description, code highlighted the ways real generators write it
(Rouge/Pygments spans with white-space text nodes between them, Shiki-style line spans, tabs and
blank lines, a line-number gutter) and inline code split into spans ("SQLite format 3")."""
from __future__ import annotations

from html import escape

from .crawlsite import Route

FORMATS = [
    ("zip", "ZIP archive", "archive", "PK\\x03\\x04", "local_file", "Compressed files with a central directory."),
    ("png", "PNG image", "image", "\\x89PNG", "chunk", "A lossless raster image made of typed chunks."),
    ("sqlite3", "SQLite database", "database", "SQLite format 3", "page", "A single-file database of b-tree pages."),
    ("gif", "GIF image", "image", "GIF89a", "block", "An indexed-colour image with optional animation frames."),
    ("wav", "WAV audio", "media", "RIFF", "subchunk", "Uncompressed audio samples inside a RIFF container."),
    ("elf", "ELF executable", "executable", "\\x7fELF", "section", "Programs and libraries of Unix-like systems."),
]


def _span(cls: str, text: str) -> str:
    return f'<span class="{cls}">{escape(text, quote=False)}</span>'


def yaml_code(fid: str, magic: str, seq: str) -> str:
    """Rouge-style YAML: every token in a span, the white space between them bare text nodes."""
    lines = [
        [("na", "meta"), ("pi", ":")],
        ["  ", ("na", "id"), ("pi", ":"), " ", ("s", fid)],
        ["  ", ("na", "endian"), ("pi", ":"), " ", ("s", "le")],
        [],
        [("na", "seq"), ("pi", ":")],
        ["  ", ("pi", "-"), " ", ("na", "id"), ("pi", ":"), " ", ("s", "magic")],
        ["    ", ("na", "contents"), ("pi", ":"), " ", ("s", repr(magic))],
        ["  ", ("pi", "-"), " ", ("na", "id"), ("pi", ":"), " ", ("s", seq + "s")],
        ["    ", ("na", "type"), ("pi", ":"), " ", ("s", seq)],
        ["    ", ("na", "repeat"), ("pi", ":"), " ", ("s", "eos")],
    ]
    out = []
    for line in lines:
        out.append("".join(p if isinstance(p, str) else _span(*p) for p in line))
    return "\n".join(out)


def python_code(fid: str, magic: str) -> str:
    """Shiki-style: one span per line, lines joined by bare newlines, indentation in a span."""
    src = [
        f"def is_{fid}(path):",
        f'    """True if the file at path starts like a {fid} file."""',
        "    with open(path, 'rb') as f:",
        f"        head = f.read({len(magic) + 4})",
        "",
        f"    return head.startswith({magic!r})",
    ]
    spans = []
    for line in src:
        indent = line[:len(line) - len(line.lstrip())]
        rest = line.lstrip()
        words = rest.split(" ")
        inner = (f'<span style="color:#999">{indent}</span>' if indent else "") + \
            " ".join(_span("tok", w) for w in words if w)
        spans.append(f'<span class="line">{inner}</span>')
    return '<pre class="shiki"><code>' + "\n".join(spans) + "</code></pre>"


def c_code(seq: str) -> str:
    """Tabs, blank lines and a line-number gutter table (Pygments' `linenos=table`)."""
    body = (f'{_span("k", "struct")} {_span("nc", seq)} {{\n'
            f'\t{_span("kt", "uint32_t")} {_span("n", "length")};\n'
            f'\t{_span("kt", "uint8_t")}  {_span("n", "kind")}[4];\n'
            "\n"
            f'\t{_span("kt", "uint8_t")} *{_span("n", "data")};  {_span("c1", "// length bytes")}\n'
            "};")
    gutter = "\n".join(str(i) for i in range(1, 7))
    return ('<table class="highlighttable"><tr><td class="linenos"><div class="linenodiv"><pre>'
            f'{gutter}</pre></div></td><td class="code"><div class="highlight"><pre><code>{body}</code>'
            "</pre></div></td></tr></table>")


def docs_page(i: int) -> str:
    fid, name, cat, magic, seq, desc = FORMATS[i]
    nav = "".join(f'<li><a href="/{f}.html">{f}</a></li>' for f, *_ in FORMATS)
    return f"""<!DOCTYPE html><html><head><title>{fid}: {name} format specification - Format Gallery</title>
<style>pre {{ background: #eee }}</style></head><body>
<nav class="sidebar"><ul><li><a href="/">Home</a></li>{nav}</ul></nav>
<main><header><h1>{name}</h1><p class="meta">Category: {cat}</p></header>
<section><p>{desc} This page describes the layout of a {name.lower()} file, the fields of its
header and the way a reader walks its {seq}s from the start of the file to its end.</p>
<p>A file of this kind starts with the bytes <code><span class="s">{escape(magic)}</span></code>; a
database starts with <code><span>SQLite</span> <span>format</span> <span>3</span></code> instead.
Readers check these bytes before anything else.</p></section>
<section><h2>Format specification in Kaitai Struct YAML</h2>
<div class="highlight"><pre class="highlight"><code>{yaml_code(fid, magic, seq)}
</code></pre></div></section>
<section><h2>Checking a file in Python</h2>
<p>The shortest check reads the first bytes of the file and compares them.</p>
{python_code(fid, magic)}</section>
<section><h2>The {seq} structure in C</h2>
<p>In C the same {seq} is a structure with a length, a kind and its data.</p>
{c_code(seq)}</section>
</main>
<footer><p>Format Gallery - specifications written for testing. All text on this site is public domain.</p></footer>
</body></html>"""


def docs_routes() -> dict[str, Route]:
    r = {"/robots.txt": Route("User-agent: *\nAllow: /\n", ctype="text/plain")}
    links = "".join(f'<li><a href="/{f}.html">{n}</a></li>' for f, n, *_ in FORMATS)
    r["/"] = Route(f"<!DOCTYPE html><html><head><title>Format Gallery</title></head><body><h1>Format Gallery</h1>"
                   f"<p>Specifications of file formats, one page each.</p><ul>{links}</ul></body></html>")
    for i, (fid, *_) in enumerate(FORMATS):
        r[f"/{fid}.html"] = Route(docs_page(i))
    return r
