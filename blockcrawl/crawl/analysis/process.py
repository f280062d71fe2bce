"""Page analysis off the event loop: parse once, take the links, run the site's SitePipeline.

The pipeline is CPU work (a 5 MB page takes seconds to chunk), and the event loop must keep
answering sockets meanwhile, or requests in flight time out. So pages are analysed in worker
processes (--workers N) or, with --workers 0, in one background thread. Each site is pinned to
one worker, which holds its SitePipeline: pages of a site are processed in the order they were
fetched and its dedup state stays in one place.
"""
from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...errors import ConfigError
from ...extraction.api import DEFAULT_MAX_BYTES, raw_body
from ...extraction.pdf import is_pdf
from ...pipeline import PageResult, PipelineConfig, SitePipeline
from ...records import Block, Chunk, PageInfo
from ..sources.links import PageSignals

if TYPE_CHECKING:
    from ..config import CrawlConfig

# The crawl's pipeline description is the shared PipelineConfig (frozen, slotted, picklable: each
# worker process builds its own SitePipeline per site from it). PipelineSpec, its old name, warns.


def __getattr__(name: str) -> type[PipelineConfig]:
    if name == "PipelineSpec":
        warnings.warn("PipelineSpec is blockcrawl.PipelineConfig now; the old name goes in the next minor "
                      "version", DeprecationWarning, stacklevel=2)
        return PipelineConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# What a crawl stores when given no config: the main content by the default algorithm.
CRAWL_DEFAULT = PipelineConfig(mode="main")


@dataclass(slots=True)
class PageOut:
    title: str
    content_hash: str
    base: str  # URL relative links resolve against (<base href> or the page)
    hrefs: list[str]
    blocks: list[Block] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    duplicates: int = 0
    markdown: str = ""  # the main content as Markdown (extraction.markdown), stored with the page
    error: str | None = None  # why nothing is stored (a PDF encrypted, broken, too long): one log line
    error_kind: str = "pdf"  # the failure's kind in the frontier and the crawl summary
    signals: PageSignals = PageSignals()  # meta robots, canonical, feeds, rel=nofollow links (links.scan)
    info: PageInfo | None = None  # metadata, kind, summary, main text (PageResult.info)
    # site learning: earlier pages of the site re-processed with a newly learned model (stored
    # over the old ones), and the model's JSON to save in the store (PageResult.revised, .model)
    revised: list[PageOut] = field(default_factory=list)
    model: str | None = None
    url: str | None = None  # a revised page's URL (as fetched); None on the page analysed itself


# --------------------------------------------------------------------------- worker side
_PIPES: dict[str, SitePipeline] = {}
_SPEC: PipelineConfig | None = None


def init_state(spec: PipelineConfig) -> None:
    """Set the process's (or the analysis thread's) config; sites get pipelines on first page.
    Worker processes come here from blockcrawl._worker.init, which first ties them to the
    crawler's life."""
    global _SPEC
    _SPEC = spec
    _PIPES.clear()


def _pipe(site: str) -> SitePipeline:
    p = _PIPES.get(site)
    if p is None:
        assert _SPEC is not None
        p = _PIPES[site] = SitePipeline(_SPEC)
    return p


def prime(site: str, pairs: list[tuple[str, str]]) -> int:
    """Feed a site's dedup state with blocks stored before (resume)."""
    d = _pipe(site).deduper
    if d is not None:
        for i in range(0, len(pairs), 1000):
            d.seen_many(pairs[i:i + 1000])
    return len(pairs)


def load_model(site: str, model: str) -> bool:
    """Give a site's pipeline the model stored by an earlier run (resume); False when the
    pipeline cannot take one (an algorithm without site learning)."""
    fn = getattr(_pipe(site), "load_model", None)
    if fn is None:
        return False
    fn(model)
    return True


def finish(site: str) -> PageOut | None:
    """The site has no more pages for now: its pipeline learns a site model on the pages it
    collected, if it still collects (SitePipeline.finish); the revised pages and the model
    come back as a PageOut carrying only those."""
    p = _PIPES.get(site)
    res = p.finish(markdown=True) if p is not None else None
    return None if res is None else page_out(res, "", [])


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def page_out(res: PageResult, base: str, hrefs: list[str], signals: PageSignals | None = None) -> PageOut:
    """The pipeline's result as the engine gets it: the page's info, the earlier pages it revised
    (each with its URL, no links: those were followed when it was first analysed) and the model.
    A result without info (a PDF; a pipeline that makes none) gets one with its text alone, so
    that every page stored by an extracting crawl has its main text in the store."""
    revised = [PageOut(r.title, _digest(r.text), r.url or "", [], r.blocks, r.chunks, r.duplicates, r.markdown,
                       info=_info(r), url=r.url) for r in res.revised if r.url]
    return PageOut(res.title, _digest(res.text), base, hrefs, res.blocks, res.chunks, res.duplicates, res.markdown,
                   signals=signals or PageSignals(), info=_info(res), revised=revised, model=res.model)


def _info(res: PageResult) -> PageInfo:
    return res.info if res.info is not None else PageInfo(text=res.text)


def analyse(site: str, body: bytes, url: str, content_type: str | None, links: bool,
            extract: bool | None = None) -> PageOut:
    """extract: None, the pipeline runs unless the page will not be stored (meta robots
    noindex, or a canonical URL elsewhere on its host: links.canonical_elsewhere), so such a page
    neither costs the pipeline's time nor marks its blocks as seen for the site's dedup (the
    canonical page would then be stored without them); True: always; False: never."""
    from ...parse import load
    from ..sources.links import base_url, canonical_elsewhere, scan
    # a gzip file served as HTML without Content-Encoding: inflated (extraction.api.raw_body)
    body = raw_body(body, _SPEC.max_bytes if _SPEC is not None else DEFAULT_MAX_BYTES)
    if is_pdf(content_type, body):
        return _analyse_pdf(site, body, url)
    dom = load(body, url, content_type)
    # one pass for links and the page's signals (canonical is needed even at max depth)
    base = base_url(dom, url)
    hrefs, signals = scan(dom)
    if not links:
        hrefs, signals = [], signals.replace_links()
    if extract is None:
        extract = not (signals.noindex or canonical_elsewhere(url, base, signals.canonical))
    if (_SPEC is not None and not _SPEC.extract) or not extract:
        title = dom.title()
        return PageOut(title, hashlib.blake2b(body, digest_size=16).hexdigest(), base, hrefs, signals=signals)
    return page_out(_pipe(site).process_dom(dom, markdown=True), base, hrefs, signals)


def _analyse_pdf(site: str, body: bytes, url: str) -> PageOut:
    """A PDF (extraction.pdf): blocks with page numbers in their heading paths, no links. One that
    cannot be read comes back with error set: the crawler logs it and stores nothing."""
    from ...extraction.pdf import PdfError, pdf_blocks

    if _SPEC is not None and not _SPEC.extract:
        return PageOut("", hashlib.blake2b(body, digest_size=16).hexdigest(), url, [])
    try:
        title, blocks = pdf_blocks(body, url, max_chars=_SPEC.max_bytes if _SPEC is not None else DEFAULT_MAX_BYTES,
                                   full_path=_SPEC.full_path if _SPEC is not None else False)
    except PdfError as e:
        return PageOut("", "", url, [], error=str(e))
    except ImportError as e:  # pypdf missing from the environment
        return PageOut("", "", url, [], error=f"PDF support not installed ({e})")
    return page_out(_pipe(site).process_blocks(blocks, url, title, markdown=True), url, [])


def crawl_spec(config: CrawlConfig, spec: PipelineConfig | None) -> PipelineConfig:
    """The pipeline config a crawl runs: `spec` (default CRAWL_DEFAULT) with the two settings a
    crawl owns taken from its CrawlConfig - max_bytes (the fetch cap is the decompression cap)
    and only_articles (the pipeline keeps a non-article's blocks out of the site's dedup, the
    engine stores none of them: set on CrawlConfig alone, a caller would get the second half
    only). A spec asking otherwise than the CrawlConfig is a ConfigError."""
    spec = spec or CRAWL_DEFAULT
    if spec.only_articles and not config.only_articles:
        raise ConfigError("only_articles is a crawl setting: set CrawlConfig(only_articles=True)")
    if spec.max_bytes not in (DEFAULT_MAX_BYTES, config.max_bytes):
        raise ConfigError(f"max_bytes is a crawl setting: set CrawlConfig(max_bytes={spec.max_bytes})")
    if (spec.only_articles, spec.max_bytes) == (config.only_articles, config.max_bytes):
        return spec
    return spec.replace(only_articles=config.only_articles, max_bytes=config.max_bytes)
