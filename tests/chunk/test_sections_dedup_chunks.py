"""Seed 000: the Britannica example over two pages of one site."""
from blockcrawl import SitePipeline, extract_blocks
from blockcrawl.chunk import WordTokenizer, default_tokenizer

PAGE1 = """<body>
  <div>Britannica contains a lot of information.</div>
<div>
  <h1>Europe Countries</h1>
  <div>
    <h2>Germany
    </h2>
    <p>Germany, officially Federal Republic of Germany, German Deutschland or Bundesrepublik Deutschland, country of north-central Europe, traversing the continent’s main physical divisions, from the outer ranges of the Alps northward across the varied landscape of the Central German Uplands and then across the North German Plain.
    </p>
  </div>
  <div>
    <h2>France
    </h2>
    <p>France, officially French Republic, French France or République Française, country of northwestern Europe. Historically and culturally among the most important nations in the Western world, France has also played a highly significant role in international affairs, with former colonies in every corner of the globe.
    </p>
  </div>
</div>
</body>"""

PAGE2 = """<body>
  <div>Britannica contains a lot of information.</div>
  <div>
  <h1>Asia Countries</h1>
  <div>
    <h2>China
    </h2>
    <p>China, Chinese (Pinyin) Zhonghua or (Wade-Giles romanization) Chung-hua, also spelled (Pinyin) Zhongguo or (Wade-Giles romanization) Chung-kuo, officially People’s Republic of China or Chinese (Pinyin) Zhonghua Renmin Gongheguo or (Wade-Giles romanization) Chung-hua Jen-min Kung-ho-kuo, country of East Asia. It is the largest of all Asian countries and has the largest population of any country in the world.
    </p>
  </div>
  <div>
    <h2>India
    </h2>
    <p>India, country that occupies the greater part of South Asia. Its capital is New Delhi, built in the 20th century just south of the historic hub of Old Delhi to serve as India’s administrative centre. Its government is a constitutional republic that represents a highly diverse population consisting of thousands of ethnic groups and likely hundreds of languages.
    </p>
  </div>
  </div>
</body>"""

BRITANNICA = "Britannica contains a lot of information."


def _site(**kw):
    # the seed's sizes (100 tokens, overlap 20), counted by the embedding model's tokenizer
    pipe = SitePipeline(chunk_size=100, overlap=20, **kw)
    return pipe.process(PAGE1, "https://example.org/europe"), pipe.process(PAGE2, "https://example.org/asia")


def test_sections_are_separate_blocks_with_their_headings():
    blocks = extract_blocks(PAGE1)
    texts = [b.text for b in blocks]
    germany = next(b for b in blocks if b.text.startswith("Germany: "))
    france = next(b for b in blocks if b.text.startswith("France: "))
    assert germany.text.startswith("Germany: Germany, officially Federal Republic of Germany")
    assert germany.text.endswith("across the North German Plain.")
    assert germany.heading_path == ("Europe Countries", "Germany")
    assert france.text.startswith("France: France, officially French Republic")
    assert "Germany" not in france.text and "German" not in france.text
    assert "France" not in germany.text
    assert "Europe Countries:" in texts  # a heading with only sub-blocks is a block of its own
    assert texts[0] == BRITANNICA


def test_full_heading_path_prefix():
    texts = [b.text for b in extract_blocks(PAGE1, full_path=True)]
    assert any(t.startswith("Europe Countries > Germany: Germany, officially") for t in texts)
    assert "Europe Countries:" in texts


def test_repeated_block_is_kept_once_over_the_site():
    r1, r2 = _site()
    all_chunks = r1.chunks + r2.chunks
    assert sum(BRITANNICA in c.text for c in all_chunks) == 1
    assert any(c.text == BRITANNICA for c in r1.chunks)
    assert r2.duplicates == 1
    # without dedup both pages keep it: the test above can fail
    r1, r2 = _site(dedup=False)
    assert sum(BRITANNICA in c.text for c in r1.chunks + r2.chunks) == 2


def test_long_china_block_becomes_overlapping_chunks():
    _, r2 = _site()
    china = [c for c in r2.chunks if c.heading_path[-1:] == ("China",)]
    assert len(china) >= 2
    assert [c.chunk_index for c in china] == list(range(len(china)))
    tok = default_tokenizer()
    assert tok.name == "all-MiniLM-L6-v2"
    for c in china:
        assert c.text.startswith("China: ")
        assert tok.count([c.text])[0] <= 100
    # consecutive chunks overlap: the tail of one is the head of the next
    first = china[0].text.removeprefix("China: ").split()
    second = china[1].text.removeprefix("China: ").split()
    assert any(first[-k:] == second[:k] for k in range(3, 25))
    # chunks cut between words, and nothing of India leaks into China
    body = next(b for b in r2.blocks if b.heading_path[-1:] == ("China",)).body
    for c in china:
        piece = c.text.removeprefix("China: ")
        assert piece in body
        assert "India" not in piece
    india = [c for c in r2.chunks if c.heading_path[-1:] == ("India",)]
    assert len(india) == 1 and "China" not in india[0].text


def test_plain_scraping_baseline_mixes_sections():
    pipe = SitePipeline(mode="plain", chunk_size=100, overlap=20, tokenizer=WordTokenizer())
    r = pipe.process(PAGE1)
    assert len(r.chunks) >= 1
    # the baseline has no section boundaries: some chunk holds text of both countries
    assert any("Germany" in c.text and "France" in c.text for c in r.chunks)
    assert all(c.heading_path == () for c in r.chunks)
