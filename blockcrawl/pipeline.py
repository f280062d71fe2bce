"""One page through the stages: parse -> extract -> dedup -> chunk. Site state (the set of
blocks already seen) lives in the SitePipeline, so pages of a site must go through one instance
in the order they were seen.

`PipelineConfig` is the one description of that pipeline: blockcrawl.extract(), SitePipeline,
the crawl workers (it is what they are sent: small and picklable) and both CLIs build from it, so
a default lives in one place (defaults kept per caller drift apart: the CLIs' algorithm and the
crawl's would differ).
"""
from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .chunk import (
    DEFAULT_OVERLAP,
    DEFAULT_SIZE,
    Deduper,
    Tokenizer,
    chunk_blocks,
    chunk_plain,
    get_tokenizer,
)
from .errors import ConfigError
from .extraction import dom_text
from .extraction.api import DEFAULT_ALGORITHM, DEFAULT_MAX_BYTES, blocks_text, main_content, raw_body
from .extraction.blocks import blocks_from_dom
from .extraction.params import DEFAULTS as DEFAULT_PARAMS
from .extraction.params import ExtractionParams
from .extraction.records import KIND as RECORD_KIND
from .extraction.records import page_heading, record_block, said_elsewhere
from .extraction.registry import LEARN_PAGES, Selector, get, validate
from .parse import Dom, load
from .records import Block, Chunk, PageInfo

if TYPE_CHECKING:
    from .extraction.site.learner import SiteLearner
    from .extraction.sitetemplate import TemplateLearner

# algorithms whose pipeline learns a model of each site as pages come (extraction/site,
# extraction/sitetemplate): the crawl stores it and hands it back on --resume
LEARNING = ("site", "auto+template")

MODES = ("blocks", "plain", "text", "main")
TOKENIZER_NAMES = ("model", "words")


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """How to turn pages into blocks and chunks; validated on construction (ConfigError).

    mode: blocks (every block, chunked), main (main-content blocks by `algorithm`, chunked),
    plain (the page text in fixed chunks, the baseline), text (the page text, no chunks).
    tokenizer: 'model' (the embedding model's, or words if not installed), 'words', or the path
    of a tokenizer.json. extract False: parse for links and title only (crawl --no-extract).
    max_bytes: largest body a page may decompress to (a gzip file served as text/html).
    """

    mode: str = "blocks"
    algorithm: str = DEFAULT_ALGORITHM
    chunk_size: int = DEFAULT_SIZE
    overlap: int = DEFAULT_OVERLAP
    tokenizer: str = "model"
    dedup: bool = True
    near_dedup: bool = True
    full_path: bool = False
    extract: bool = True
    max_bytes: int = DEFAULT_MAX_BYTES
    # algorithms `site` and `auto+template`: learn the site model after this many pages, or this
    # many seconds after the first page (checked at each page), whichever comes first
    learn_pages: int = LEARN_PAGES
    learn_seconds: float = 60.0
    # mode main: pages the news-page classifier (extraction.nfas) does not call articles give no
    # blocks and do not enter the site's dedup (crawl --only-articles): a listing's teaser
    # paragraph would otherwise be "already seen" when its article comes
    only_articles: bool = False
    # mode main: the main-content rules' parameters (extraction.params) for a tunable algorithm
    # (auto); a tuning run is replace(DEFAULT_PARAMS, ...), others refuse any but the defaults
    params: ExtractionParams = DEFAULT_PARAMS

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if not isinstance(self.algorithm, str):
            raise ConfigError(f"algorithm must be a name, not {self.algorithm!r}")
        validate(self.algorithm)
        if not isinstance(self.params, ExtractionParams):
            raise ConfigError(f"params must be an ExtractionParams, not {type(self.params).__name__}")
        if self.params != DEFAULT_PARAMS and not get(self.algorithm).tunable:
            raise ConfigError(f"algorithm {self.algorithm!r} takes no extraction parameters")
        for name in ("chunk_size", "overlap", "max_bytes"):
            v = getattr(self, name)
            # bool is an int, NaN and 2.0 are not: say so here, not deep inside the chunker
            if isinstance(v, bool) or not isinstance(v, int):
                shown = "NaN" if isinstance(v, float) and math.isnan(v) else repr(v)
                raise ConfigError(f"{name} must be an integer, not {shown}")
        if self.chunk_size < 1:
            raise ConfigError(f"chunk_size must be at least 1, not {self.chunk_size}")
        if not 0 <= self.overlap < self.chunk_size:
            raise ConfigError(f"overlap must be >= 0 and < chunk_size ({self.chunk_size}), not {self.overlap}")
        if self.max_bytes < 1:
            raise ConfigError(f"max_bytes must be at least 1, not {self.max_bytes}")
        if isinstance(self.learn_pages, bool) or not isinstance(self.learn_pages, int) or self.learn_pages < 1:
            raise ConfigError(f"learn_pages must be an integer of at least 1, not {self.learn_pages!r}")
        if isinstance(self.learn_seconds, bool) or not isinstance(self.learn_seconds, (int, float)) \
                or not 0 <= self.learn_seconds < math.inf:
            raise ConfigError(f"learn_seconds must be a number >= 0, not {self.learn_seconds!r}")
        if not isinstance(self.tokenizer, str) or not (
                self.tokenizer in TOKENIZER_NAMES or Path(self.tokenizer).is_file()):
            raise ConfigError(f"unknown tokenizer {self.tokenizer!r}: use 'model', 'words' or a tokenizer.json path")
        for name in ("dedup", "near_dedup", "full_path", "extract", "only_articles"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be True or False, not {getattr(self, name)!r}")

    def replace(self, **changes: Any) -> PipelineConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


CONFIG_FIELDS = frozenset(f.name for f in fields(PipelineConfig))
DEFAULTS = PipelineConfig()  # the defaults, for CLI options (a slotted class hides them)

_TOKENIZERS: dict[str, Tokenizer] = {}


def tokenizer_for(name: str) -> Tokenizer:
    """One tokenizer per name per process, shared by every pipeline (a worker runs one pipeline
    per site; loading the model tokenizer takes ~50 ms and a few MB each time)."""
    tok = _TOKENIZERS.get(name)
    if tok is None:
        try:
            tok = get_tokenizer(name)
        except ConfigError:
            raise
        except Exception as e:
            raise ConfigError(f"tokenizer {name!r} cannot be loaded: {e}") from e
        _TOKENIZERS[name] = tok
    return tok


@dataclass(slots=True)
class PageResult:
    url: str | None
    title: str
    # mode text/plain: the page text; main: the main text as extract() gives it, site dedup or
    # not (the crawl hashes it: an unchanged page keeps its hash); blocks: the new blocks' texts
    text: str
    blocks: list[Block] = field(default_factory=list)  # new blocks (duplicates removed)
    chunks: list[Chunk] = field(default_factory=list)
    duplicates: int = 0  # blocks dropped as already seen on the site
    # the page's Markdown (extraction.markdown) when asked for: of the main content in mode
    # main, of the selector's nodes or the whole page otherwise; site dedup does not apply to it
    markdown: str = ""
    # page-level results (extraction.pageinfo: metadata, kind, summary, main text): mode main
    info: PageInfo | None = None
    # site learning: earlier pages of the site re-processed with the model learned on this page
    # (their stored blocks and chunks are replaced), and the model's JSON when (re)learned here
    revised: list[PageResult] = field(default_factory=list)
    model: str | None = None


@dataclass(slots=True)
class _First:
    """A page collected for site learning as it was first processed."""

    dom: Dom
    keep: Sequence[bool] | None
    blocks: list[Block]  # before the site's dedup
    result: PageResult
    markdown: bool
    images: bool


def _same(a: Sequence[bool] | None, b: Sequence[bool] | None) -> bool:
    return a is b or (a is not None and b is not None and len(a) == len(b) and list(a) == list(b))


class SitePipeline:
    """SitePipeline(config), or SitePipeline(mode=..., chunk_size=...) with PipelineConfig's
    fields as keywords (over config's, if both). tokenizer may also be a Tokenizer object, and
    selector a page selector that replaces the algorithm's."""

    def __init__(self, config: PipelineConfig | None = None, *, tokenizer: Tokenizer | str | None = None,
                 selector: Selector | None = None, **fields_: Any) -> None:
        unknown = set(fields_) - CONFIG_FIELDS
        if unknown:
            raise TypeError(f"SitePipeline got unknown keywords {', '.join(sorted(unknown))}")
        if isinstance(tokenizer, str):
            fields_["tokenizer"] = tokenizer
        cfg = config or DEFAULTS
        self.config = replace(cfg, **fields_) if fields_ else cfg
        c = self.config
        self.mode, self.chunk_size, self.overlap = c.mode, c.chunk_size, c.overlap
        self.full_path, self.algorithm = c.full_path, c.algorithm
        self.tokenizer = tokenizer if tokenizer is not None and not isinstance(tokenizer, str) \
            else tokenizer_for(c.tokenizer)
        self.deduper = Deduper(near=c.near_dedup) if c.dedup else None
        if selector is None and c.mode == "main":
            selector = get(c.algorithm).page_selector(c.params)
        self.selector = selector
        # algorithm `site` (extraction/site): auto until the site model is learned, then the model
        self.site: SiteLearner | TemplateLearner | None = None
        if c.mode == "main" and c.algorithm == "site":
            from .extraction.site.learner import SiteLearner
            self.site = SiteLearner(c.learn_pages, c.learn_seconds)
        elif c.mode == "main" and c.algorithm == "auto+template":
            from .extraction.sitetemplate import TemplateLearner
            self.site = TemplateLearner(c.learn_pages, c.learn_seconds)
        self._dedup_mark: Deduper | None = None  # the dedup state when the site's collection began
        # the collected pages' first results (their mask, blocks before dedup, result): a page the
        # model gives the same mask is not extracted, described and chunked again (_rerun)
        self._firsts: list[_First] = []
        self._collect: Dom | None = None  # the page being processed was collected for learning
        self._scans: dict[int, Any] = {}  # page_info's walk of the collected pages (page_info memo)
        self._rerunning = False

    def load_model(self, model_json: str) -> None:
        """Restore a saved site model (crawl --resume); later pages use it. A pipeline whose
        algorithm learns none ignores it; a model that does not load (another format, damaged)
        is logged and learning starts again."""
        if self.site is None:
            return
        from .extraction.site import SiteModel
        from .extraction.site.model import log
        from .extraction.sitetemplate import TemplateLearner, TemplateModel
        try:
            if isinstance(self.site, TemplateLearner):
                self.site.load(TemplateModel.from_json(model_json))
            else:
                self.site.load(SiteModel.from_json(model_json))
        except ValueError as e:
            log.warning("site model not loaded (%s); learning again", e)

    def process(self, html: str | bytes, url: str | None = None, content_type: str | None = None) -> PageResult:
        return self.process_dom(load(raw_body(html, self.config.max_bytes), url, content_type))

    def process_site(self, pages: Sequence[tuple[str | bytes, str | None, str | None]], *,
                     markdown: bool = False, images: bool = False) -> list[PageResult]:
        """(html, url, content type) of a site's pages at once, in order: site algorithms
        (template clustering) see them all; page algorithms behave as with process()."""
        doms = [load(raw_body(html, self.config.max_bytes), url, ctype) for html, url, ctype in pages]
        if self.mode != "main":
            return [self.process_dom(d, markdown=markdown, images=images) for d in doms]
        if self.site is not None:  # learn on the first learn_pages pages, then every page by the model
            return [self.process_dom(d, keep, markdown=markdown, images=images, cluster=cluster)
                    for d, (keep, cluster) in zip(doms, self.site.learn_site(doms))]
        masks = get(self.algorithm).site_selector(self.config.params)(doms)
        return [self.process_dom(d, keep, markdown=markdown, images=images) for d, keep in zip(doms, masks)]

    def process_dom(self, dom: Dom, keep: Sequence[bool] | None | object = ..., *,
                    markdown: bool = False, images: bool = False, cluster: int = -1,
                    main: tuple[list[Block], str, list[str]] | None = None) -> PageResult:
        """A parsed page; keep overrides the selector's mask when given (cluster: the site
        model's cluster it came from). markdown: fill PageResult.markdown (one more linear walk
        of the page), with images as ![alt](src).

        Algorithm `site`: on the page where the site model is (re)learned, the pages collected
        for it are re-run with the model first (the dedup state rewound to where collection
        began, so no block is counted twice): PageResult.revised, and PageResult.model."""
        from .extraction.markdown import to_markdown
        from .extraction.pageinfo import page_info

        url = dom.url
        title = dom.title()
        if self.mode in ("plain", "text"):
            text = dom_text(dom)
            chunks = chunk_plain(text, url, self.chunk_size, self.overlap, self.tokenizer) if self.mode == "plain" else []
            md = to_markdown(dom, images=images) if markdown else ""
            return PageResult(url, title, text, chunks=chunks, markdown=md)
        text = ""
        mds: list[str] = []
        revised: list[PageResult] = []
        model: str | None = None
        if self.site is not None and keep is ...:
            keep, cluster, revised, model = self._site_page(dom, markdown, images)
        if self.mode == "main" and main is not None:  # made by _rerun with this keep
            blocks, text, mds = main
        elif self.mode == "main":  # the path extract() takes (extraction.api): the same text
            blocks, text = main_content(dom, self.algorithm, self.full_path, keep, self.selector,
                                        markdown=mds if markdown else None, images=images,
                                        params=self.config.params)
        else:
            if keep is ...:
                keep = self.selector(dom) if self.selector and len(dom) else None
            blocks = blocks_from_dom(dom, keep=keep, full_path=self.full_path)  # type: ignore[arg-type]
            if markdown:
                mds.append(to_markdown(dom, keep, images=images))  # type: ignore[arg-type]
        # the collected pages' walks are kept (<= learn_pages) for their revision; no other page's
        memo = self._scans if self._collect is dom or self._rerunning else None
        info = page_info(dom, text, cluster, memo) if self.mode == "main" else None
        if info is not None and self.config.only_articles and info.kind != "article":
            blocks = []
        heading = page_heading(dom, self.config.params)
        if blocks and blocks[-1].kind != RECORD_KIND:
            # the record main_content left out as said by the page's blocks: the site dedup may
            # drop those lines (the same "Publisher:" row on every book of that publisher)
            rec = record_block(dom, len(blocks), params=self.config.params)
            if rec is not None:
                blocks = [*blocks, rec]
        new, dropped = self._dedup(blocks)
        chunks = chunk_blocks(new, self.chunk_size, self.overlap, self.tokenizer, title=title, heading=heading,
                              site_name=info.meta.site_name if info is not None else "")
        if self.mode != "main":
            text = "\n\n".join(b.text for b in new)
        res = PageResult(url, title, text, new, chunks, dropped, "".join(mds), info,
                         revised=revised, model=model)
        if self._collect is dom:
            self._collect = None
            self._firsts.append(_First(dom, keep, blocks, res, markdown, images))  # type: ignore[arg-type]
        return res

    def _site_page(self, dom: Dom, markdown: bool, images: bool
                   ) -> tuple[Sequence[bool] | None, int, list[PageResult], str | None]:
        """(keep, cluster, revised pages, model JSON) of a page under algorithm `site`."""
        site = self.site
        assert site is not None
        if site.collecting and not site.collected:
            # a fresh deduper (a site's first pages) is marked as such, not copied (~ms a site)
            fresh = self.deduper is None or not self.deduper.hashes
            self._dedup_mark = None if fresh else copy.deepcopy(self.deduper)
            self._firsts, self._scans = [], {}
        keep, cluster, learned = site.page(dom)
        if learned is None:
            if site.collecting and site.collected and site.collected[-1][0] is dom:
                self._collect = dom
            return keep, cluster, [], None
        assert site.model is not None
        if not learned:  # a model without clusters: the pages stay as they were
            self._dedup_mark = None
            return keep, cluster, [], site.model.to_json()
        revised = self._rerun(learned[:-1], markdown, images)
        return keep, cluster, revised, site.model.to_json()

    def _rerun(self, pages: Sequence[tuple[Dom, Sequence[bool] | None, int]], markdown: bool,
               images: bool) -> list[PageResult]:
        """The collected pages again, in order, with the new model's masks, the dedup state
        rewound to where collection began (so no block is counted twice)."""
        self.deduper = self._dedup_mark if self._dedup_mark is not None else \
            Deduper(near=self.config.near_dedup) if self.config.dedup else None
        self._dedup_mark = None
        firsts = {id(f.dom): f for f in self._firsts}
        self._firsts = []
        self._rerunning = True
        try:
            return self._rerun_pages(pages, firsts, markdown, images)
        finally:
            self._rerunning, self._scans = False, {}

    def _rerun_pages(self, pages: Sequence[tuple[Dom, Sequence[bool] | None, int]], firsts: dict[int, _First],
                     markdown: bool, images: bool) -> list[PageResult]:
        out = []
        for d, k, c in pages:
            f = firsts.get(id(d))
            if f is None or f.dom is not d or f.markdown != markdown or f.images != images:
                out.append(self.process_dom(d, k, markdown=markdown, images=images, cluster=c))
            elif _same(k, f.keep):
                out.append(self._again(f, c, f.result.markdown))
            else:
                mds: list[str] = []
                blocks, text = main_content(d, self.algorithm, self.full_path, k, self.selector,
                                            markdown=mds if markdown else None, images=images,
                                            params=self.config.params)
                if text == f.result.text and [b.hash for b in blocks] == [b.hash for b in f.blocks]:
                    out.append(self._again(f, c, "".join(mds)))
                else:
                    out.append(self.process_dom(d, k, markdown=markdown, images=images, cluster=c,
                                                main=(blocks, text, mds)))
        return out

    def _again(self, f: _First, cluster: int, md: str) -> PageResult:
        """A collected page whose blocks and text are the same under the model (the model's mask
        may differ in nodes that make no block: white space, a title already counted): its first
        result is reused, info with the new cluster, without describing (page info ~3-4 ms) and
        chunking it again; only the dedup runs again (an earlier revised page may now hold one of
        its blocks), and the chunks are made again only if that changed which blocks are new.
        md: the Markdown of the model's mask. 15 of 60 revised cleanportaleval pages, 58 of 362
        msv pages take this path."""
        r = f.result
        new, dropped = self._dedup(f.blocks)
        chunks = r.chunks if [b.hash for b in new] == [b.hash for b in r.blocks] else \
            chunk_blocks(new, self.chunk_size, self.overlap, self.tokenizer, title=r.title,
                         heading=page_heading(f.dom, self.config.params),
                         site_name=r.info.meta.site_name if r.info else "")
        info = replace(r.info, cluster=cluster) if r.info is not None else None
        return PageResult(r.url, r.title, r.text, new, chunks, dropped, md, info)

    def finish(self, *, markdown: bool = False, images: bool = False) -> PageResult | None:
        """The site has no more pages for now (the crawl ended, or the site was idle): a site
        model still collecting learns on the pages it holds (>= 2) and every one of them is
        re-run with it. Returns a result carrying only `revised` and `model` (no page of its
        own), or None when there is nothing to learn (not algorithm `site`, a model already
        learned, fewer than two pages). Later pages, if any come, use the model."""
        site = self.site
        if site is None:
            return None
        learned = site.finish()
        if learned is None:
            return None
        assert site.model is not None
        revised = self._rerun(learned, markdown, images) if learned else []
        self._dedup_mark = None
        return PageResult(None, "", "", revised=revised, model=site.model.to_json())

    def process_blocks(self, blocks: list[Block], url: str | None, title: str = "", *,
                       markdown: bool = False) -> PageResult:
        """Blocks made elsewhere (a PDF: extraction.pdf) through the same dedup and chunking;
        in modes plain and text their text, as a page's. markdown: from the blocks (headings
        and text: blocks_markdown)."""
        from .extraction.markdown import blocks_markdown

        md = blocks_markdown([(b.heading_path, b.kind, b.text) for b in blocks]) if markdown else ""
        text = blocks_text(blocks)
        if self.mode in ("plain", "text"):
            chunks = chunk_plain(text, url, self.chunk_size, self.overlap, self.tokenizer) if self.mode == "plain" else []
            return PageResult(url, title, text, chunks=chunks, markdown=md)
        new, dropped = self._dedup(blocks)
        chunks = chunk_blocks(new, self.chunk_size, self.overlap, self.tokenizer, title=title)
        return PageResult(url, title, text, new, chunks, dropped, md)

    def _dedup(self, blocks: list[Block]) -> tuple[list[Block], int]:
        """(the blocks the site has not seen in their place (chunk.dedup), how many it had); a
        page's record block (extraction.records) is also left out, not counted as seen, when one
        of its other new blocks holds every one of its facts (the selector kept the details box,
        and it is new)."""
        new = list(self.deduper.filter(blocks)) if self.deduper else blocks
        dropped = len(blocks) - len(new)
        if new and new[-1].kind == RECORD_KIND and said_elsewhere(new[-1], new[:-1]):
            new = new[:-1]
        return new, dropped


__all__ = ["DEFAULTS", "DEFAULT_MAX_BYTES", "MODES", "PageResult", "PipelineConfig", "SitePipeline", "blocks_text",
           "tokenizer_for"]
