"""The pattern tables the main-content rules read: tag sets and class/id word lists, kept as data
beside the algorithm (extraction.furniture, extraction.article). The tunable numbers and the
switches that pick among these tables are in extraction.params (ExtractionParams).

Most name patterns are written in lower case with no escape but \\b: furniture._finds runs them
without re.I on lower-cased ASCII names, ~3x faster (tests/extraction/test_auto_rules.py checks it finds what
re.I finds).
"""
from __future__ import annotations

import re

# Elements that own the text inside them (a text block).
OWNER_TAGS = frozenset({
    "p", "div", "td", "th", "li", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "section",
    "article", "main", "dd", "dt", "figcaption", "caption", "body", "table", "ul", "ol", "dl", "form",
    "header", "footer", "nav", "aside", "center", "address", "details", "summary", "figure", "tr",
    "legend", "fieldset", "html",
})
# Page furniture by element name.
FURNITURE_TAGS = frozenset({"nav", "aside", "footer", "button", "dialog", "menu", "select",
                            "input", "label", "option"})
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

UNLIKELY = re.compile(
    r"-ad-|\bads?\b|advert|banner|breadcrumb|combx|comment|communit|cookie|consent|gdpr|disqus|"
    r"(?<![a-z])foot(?![a-z])|"
    r"footer|masthead|menu|navbar|\bnav\b|navigation|related|recommend|remark|replies|rss|shoutbox|"
    r"sidebar|skyscraper|social|sponsor|share|sharing|pagination|pager|popup|modal|newsletter|"
    r"subscribe|signup|promo|outbrain|taboola|widget|toolbar|login|byline|author-bio|tags?-?list|"
    r"trending|most-?popular|breaking|skip-?link|print-?only|more-?(news|stories|posts|articles)|"
    r"also-?like|you-?might|read-?next|up-?next|latest-?(news|posts|stories)", re.I)
MAYBE = re.compile(r"and|article|body|column|content|main|shadow|story|entry|post|embed", re.I)
POSITIVE = re.compile(r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story|"
                      r"prose|rich-?text", re.I)
NEGATIVE = re.compile(
    r"-ad-|hidden|\bhid\b|banner|combx|comment|com-|contact|foot|footer|footnote|gdpr|masthead|"
    r"media|meta|outbrain|promo|related|scroll|share|shoutbox|sidebar|skyscraper|sponsor|shopping|"
    r"tags|tool|widget|nav|menu|social|caption|credit", re.I)
TAG_BASE = {"div": 5, "article": 8, "main": 5, "section": 2, "pre": 3, "td": 3, "blockquote": 3,
            "address": -3, "ol": -3, "ul": -3, "dl": -3, "dd": -3, "dt": -3, "li": -3, "form": -3,
            "h1": -5, "h2": -5, "h3": -5, "h4": -5, "h5": -5, "h6": -5, "th": -5}
# Text straight in these (a div of <br> lines, <body> itself) votes for the element itself.
SELF_VOTE = frozenset({"body", "html", "div", "td", "section", "article", "main"})

# Names that are furniture whatever content word sits beside them: a "most-popular-article" list
# with "article-content" excerpts (msv: 3 pages of The Atlantic kept ~10k chars of them each), a
# "nocontent" box (the search appliances' mark for text not to index). MAYBE's content words
# do not save these. Wider lists cost other sets: with related|recommend|read-next|... cleaneval
# loses .001 (its gold keeps "Related Links" lists), with share|social|comment .013.
STRONG = r"\bnocontent\b|most-?popular|trending|outbrain|taboola"

# Teaser lists are furniture even when they hold most of the page's text (a related-stories
# column of long excerpts beside a short article): no wrapper exemption for these names.
TEASERS = (r"related|recommend|most-?popular|trending|also-?like|you-?might|read-?next|"
           r"up-?next|more-?(news|stories|posts|articles)")

# A service page is built of a page builder's modules, and its first section is a "hero banner":
# names that UNLIKELY reads as furniture (widget, banner) but that hold the page's text. Elementor
# ("elementor-widget-wrap", "elementor-widget"), HubSpot ("hs_cos_wrapper_widget", "widget-span
# widget-type-custom_widget"), Flatsome's "banner" sections, "hero-banner". On wcxb-dev's 162
# service pages (every page given the service rule), read as furniture these two words alone
# lose 22.3k of the gold's 1.09M characters (widget 13.7k, banner 8.6k; 27 pages). The word is
# blanked out of the name, so "cookie-banner", "promo-banner", "nav-menu widget" stay furniture by their other words.
SERVICE_BUILDER = re.compile(r"banner|widget(?![-_]?areas?)", re.I)
# React's streamed server rendering: a Suspense boundary's content arrives as <div hidden
# id="S:n"> (params.streamed).
SEGMENT = re.compile(r"[SP]:[0-9a-f]+")

# A notice about the reader's browser ("This page is best viewed in an up-to-date web browser",
# "Please enable JavaScript") is no part of any page's text: 175 text nodes on the six
# development sets match, none of them in a gold text. The phrases want the reader addressed
# ("your browser", "please enable"): an article about browsers ("removing support for older
# browsers") is text.
NOTICE_PHRASES = re.compile(
    r"best viewed (in|with|using)|(upgrade|update) your (web )?browser|"
    r"your (web )?browser (does not|doesn't|is not|isn't|may not) (support|have|accept)|"
    r"(please |you (must|need to|should) )(enable|turn on|activate|allow) (your )?"
    r"(javascript|js|style ?sheets|css)|(javascript|js) (is|seems to be|appears to be) (disabled|turned off)|"
    r"you are using an? (outdated|unsupported|old|older) (web )?browser", re.I)
# The same, tried only where a phrase can start (each begins with one of these letters): sre
# enters the pattern at every character otherwise, 4x the time on a page's whole text
# (tests/extraction/test_auto_rules.py checks the letters against the phrases).
NOTICE_START = "bjpuy"
NOTICE_AT = re.compile(f"(?=[{NOTICE_START}])(?:{NOTICE_PHRASES.pattern})", re.I)

# What folds content away until a click, in the class/id of the hidden element or its parent.
FOLD = re.compile(r"accordion|collaps|tab-?panel|tabs?\b|faq|toggle|expand|panel|spoiler|"
                  r"read-?more|more-?text|answer|details", re.I)

# Sibling elements of the article that join it when they carry text and few links.
SIBLING_TAGS = frozenset({"p", "pre", "blockquote", "ul", "ol", "table", "h1", "h2", "h3", "h4",
                          "h5", "h6"})
# Inside the article: share bars, bylines, dates, tag lists, galleries are not its text; nor are
# photo captions and credits (<figcaption>, short elements named caption/credit).
DROP_TAGS = frozenset({"figcaption"})
REMOVE = re.compile(r"share|sharing|social|related|recommend|read-?more|gallery|slideshow|carousel|"
                    r"lightbox|\btags?\b|byline|author|"
                    r"dateline|timestamp|\bdate\b|published|newsletter|promo|advert|\bads?\b", re.I)
CREDIT = re.compile(r"caption|credit|copyright", re.I)
AD_LABEL = re.compile(r"\s*(advertisement|advert|ad|sponsored|anzeige|publicité|publicidad|pubblicità|"
                      r"story continues below( advertisement)?|continue reading( below| the main story)?)"
                      r"\s*[:.]?\s*$", re.I)
# Photo credit lines ("Image copyright Reuters", "Photo: AP", "(Getty Images)").
CREDIT_LINE = re.compile(r"^\s*(image|photo|photograph|picture|foto|credit)s?\s*(copyright|credit|:|by\b|\(|©)|"
                         r"getty\s*images|^\s*©|\bAP Photo\b", re.I)
# Containers the conditional cleaning (article._junk) reads for link density.
CLEAN_TAGS = frozenset({"div", "section", "ul", "ol", "table", "dl", "header", "span", "p", "figure",
                        "center", "tbody", "tr", "td", "li"})


# The per-type removals (extraction.pagerules) and the record block's furniture (extraction.records).
# Names of what a product page's reader does not search for: reviews and ratings (not
# "preview"), testimonials, questions and answers, disclaimers and footnotes (each alone gains on
# wcxb-dev's product pages; decision 0012).
PRODUCT_DROP = re.compile(r"(?<!p)review|rating|testimonial|disclaimer|footnote|questions|\bqa\b|"
                          r"q-?and-?a", re.I)
# What a product page shows of OTHER products, and its rating widgets: recommendation carousels
# ("Customers also bought", "You may also like"), related and similar items, up-sells and
# cross-sells, ratings and reviews. Named so by class/id (FURNITURE_NAMES) or headed so
# (FURNITURE_HEADING, read from a heading of at most params.furniture_heading_chars characters). The page's
# record block (extraction.records) reads no pairs inside them ("Products: Club Price: $14.55" of
# another book is no fact of this one).
OTHER_PRODUCTS = (r"carousel|recommend|related|also-?(?:bought|viewed|like|purchased)|up-?sell|cross-?sell|"
                  r"similar|recently-?viewed|bought-?together")
OTHER_PRODUCTS_NAMES = re.compile(OTHER_PRODUCTS, re.I)
FURNITURE_NAMES = re.compile(OTHER_PRODUCTS + r"|(?<!p)review|rating|testimonial", re.I)
# The record block's furniture: as FURNITURE_NAMES, but of reviews only their lists and widgets
# ("reviews", "review-list", "customer-review"): a review article's own box ("review-specs",
# "review-summary": Processor, Memory, Dimensions...) holds the facts it reviews. On wcxb-dev, any
# "review" name kept 33 pages' pairs out, most of them gold facts of review articles; these names
# 11, the pairs of review articles back and the reviewers of product pages still out.
RECORD_FURNITURE_NAMES = re.compile(
    OTHER_PRODUCTS + r"|rating|testimonial|reviews|(?:customer|user|product)-?review|"
    r"review-?(?:list|item|widget|container|section|block|content|wrapper|body|stars)", re.I)
OTHER_PRODUCTS_HEADING = (
    r"\b(?:also\s+(?:bought|viewed|like|love|enjoy|purchased)|(?:customers|people|shoppers)\s+who\b|"
    r"you\s+(?:may|might|will|could)\s+(?:also\s+)?(?:like|love|enjoy|need)|related\s+(?:products|items|books|titles)|"
    r"similar\s+(?:products|items|books|titles)|recommended\s+(?:for\s+you|products|items|books)|"
    r"frequently\s+bought|bought\s+together|recently\s+viewed|more\s+(?:items|products|books)\s+(?:from|by|like)|"
    r"complete\s+the\s+look|pairs\s+well\s+with)\b")
FURNITURE_HEADING = re.compile(OTHER_PRODUCTS_HEADING + r"|\b(?:customer\s+reviews|ratings?\s+(?:&|and)\s+reviews)\b",
                               re.I)
OTHER_HEADING = re.compile(OTHER_PRODUCTS_HEADING, re.I)

# A documentation page's furniture inside its <main>: the "last modified" line, the page footer
# and its "was this helpful?" box, prev/next links, breadcrumbs, the table of contents ("on this
# page") and edit links (decision 0012).
DOCS_DROP = re.compile(r"last-?modified|last-?updated|article-?footer|page-?footer|feedback|helpful|"
                       r"prev-?next|pagination|breadcrumb|\btoc\b|on-?this-?page|edit-?(this|page|on)|"
                       r"edit-?link", re.I)
# A forum post's signature ("sig" as a word: not "design", "signin") and its author's statistics
# beside it (XenForo's message-userExtras: "Messages 1,204 Reaction score 311 Joined ...", 16 of
# wcxb-dev's forum pages; decision 0012).
FORUM_DROP = re.compile(r"signature|\bsig\b|user-?extras|user-?stats", re.I)

# A price alone in its text node: "$35.00", "EUR 12,50", "1.299,00 €", "249 kr".
PRICE = re.compile(r"\s*(?:[$\u20ac\u00a3\u00a5\u20b9]|USD|EUR|GBP)\s?\d[\d,.]*\s*$|"
                   r"\s*\d[\d,.]*\s?(?:[$\u20ac\u00a3]|EUR|USD|kr)\s*$")

# A text node that is a bare address: an image or variant URL of a product's data dump.
URL = re.compile(r"\s*(https?://|www\.)\S+\s*$")

# A call to action opens with a verb (CTA_VERB) or is named as a button (CTA_NAME).
CTA_VERB = re.compile(
    r"\s*(learn|get|start|try|book|contact|request|see|view|read|explore|discover|sign|download|"
    r"shop|join|find|schedule|talk|watch|call|know|apply|register|subscribe|buy|order|claim|chat|"
    r"let'?s|go|click|check|visit|meet|browse|compare|enroll|speak|send|show|more)\b", re.I)
CTA_NAME = re.compile(r"btn|button|cta", re.I)

# A collection's filter panel and per-item controls (extraction.listing).
# Elements named like this are the filter panel (facets, refinements) and the per-card badges;
# dropped unless one holds params.control_share of the kept text (a "filterable-grid" wrapper of the items).
# Further names (rating, review, stars: the gold keeps "4.5 out of 5 stars"; swatch, drawer) cost
# (decision 0014).
CONTROL_NAMES = r"filter|facet|refine|badge"
# A control is short: an element of at most this many characters whose whole text is a control
# phrase (params.control_text), or a text node that is one (decision 0014). The phrases are the shops'
# generic words (no brand, no site's label), so they carry to sites not seen. Counters
# ("12 reviews", "3 colors") are left out: neutral here.
CONTROL_TEXT = (
    # the cart, wishlist and comparison buttons, size pickers
    r"add to (cart|bag|basket|wish ?list|compare|favou?rites?)|add|compare|\+? ?wish ?list|"
    r"quick ?(view|shop|add)|view options|choose options|select (your )?size|buy now|pre-?order( now)?|"
    r"notify me|"
    # stock and badges
    r"(in|out of|low) stock|sold out|available|sale|new|new arrivals?|best ?seller|top rated|"
    r"trending|featured|limited edition|exclusive|online only|"
    # links to the item or more of them
    r"shop (now|all)|learn more|read more|view (more|all|details|product)|see (more|all|details)|"
    r"more options|explore( now)?|details|"
    # review prompts, shipping and savings offers, skip links
    r"be the first to review( this product)?|no reviews( yet)?|write a review|free shipping|"
    r"calculate shipping|(\d+ )?ways to save|(get )?reward points|skip to [\w ]+")

