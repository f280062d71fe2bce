"""Small valid PDFs written by hand (no PDF library): pages of text lines in Helvetica at given
sizes, an optional two-level outline (bookmarks) and a document title."""
from __future__ import annotations


def _s(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def make_pdf(pages: list[list[tuple[float, str]]], outline: list[tuple[int, str, int]] | None = None,
             title: str | None = None) -> bytes:
    """pages: per page, (font size, line) from the top; outline: (level 0/1, title, page index)."""
    objs: list[str] = []  # object i + 1

    def add(body: str) -> int:
        objs.append(body)
        return len(objs)

    catalog = add("")  # filled in at the end
    pages_id = add("")
    font = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    page_ids = []
    for lines in pages:
        y, ops = 800.0, []
        for size, line in lines:
            ops.append(f"BT /F1 {size:g} Tf 1 0 0 1 72 {y:g} Tm {_s(line)} Tj ET")
            y -= size * 1.4
        stream = "\n".join(ops)
        content = add(f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream")
        page_ids.append(add(f"<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 595 842] "
                            f"/Resources << /Font << /F1 {font} 0 R >> >> /Contents {content} 0 R >>"))
    objs[pages_id - 1] = (f"<< /Type /Pages /Kids [{' '.join(f'{p} 0 R' for p in page_ids)}] "
                          f"/Count {len(page_ids)} >>")
    extra = ""
    if outline:
        root = add("")
        # items: [id, title, page, parent id, children]
        tops: list[list] = []
        for level, text, page in outline:
            item = [add(""), text, page, root, []]
            if level == 0 or not tops:
                tops.append(item)
            else:
                item[3] = tops[-1][0]
                tops[-1][4].append(item)

        def fill(items: list[list]) -> None:
            for k, (oid, text, page, parent, kids) in enumerate(items):
                d = f"<< /Title {_s(text)} /Parent {parent} 0 R /Dest [{page_ids[page]} 0 R /XYZ null null null]"
                if k:
                    d += f" /Prev {items[k - 1][0]} 0 R"
                if k + 1 < len(items):
                    d += f" /Next {items[k + 1][0]} 0 R"
                if kids:
                    d += f" /First {kids[0][0]} 0 R /Last {kids[-1][0]} 0 R /Count {len(kids)}"
                    fill(kids)
                objs[oid - 1] = d + " >>"

        fill(tops)
        objs[root - 1] = f"<< /Type /Outlines /First {tops[0][0]} 0 R /Last {tops[-1][0]} 0 R /Count {len(tops)} >>"
        extra = f" /Outlines {root} 0 R"
    objs[catalog - 1] = f"<< /Type /Catalog /Pages {pages_id} 0 R{extra} >>"
    info = add(f"<< /Title {_s(title)} >>") if title else None
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objs):
        offsets.append(len(out))
        out += f"{i + 1} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    trailer = f"<< /Size {len(objs) + 1} /Root {catalog} 0 R" + (f" /Info {info} 0 R" if info else "") + " >>"
    out += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def report(pages: int = 5) -> bytes:
    """A report with an outline: 1 Introduction (p. 1), 2 Methods (p. 2, with 2.1 Data on p. 3)..."""
    body = [[(18, "1 Introduction"), (10, "The crawler reads the web politely and keeps the text.")],
            [(18, "2 Methods"), (10, "We fetch pages with aiohttp and parse them with lexbor.")],
            [(14, "2.1 Data"), (10, "The data set holds pages from many sites of the web.")],
            [(10, "More method details continue on page four of the report.")]]
    while len(body) < pages:
        body.append([(18, f"{len(body) + 1} Appendix"), (10, f"Appendix text number {len(body)} of the report.")])
    outline = [(0, "1 Introduction", 0), (0, "2 Methods", 1), (1, "2.1 Data", 2)]
    outline += [(0, f"{k + 1} Appendix", k) for k in range(4, pages)]
    return make_pdf(body, outline, title="Report")
