"""Chunks that stand on their own: small blocks of one section packed into one chunk, and every
chunk's context naming the page (its <title> without the site's name, or its h1)."""
from blockcrawl import SitePipeline, extract_blocks
from blockcrawl.chunk import WordTokenizer, chunk_blocks
from blockcrawl.chunk.identity import page_identity
from blockcrawl.hashing import text_hash
from blockcrawl.records import Block
from blockcrawl.retrieval.format import format_hits
from blockcrawl.retrieval.hit import Hit

TOK = WordTokenizer()


def section(heading: str, bodies: list[str], start: int = 0) -> list[Block]:
    """One block per body under heading, as a page of one <div> per item gives them."""
    return [Block(f"{heading}: {b}", b, (heading,), "html/body/div/div", start + i, "http://x.test/",
                  text_hash(heading + b)) for i, b in enumerate(bodies)]


def test_small_blocks_of_one_section_are_packed_up_to_the_budget():
    methods = section("Methods", [f"method item {i} is short." for i in range(12)])
    notes = section("Notes", ["one lone note here."], 12)
    attrs = section("Attributes", [f"attr item {i} is short." for i in range(30)], 13)
    chunks = chunk_blocks(methods + notes + attrs, size=100, overlap=8, tokenizer=TOK)
    got = [c for c in chunks if c.heading_path == ("Methods",)]
    assert len(got) == 1 and all(f"method item {i} is short." in got[0].text for i in range(12))
    assert got[0].text.startswith("Methods: method item 0") and got[0].block_position == 0
    # a section too long for one chunk: runs that fill the budget, in order, nothing lost or repeated
    got = [c for c in chunks if c.heading_path == ("Attributes",)]
    assert 1 < len(got) < 30 and all(c.n_tokens <= 100 for c in got)
    assert [c.n_tokens for c in got] == [TOK.count([c.text])[0] for c in got]
    joined = " ".join(c.text.replace("Attributes: ", "") for c in got).split()
    assert [int(w) for w, nxt in zip(joined, joined[1:]) if nxt == "is"] == list(range(30))
    # sections are never merged: the lone note stays its own (small, but its whole section)
    assert [c.text for c in chunks if c.heading_path == ("Notes",)] == ["Notes: one lone note here."]


def test_tables_and_long_blocks_are_not_packed():
    html = ("<body><h2>Data</h2><p>intro line.</p><table><tr><th>Year</th><th>Title</th></tr>"
            "<tr><td>2003</td><td>Octane</td></tr><tr><td>2004</td><td>Other</td></tr></table>"
            "<p>outro line.</p><p>" + "long " * 80 + "</p></body>")
    chunks = chunk_blocks(extract_blocks(html), size=40, overlap=4, tokenizer=TOK)
    table = [c for c in chunks if "Octane" in c.text]
    assert len(table) == 1 and "intro" not in table[0].text and "outro" not in table[0].text
    assert not any("intro" in c.text and "outro" in c.text for c in chunks)  # the table lies between
    assert all(c.n_tokens <= 40 for c in chunks)


def test_page_identity_strips_the_site_name():
    assert page_identity("NLTK :: nltk.tokenize.punkt module", "nltk.tokenize.punkt module¶") == \
        "nltk.tokenize.punkt module"
    assert page_identity("The Amber Mill by Ada Byrne | Lantern Lane Books", "The Amber Mill") == \
        "The Amber Mill by Ada Byrne"
    assert page_identity("Widgets - Acme Shop", "", site_name="Acme Shop") == "Widgets"
    assert page_identity("Acme Shop", "Welcome", site_name="Acme Shop") == "Welcome"
    # no evidence which segment is the brand: the title stays whole
    assert page_identity("Mischa Barton - Wikipedia, the free encyclopedia") == \
        "Mischa Barton - Wikipedia, the free encyclopedia"
    assert page_identity("", "Only a heading") == "Only a heading"


def test_every_chunk_names_its_page_when_the_h1_is_outside_the_main_content():
    body = " ".join(f"The record layout field number {i} is described here in plain words." for i in range(30))
    html = ("<html><head><title>RPM package file | Format Gallery</title>"
            '<meta property="og:site_name" content="Format Gallery"></head><body>'
            "<header><h1>RPM package file</h1></header><nav><a href='/'>Home</a></nav>"
            f"<main><article><h2>Format specification in YAML</h2><p>{body}</p>"
            "<h2>Java (read-write) parsing library</h2><p>Import the generated class and read the stream with it "
            "as the examples below show, then close it.</p></article></main></body></html>")
    res = SitePipeline(mode="main", tokenizer=TOK, chunk_size=60, overlap=8).process(html, "http://x.test/rpm.html")
    assert len(res.chunks) > 2
    for c in res.chunks:
        assert c.embed_text.startswith("RPM package file > "), c.embed_text[:80]
        assert "Format Gallery" not in c.embed_text


def test_search_listing_shows_title_and_heading_path():
    hit = Hit(1, 0.5, "http://x.test/rpm.html", ["RPM package file", "Java parsing library"], "import it",
              title="RPM package file | Format Gallery")
    listing = format_hits([hit])
    assert listing.splitlines()[0].endswith("RPM package file | Format Gallery > Java parsing library")
    untitled = format_hits([Hit(2, 0.4, "http://x.test/a", ["Intro"], "text")])
    assert "(untitled) > Intro" in untitled


def test_a_subsection_fragment_joins_its_parent_and_a_lone_heading_gives_way_to_its_subsections():
    lead = section("Book", ["A long enough lead paragraph about the book and its story, in a few words."])
    desc = [Block("Description: Second novel.", "Second novel.", ("Book", "Description"), "html/body/div", 1,
                  "http://x.test/", "d")]
    cat = [Block("Fiction:", "", ("Fiction",), "html/body/h1", 2, "http://x.test/", "f", kind="heading")]
    card = [Block("Card: A card.", "A card.", ("Fiction", "Card"), "html/body/div", 3, "http://x.test/", "c")]
    chunks = chunk_blocks(lead + desc + cat + card, size=100, overlap=8, tokenizer=TOK)
    assert chunks[0].heading_path == ("Book",)
    assert chunks[0].text.endswith("in a few words.\nDescription: Second novel.")  # the subsection's heading kept
    assert chunks[0].n_tokens == TOK.count([chunks[0].text])[0]
    assert [c.text for c in chunks[1:]] == ["Card: A card."]  # no "Fiction:" chunk: the card's path says it


def test_sibling_fragments_pack_under_their_parent_and_lone_headings_are_no_chunks():
    cards = [Block(f"Card {i}: Regular price ${i}.99", f"Regular price ${i}.99", ("Related items", f"Card {i}"),
                   "html/body/div", i, "http://x.test/", f"c{i}") for i in range(6)]
    lone = Block("Care:", "", ("Care",), "html/body/h2", 6, "http://x.test/", "care", kind="heading")
    chunks = chunk_blocks([*cards, lone], size=100, overlap=8, tokenizer=TOK)
    assert len(chunks) == 1 and chunks[0].heading_path == ("Related items",)
    assert chunks[0].text == "\n".join(b.text for b in cards)
    assert chunks[0].n_tokens == TOK.count([chunks[0].text])[0]


def test_top_level_sibling_fragments_pack_and_a_fragment_left_joins_the_next_section():
    tiles = [Block(f"Tile {i}: A short feature.", "A short feature.", (f"Tile {i}",), "html/body/div", i,
                   "http://x.test/", f"t{i}") for i in range(3)]
    notes = section("Notes", ["one lone note here."], 3)
    attrs = section("Attributes", [f"attr item {i} is short." for i in range(8)], 4)
    big = section("Attributes", [" ".join(["attr"] * 60)], 12)
    chunks = chunk_blocks([*tiles, *notes, *attrs], size=100, overlap=8, tokenizer=TOK)
    # the tiles and the note are a fragment together: they join the next section's run, whose
    # heading is said once, inline, before its first block
    assert len(chunks) == 1 and chunks[0].heading_path == ()
    assert chunks[0].text == "\n".join([*(b.text for b in [*tiles, *notes]), attrs[0].text,
                                        *(b.body for b in attrs[1:])])
    assert chunks[0].n_tokens == TOK.count([chunks[0].text])[0]
    assert chunks[0].embed_text.startswith(chunks[0].text) or chunks[0].context == ""
    # no room beside the next section: the fragment stays a chunk of its own
    chunks = chunk_blocks([*tiles, *notes, *attrs, *big], size=50, overlap=8, tokenizer=TOK)
    assert chunks[0].text == "\n".join(b.text for b in [*tiles, *notes])
    assert all(c.n_tokens <= 50 for c in chunks)


def test_a_fragment_between_two_sections_joins_the_one_before_it():
    intro = section("Overview", ["A long enough lead paragraph about the product and its story, in words."] * 2)
    price = [Block("$110", "$110", (), "html/body/div", 2, "http://x.test/", "p")]
    care = section("Care", [" ".join(["Wash cold and dry flat, away from heat."] * 6)] * 2, 3)
    chunks = chunk_blocks([*intro, *price, *care], size=100, overlap=8, tokenizer=TOK)
    assert not any(c.text == "$110" for c in chunks)
    assert chunks[0].heading_path == () and chunks[0].text.endswith("in words.\n$110")
    assert chunks[0].text.startswith("Overview: A long enough") and chunks[0].block_position == 0
    assert all(c.n_tokens == TOK.count([c.text])[0] for c in chunks)


def test_a_run_of_headings_no_text_lies_under_is_kept_as_text():
    def h(text: str, path: tuple[str, ...], pos: int) -> Block:
        return Block(text + ":", "", path, "html/body/h4", pos, "http://x.test/", f"h{pos}", kind="heading")
    lead = section("Doorbell", ["A long enough lead paragraph about the camera and its story, in words."])
    specs = [h("Specs", ("Specs",), 1), h("Image Sensor", ("Specs", "Image Sensor"), 2),
             h("1664p HDR", ("Specs", "1664p HDR"), 3), h("Night Vision", ("Specs", "1664p HDR", "Night Vision"), 4),
             h("IR LEDs (850nm)", ("Specs", "IR LEDs (850nm)"), 5)]
    nested = [h("Manual", ("Manual",), 6), h("Setup", ("Manual", "Setup"), 7)]
    setup = [Block("Setup: Mount the plate and turn it.", "Mount the plate and turn it.", ("Manual", "Setup"),
                   "html/body/p", 8, "http://x.test/", "s")]
    chunks = chunk_blocks([*lead, *specs, *nested, *setup], size=100, overlap=8, tokenizer=TOK)
    text = "\n".join(c.text for c in chunks)
    assert "1664p HDR" in text and "IR LEDs (850nm)" in text and "Image Sensor" in text
    # headings whose text follows them stay out: the text's heading path says them
    assert "Manual:" not in text and chunks[-1].text == "Setup: Mount the plate and turn it."


def test_sibling_sections_of_several_blocks_pack_when_together_they_are_a_fragment():
    cards = []
    for i in range(4):
        cards += [Block(f"Card {i}: $1{i}.99", f"$1{i}.99", ("More like this", f"Card {i}"), "html/body/div", 2 * i,
                        "http://x.test/", f"p{i}"),
                  Block(f"Card {i}: Add to cart", "Add to cart", ("More like this", f"Card {i}"), "html/body/div",
                        2 * i + 1, "http://x.test/", f"a{i}")]
    chunks = chunk_blocks(cards, size=100, overlap=8, tokenizer=TOK)
    assert len(chunks) == 1 and chunks[0].heading_path == ("More like this",)
    # each card's heading once, before its first block
    assert chunks[0].text == "\n".join(b.text if b.hash.startswith("p") else b.body for b in cards)
    assert chunks[0].n_tokens == TOK.count([chunks[0].text])[0]


def test_a_fragment_under_no_heading_does_not_take_the_heading_path_of_the_section_after_it():
    source = [Block("Britannica says so.", "Britannica says so.", (), "html/body/p", 0, "http://x.test/", "s")]
    germany = section("Germany", [" ".join(["Germany lies in central Europe."] * 8)], 1)
    chunks = chunk_blocks([*source, *germany], size=100, overlap=8, tokenizer=TOK)
    assert [c.heading_path for c in chunks] == [(), ("Germany",)]
    assert chunks[1].text == germany[0].text
