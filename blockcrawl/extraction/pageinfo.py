"""page_info: the page-level results stored with a page (records.PageInfo): its metadata
(metadata.py), its kind and P(article) (nfas.py), and for an article its key sentences
(summary.py). The page is walked once (metadata.scan) for both the metadata and the
classifier's structure features."""
from __future__ import annotations

from ..parse import Dom
from ..records import PageInfo
from .metadata import meta_from_scan, scan
from .nfas import classify_scan
from .summary import summarize

SUMMARY_SENTENCES = 3


def page_info(dom: Dom, text: str, cluster: int = -1) -> PageInfo:
    """The PageInfo of a parsed page whose main content is text (Document.text); cluster is the
    site-model cluster it was extracted with (-1: by `auto`). An empty page (binary, nothing
    parsed) has kind "other" and empty metadata."""
    if not len(dom):
        return PageInfo(text=text, kind="other", kind_score=0.0, cluster=cluster)
    s = scan(dom)
    meta = meta_from_scan(dom, s)
    kind, score = classify_scan(dom, text, s, meta)
    summary = summarize(text, SUMMARY_SENTENCES) if kind == "article" else ""
    return PageInfo(text=text, kind=kind, kind_score=round(score, 4), summary=summary, meta=meta,
                    cluster=cluster)
