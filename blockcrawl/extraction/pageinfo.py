"""page_info: the page-level results stored with a page (records.PageInfo): its metadata
(metadata.py), its page type and P(article) (nfas.py; the type auto selected the page by, when
auto extracted this Dom), and for an article its key sentences
(summary.py). The page is walked once (metadata.scan) for both the metadata and the
classifier's structure features."""
from __future__ import annotations

from typing import Any

from ..parse import Dom
from ..records import PageInfo
from .metadata import meta_from_scan, scan
from .nfas import classify_scan, last_type
from .summary import summarize

SUMMARY_SENTENCES = 3


def page_info(dom: Dom, text: str, cluster: int = -1, memo: dict[int, Any] | None = None) -> PageInfo:
    """The PageInfo of a parsed page whose main content is text (Document.text); cluster is the
    site-model cluster it was extracted with (-1: by `auto`). An empty page (binary, nothing
    parsed) has kind "other" and empty metadata. memo: the page walk and metadata by Dom
    identity, for a page described again with another text (site learning's revised pages:
    the walk is ~2 ms of the ~3.5 ms this takes on a news page)."""
    if not len(dom):
        return PageInfo(text=text, kind="other", kind_score=0.0, cluster=cluster)
    typed = last_type(dom)
    known = memo.get(id(dom)) if memo is not None else None
    if typed is not None:
        kind, score, s, meta = typed  # auto typed this page while selecting its main content
    elif known is not None and known[0] is dom:
        _, s, meta = known
        kind, score = classify_scan(dom, text, s, meta)
    else:
        s = scan(dom)
        meta = meta_from_scan(dom, s)
        kind, score = classify_scan(dom, text, s, meta)
    if memo is not None:
        memo[id(dom)] = (dom, s, meta)
    summary = summarize(text, SUMMARY_SENTENCES) if kind == "article" else ""
    return PageInfo(text=text, kind=kind, kind_score=round(score, 4), summary=summary, meta=meta,
                    cluster=cluster)
