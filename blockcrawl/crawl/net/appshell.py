"""Does a page's static HTML look like a JavaScript app shell whose text only exists after its
scripts run? The `--render auto` rule (crawl.net.render), decided on the bytes the static fetch got.

One linear scan over the decoded text (no tree, no parse: this runs in the event loop for
every HTML page of an `auto` crawl, so it must cost about as much as a regex pass, ~1 ms per
100 KB). The tag pattern never crosses a `<`, and raw-text elements (script, style, ...) are
skipped with one `str.find` for their end tag, so no input makes it quadratic.

Signals (AppShell): the words of visible text outside script/style/noscript/template/textarea,
the bytes of inline script, the number of external scripts, whether a mount element (#root,
#app, #__next, <app-root>, ...) holds no words, and whether a <noscript> asks for JavaScript.

The rule (`needs_render`), measured (docs/crawling.md "JavaScript rendering"): a page is an app
shell when it has fewer than SHELL_MAX_WORDS words AND some script AND (an empty mount element,
or a <noscript> that asks for JavaScript, or script outweighing text SCRIPT_RATIO to 1, an
external script counting EXTERNAL_SCRIPT_BYTES). On the 3,477 development pages of
/work/shared/bench/data (real pages saved from the web, all with their text in the HTML) it
renders none; on the SPA pages of tests/crawl/test_render.py it renders all.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

SHELL_MAX_WORDS = 60  # a page with this many words of static text is read as it is
BARE_MAX_WORDS = 15  # below this, script alone (no mount, no noscript plea) makes an app shell
SCRIPT_RATIO = 3  # script bytes per text byte above which a near-empty page is an app
EXTERNAL_SCRIPT_BYTES = 20_000  # what one <script src> is counted as (a bundle is 50-500 KB)
# Mount points of the common frameworks: React (create-react-app, Vite), Vue, Next, Nuxt,
# Gatsby, Quasar, Svelte(Kit) examples, Angular (<app-root>).
MOUNT_IDS = frozenset({"root", "app", "__next", "__nuxt", "___gatsby", "q-app", "react-root", "svelte", "app-root"})
MOUNT_TAGS = frozenset({"app-root"})
# Elements whose content is not page text; their end tag is found with one find().
_RAW = ("script", "style", "template", "textarea", "title", "xmp", "iframe")
_TAG = re.compile(r"<(/?)([a-z][a-z0-9-]*)([^<>]*)>", re.I)
_RAW_END = {t: re.compile("</" + t, re.I) for t in _RAW}
_ID = re.compile(r"""(?i)\bid\s*=\s*["']?([^"'\s>]+)""")
_SRC = re.compile(r"""(?i)\bsrc\s*=""")
_ENABLE_JS = re.compile(r"(enable|turn on|activate|requires?|need)[^.<]{0,40}javascript"
                        r"|javascript[^.<]{0,30}(required|enabled|disabled)", re.I)


@dataclass(frozen=True, slots=True)
class AppShell:
    words: int  # visible words (2+ letters) outside raw-text elements
    text_bytes: int  # characters of those text runs (stripped)
    script_bytes: int  # characters of inline <script> content
    external_scripts: int  # <script src=...>
    empty_mount: bool  # a mount element (MOUNT_IDS / MOUNT_TAGS) without a word inside
    noscript_js: bool  # a <noscript> asks for JavaScript

    @property
    def script_weight(self) -> int:
        return self.script_bytes + EXTERNAL_SCRIPT_BYTES * self.external_scripts

    def needs_render(self) -> bool:
        """The `auto` rule (module docstring)."""
        if self.words >= SHELL_MAX_WORDS or (self.script_bytes == 0 and self.external_scripts == 0):
            return False
        if self.empty_mount or self.noscript_js:
            return True
        return self.words < BARE_MAX_WORDS and self.script_weight > SCRIPT_RATIO * max(self.text_bytes, 1)

    def reason(self) -> str:
        """Why needs_render() said yes (for the crawl log)."""
        why = "empty mount" if self.empty_mount else "noscript asks for JavaScript" if self.noscript_js \
            else f"script {self.script_weight} B vs text {self.text_bytes} B"
        return f"{self.words} words, {why}"


def measure(html: str, stop_at: int | None = SHELL_MAX_WORDS) -> AppShell:
    """The signals of one page (module docstring); linear in len(html). The scan stops once
    `stop_at` words were seen (the rule's answer is then no): most pages stop in their first
    screen of text instead of scanning 100-500 KB. stop_at None: measure the whole page."""
    doc = html  # not lower-cased: that copy of the page would cost more than a scan that stops early
    n = len(doc)
    words = text_bytes = script_bytes = ext = 0
    noscript_js = False
    in_noscript = 0  # open <noscript> elements (their text counts: some apps put the page there)
    mount_tag: str | None = None  # the open mount element's tag, while inside it
    mount_depth = 0  # nesting of mount_tag inside the mount element
    mount_words = 0  # words before the mount element opened
    empty_mount = False
    pos = 0
    while pos < n:
        m = _TAG.search(doc, pos)
        end = m.start() if m else n
        if end > pos:
            seg = doc[pos:end]
            k = len(seg.split())
            if k:
                words += k
                text_bytes += len(seg.strip())
                if stop_at is not None and words >= stop_at:
                    break
                if in_noscript and not noscript_js:
                    noscript_js = _ENABLE_JS.search(seg) is not None
        if m is None:
            break
        pos = m.end()
        closing, tag, attrs = m.group(1), m.group(2).lower(), m.group(3)
        if closing:
            if tag == "noscript":
                in_noscript = max(0, in_noscript - 1)
            if mount_tag == tag:
                mount_depth -= 1
                if mount_depth == 0:
                    empty_mount = empty_mount or words == mount_words
                    mount_tag = None
            continue
        if tag in _RAW:  # (a "/>" does not close these in HTML)
            cm = _RAW_END[tag].search(doc, pos)
            close = cm.start() if cm else n
            if tag == "script":
                if _SRC.search(attrs):
                    ext += 1
                script_bytes += len(doc[pos:close].strip())
            gt = doc.find(">", close)
            pos = n if gt < 0 else gt + 1
            continue
        if tag == "noscript":
            in_noscript += 1
        if mount_tag is None and not empty_mount:
            if tag in MOUNT_TAGS or ((mid := _ID.search(attrs)) and mid.group(1).lower() in MOUNT_IDS):
                if attrs.rstrip().endswith("/"):
                    empty_mount = True
                else:
                    mount_tag, mount_depth, mount_words = tag, 1, words
        elif tag == mount_tag:
            mount_depth += 1
    if mount_tag is not None:  # never closed: it ran to the end of the document
        empty_mount = empty_mount or words == mount_words
    return AppShell(words, text_bytes, script_bytes, ext, empty_mount, noscript_js)
