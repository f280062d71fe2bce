"""Tables are main content, read as rows that stand alone; chunks carry their page's context."""
from __future__ import annotations

import sqlite3

import blockcrawl
from blockcrawl import SitePipeline, extract_blocks
from blockcrawl.chunk import WordTokenizer, chunk_blocks
from blockcrawl.extraction.tables import data_tables
from blockcrawl.parse import load
from blockcrawl.records import Chunk
from blockcrawl.store import Store
from blockcrawl.store.schema import SCHEMA_VERSION

from ..support.scaling import growth

TOK = WordTokenizer()
PROSE = ("<p>The club had a long history in the national league, with many seasons in the first "
         "division, several cup runs, and a famous stadium that held more than forty thousand people.</p>")


def results_table(n: int = 6) -> str:
    rows = "".join(
        f"<tr><td>{d} April 1961</td><td><a href='/t{d}'>Team {d}</a></td><td><a href='/s{d}'>{d % 4}-1</a></td></tr>"
        for d in range(1, n + 1))
    return ("<table class='wikitable'><caption>League matches</caption>"
            f"<tr><th>Date</th><th>Opponent</th><th>Score</th></tr>{rows}</table>")


def page(body: str, title: str = "Example FC") -> str:
    return f"<html><head><title>{title}</title></head><body>{body}</body></html>"


def test_data_tables_are_told_from_layout_and_navigation():
    layout = ("<table><tr><td><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table></td>"
              "<td>x</td></tr><tr><td>y</td><td>z</td></tr></table>")
    nav = ("<table><tr><th>Links</th><td>" + " ".join(f"<a href='/{i}'>Link {i}</a>" for i in range(9))
           + "</td></tr><tr><th>More</th><td>" + " ".join(f"<a href='/m{i}'>More {i}</a>" for i in range(9))
           + "</td></tr></table>")
    presentation = "<table role='presentation'><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
    one_row = "<table><tr><th>a</th><th>b</th></tr></table>"
    plain_short = "<table>" + "<tr><td>x</td><td>1</td></tr>" * 3 + "</table>"
    plain_long = "<table>" + ("<tr><td>" + "long text " * 40 + "</td><td>side</td></tr>") * 3 + "</table>"
    dom = load(page(layout + nav + presentation + one_row + plain_short + plain_long))
    tables = [i for i in range(len(dom)) if dom.tag[i] == "table"]
    kinds = data_tables(dom)
    # the layout table holds a table: not data; the one inside it is
    assert [kinds.get(t) for t in tables] == [None, "table", None, None, None, "table", None]


def test_table_rows_name_their_cells_and_carry_heading_and_caption():
    blocks = extract_blocks(page("<h2>Results</h2><h3>First Division</h3>" + results_table(2)))
    t = next(b for b in blocks if b.kind == "table")
    assert t.heading_path == ("Results", "First Division")
    assert t.caption == "League matches"
    # rows read behind the header line, which every chunk of the table repeats
    assert t.header == "Date | Opponent | Score"
    assert t.rows == ("1 April 1961 | Team 1 | 1-1", "2 April 1961 | Team 2 | 2-1")
    # the text (Document.text) reads as a grid: header once, a line per row
    assert t.body == "Date | Opponent | Score\n1 April 1961 | Team 1 | 1-1\n2 April 1961 | Team 2 | 2-1"
    assert t.text == "First Division > League matches: " + t.body


def test_spans_groups_bold_headers_and_totals():
    html = ("<table><tr><td><b>Season</b></td><td><b>Club</b></td><td><b>Goals</b></td></tr>"
            "<tr><td colspan=3>Premier League</td></tr>"
            "<tr><td rowspan=2>1999</td><td>Leeds</td><td>4</td></tr>"
            "<tr><td>York</td><td>7</td></tr>"
            "<tr><th>Total</th><th>2 clubs</th><th>11</th></tr></table>")
    t = next(b for b in extract_blocks(html) if b.kind == "table")
    assert t.header == "Season | Club | Goals"
    assert t.rows == ("Premier League: 1999 | Leeds | 4",
                      "Premier League: 1999 | York | 7",  # the rowspan, repeated
                      "Premier League: Total | 2 clubs | 11")  # a total, no header


def test_two_header_rows_nest_their_names():
    html = ("<table><tr><th rowspan=2>Year</th><th colspan=2>Chart</th></tr><tr><th>UK</th><th>US</th></tr>"
            "<tr><td>2004</td><td>45</td><td>—</td></tr></table>")
    t = next(b for b in extract_blocks(html) if b.kind == "table")
    assert t.header == "Year | Chart / UK | Chart / US"
    assert t.rows == ("2004 | 45 | —",)


def test_rows_under_a_later_header_name_their_cells():
    html = ("<table><tr><th>Year</th><th>Album</th></tr><tr><td>2001</td><td>A</td></tr>"
            "<tr><th>Single</th><th>Chart</th></tr><tr><td>B</td><td>3</td></tr>"
            "<tr><td>C</td><td></td><td>x</td></tr></table>")
    t = next(b for b in extract_blocks(html) if b.kind == "table")
    assert t.header == "Year | Album"
    assert t.rows == ("2001 | A", "Single: B | Chart: 3", "Single: C | x")


def test_infobox_is_key_value_lines():
    html = ("<table class='infobox'><tr><th colspan=2>Mischa Barton</th></tr>"
            "<tr><th>Born</th><td>24 January 1986<br>London</td></tr>"
            "<tr><th>Occupation</th><td>Actress, model</td></tr></table>")
    t = next(b for b in extract_blocks(html) if b.kind == "infobox")
    assert t.rows == ("Mischa Barton", "Born: 24 January 1986 London", "Occupation: Actress, model")
    assert t.header == ""
    assert t.body == "\n".join(t.rows)


def test_auto_keeps_a_link_dense_table_after_the_article():
    # Before: the table (short cells, mostly links, no prose) was junk to `auto` and trimmed off
    # the article's end: no score survived in the main content.
    html = page("<div class='content'><h1>Example FC</h1>" + PROSE * 3 + "<h2>Results</h2>" + results_table()
                + "</div><div class='sidebar'><table><tr><th>Ad</th><th>Ad</th></tr><tr><td>buy</td><td>now</td>"
                "</tr></table></div>")
    doc = blockcrawl.extract(html)
    assert "6 April 1961 | Team 6 | 2-1" in doc.text  # rows as lines in the text
    assert "buy" not in doc.text  # a table in page furniture stays out
    res = SitePipeline(mode="main", tokenizer="words").process(html, "https://x.test/")
    assert any("Date | Opponent | Score\n" in c.text and "\n6 April 1961 | Team 6 | 2-1" in c.text
               for c in res.chunks)


def test_table_chunks_hold_whole_rows_behind_the_heading_and_caption():
    html = page("<h1>Example FC</h1><h2>Results</h2>" + results_table(40))
    blocks = extract_blocks(html)
    chunks = [c for c in chunk_blocks(blocks, size=60, overlap=10, tokenizer=TOK, title="Example FC - Wiki")
              if c.heading_path == ("Example FC", "Results")]
    assert len(chunks) > 3
    rows = [r for b in blocks for r in b.rows]
    seen = []
    for c in chunks:
        assert c.text.startswith("Results > League matches: ")
        assert c.context == "Example FC"  # the h1 repeats the title: the heading stands for it
        head, *lines = c.text.removeprefix("Results > League matches: ").split("\n")
        assert head == "Date | Opponent | Score"  # the header line first in every chunk
        assert all(line in rows for line in lines)  # never a cut row
        seen += lines
        assert TOK.count([c.embed_text])[0] <= 60
    assert seen == list(rows)  # every row once, in order, no overlap


def test_a_row_longer_than_the_chunk_is_split_like_text():
    long_cell = "word " * 150
    html = f"<table><tr><th>Name</th><th>Notes</th></tr><tr><td>A</td><td>{long_cell}</td></tr>" \
           "<tr><td>B</td><td>short</td></tr></table>"
    chunks = chunk_blocks(extract_blocks(html), size=50, overlap=5, tokenizer=TOK)
    assert len(chunks) >= 4
    assert chunks[-1].text == "Name | Notes\nB | short"
    assert all(c.text.startswith("Name | Notes\n") for c in chunks)
    assert all(c.n_tokens <= 50 for c in chunks)


def test_every_chunk_carries_title_and_outer_headings_as_context():
    html = page("<h2>History</h2><h3>Early years</h3><p>Founded in 1900 by workers.</p><p>Intro.</p>",
                title="Example FC - Wiki")
    res = SitePipeline(mode="blocks", tokenizer="words").process(html, "https://x.test/")
    c = next(c for c in res.chunks if "Founded" in c.text)
    assert c.text.startswith("Early years: Founded in 1900")  # the text is what the page says
    assert c.context == "Example FC - Wiki > History"
    assert c.embed_text == "Example FC - Wiki > History > Early years: Founded in 1900 by workers.\nIntro."


OLD_FTS = """
CREATE VIRTUAL TABLE chunks_fts USING fts5(text, heading_path, content='chunks', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER chunks_fts_on_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text, heading_path) VALUES (new.id, new.text, new.heading_path);
END;
CREATE TRIGGER chunks_fts_on_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text, heading_path) VALUES ('delete', old.id, old.text, old.heading_path);
END;
INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');
"""


def octane(url: str) -> Chunk:
    return Chunk("Film: Year: 2003 | Title: Octane", url, ("Film",), 0, 0, "h", 8, "Mischa Barton > Filmography")


def test_store_embeds_and_keyword_indexes_the_context(tmp_path):
    path = tmp_path / "s.db"
    with Store(path) as st:
        st.save_page("https://x.test/", [], [octane("https://x.test/")])
        assert st.schema_version == SCHEMA_VERSION
        st.begin_index("test-model", 3)
        assert [t for _, t in st.chunks_to_embed()] == ["Mischa Barton > Filmography > Film: Year: 2003 | Title: Octane"]
        assert st.keyword_ranked("barton octane", 5)[0][0] == 1  # the title matches, in the context
    # a version-3 store, indexed (chunks_fts of two columns), no chunks.context: a writer migrates it
    db = sqlite3.connect(path)
    db.executescript("DROP TRIGGER chunks_fts_on_insert; DROP TRIGGER chunks_fts_on_delete;"
                     "DROP TRIGGER chunks_fts_on_update; DROP TABLE chunks_fts;"
                     "ALTER TABLE chunks DROP COLUMN context;" + OLD_FTS + "PRAGMA user_version=3;")
    db.close()
    with Store(path) as st:
        assert st.schema_version == SCHEMA_VERSION
        assert [t for _, t in st.chunks_to_embed()] == ["Film: Year: 2003 | Title: Octane"]
        st.save_page("https://y.test/", [], [octane("https://y.test/")])  # the triggers fill the new column
        assert [r[0] for r in st.db.execute("SELECT c.url FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
                                            "WHERE chunks_fts MATCH 'barton'")] == ["https://y.test/"]


def test_table_reading_is_linear():
    # 40,000 cells and 2,000 one-cell tables nested in each other: no step per cell may grow.
    # 4x the cells and depth cost < 8x the CPU (linear 4x, quadratic 16x; tests/support/scaling.py); best of
    # 3 interleaved: one run each measured 5.4-6.3x on a quiet machine and 8.2x once in a loaded CI run
    def page(rows: int, depth: int) -> str:
        return ("<table><tr><th>a</th><th>b</th></tr>" + "<tr><td>x</td><td>y</td></tr>" * rows + "</table>"
                + "<table><tr><td>" * depth + "deep" + "</td></tr></table>" * depth)
    out: list = []
    ratio = growth(lambda html: out.append(extract_blocks(html)), page(5000, 500), page(20000, 2000), repeat=3)
    assert ratio < 8, ratio
    assert sum(len(b.rows) for b in out[-1]) == 20000  # the large page's blocks


def test_text_chunks_end_between_sentences():
    # the last sentence start fell in the first 60% of the chunk: it used to be cut mid-sentence
    from blockcrawl import split_text

    short = " ".join(f"s{i}" for i in range(19)) + " end."
    long = " ".join(f"w{i}" for i in range(39)) + " stop."
    chunks = [t for t, _ in split_text(short + " " + long, size=50, overlap=10, tokenizer=TOK)]
    assert chunks[0] == short
    assert chunks[-1].endswith(long)


def test_a_table_is_chunked_as_runs_of_rows_not_a_row_per_chunk():
    # A filmography as Wikipedia writes it. Before, every row named its cells ("Year: 2003 | Title:
    # Octane | Role: ... | Notes: ..."): 40 rows took 4 chunks of 200 model tokens, now 3 (on 300
    # Wikipedia pages a table chunk held 3.8 rows, now 6.0).
    from blockcrawl.chunk import default_tokenizer

    films = "".join(f"<tr><td>{1990 + i}</td><td><i>Film number {i}</i></td><td>Character {i}</td>"
                    f"<td>{'Television film' if i % 3 else ''}</td></tr>" for i in range(40))
    html = page("<h1>Some Actor</h1><h2>Filmography</h2><table class='wikitable'><caption>Film</caption>"
                "<tr><th>Year</th><th>Title</th><th>Role</th><th>Notes</th></tr>" + films + "</table>")
    blocks = extract_blocks(html)
    chunks = [c for c in chunk_blocks(blocks, tokenizer=default_tokenizer(), title="Some Actor - Wiki")
              if c.heading_path == ("Some Actor", "Filmography")]
    assert 2 <= len(chunks) <= 3
    rows = []
    for c in chunks:
        head, *lines = c.text.removeprefix("Filmography > Film: ").split("\n")
        assert head == "Year | Title | Role | Notes"
        rows += lines
    assert rows == [f"{1990 + i} | Film number {i} | Character {i}" + (" | Television film" if i % 3 else "")
                    for i in range(40)]
