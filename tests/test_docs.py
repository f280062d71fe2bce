"""The user documentation stays short and its links keep working.

README.md is the user's page (at most 300 lines); the details live in docs/. A renamed heading or a
moved file breaks a link silently on GitHub, so every relative link of README.md, CHANGELOG.md and
docs/*.md must name an existing file, and a #fragment must name a heading of the target page
(GitHub's anchor rules). Links inside code blocks and code spans are not links.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[1]
MAX_README_LINES = 300

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`+[^`]*`+")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _prose_lines(path: Path) -> list[str]:
    """The page's lines outside fenced code blocks, code spans removed."""
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(_CODE_SPAN.sub("", line))
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: markup dropped, lower case, punctuation removed, spaces -> '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # [text](url) -> text
    text = text.replace("`", "").replace("*", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            slug = _slug(m.group(2))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def broken_links(path: Path) -> list[str]:
    bad = []
    for line in _prose_lines(path):
        for target in _LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, https:, mailto: ...
                continue
            file_part, _, fragment = target.partition("#")
            dest = (path.parent / unquote(file_part)).resolve() if file_part else path
            if not dest.exists():
                bad.append(f"{_name(path)}: {target} (no such file)")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                bad.append(f"{_name(path)}: {target} (no such heading)")
    return bad


def test_readme_is_short() -> None:
    n = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines; move details to docs/"


def test_readme_keeps_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "./demo.sh" in text and ".venv/bin/python -m pytest" in text


def test_relative_links_resolve() -> None:
    assert (ROOT / "docs").is_dir()
    bad = [b for page in _pages() if page.exists() for b in broken_links(page)]
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_link_checker_sees_breakage(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    page.write_text("# Top `x` heading\n\n## Two, words!\n\n```\n# not a heading\n[c](gone.md)\n```\n"
                    "[ok](#two-words) [ok](a.md#top-x-heading) [web](https://example.org/x)\n"
                    "[bad](missing.md) [bad](#nowhere) `[code](missing.md)`\n", encoding="utf-8")
    assert anchors(page) == {"top-x-heading", "two-words"}
    assert [b.split(": ", 1)[1] for b in broken_links(page)] == [
        "missing.md (no such file)", "#nowhere (no such heading)"]


def test_docs_name_no_private_material() -> None:
    """The user has the repository only: no sibling folders or internal note names."""
    bad = []
    for page in _pages():
        if not page.exists():
            continue
        text = page.read_text(encoding="utf-8")
        for needle in ("../shared", "/work/", "ALGORITHMS.md", "ANCHORS.md"):
            if needle in text:
                bad.append(f"{page.relative_to(ROOT)}: {needle}")
        if re.search(r"\bseeds? \d{3}\b|\bissue \d+\b", text):
            bad.append(f"{page.relative_to(ROOT)}: seed/issue reference")
    assert not bad, "\n".join(bad)


def _section(path: Path, heading: str) -> str:
    """The text under `## heading` of path, up to the next heading of the same or a higher level."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == heading)
    level = len(heading) - len(heading.lstrip("#"))
    end = next((i for i in range(start + 1, len(lines))
                if (m := _HEADING.match(lines[i])) and len(m.group(1)) <= level), len(lines))
    return "\n".join(lines[start:end])


def test_every_crawl_config_field_is_documented() -> None:
    """docs/crawling.md ("Python") names every CrawlConfig field: the list went stale twice."""
    from dataclasses import fields

    from blockcrawl.crawl.config import CrawlConfig

    text = _section(ROOT / "docs" / "crawling.md", "## Python")
    missing = [f.name for f in fields(CrawlConfig) if f"`{f.name}`" not in text]
    assert not missing, f"CrawlConfig fields not in docs/crawling.md#python: {missing}"


def test_every_crawl_module_is_in_the_module_table() -> None:
    text = _section(ROOT / "docs" / "crawling.md", "## Modules")
    rows = {m for line in text.splitlines() if line.startswith("|") for m in re.findall(r"`crawl/([\w/]+\.py)`", line)}
    crawl = ROOT / "blockcrawl" / "crawl"  # a sub-package's __init__.py describes it; the table, its modules
    modules = {p.relative_to(crawl).as_posix() for p in crawl.rglob("*.py")
               if p.parent == crawl or p.name != "__init__.py"}
    assert modules - rows == set(), f"blockcrawl/crawl modules missing from docs/crawling.md#modules: {modules - rows}"
    assert rows - modules == set(), f"docs/crawling.md#modules names modules that do not exist: {rows - modules}"


def test_readme_lists_every_builtin_algorithm() -> None:
    from blockcrawl.extraction.registry import ALGORITHMS

    row = next(line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `--algorithm NAME` | `auto` | main-content algorithm for `--mode main`"))
    missing = [name for name in ALGORITHMS if f"`{name}`" not in row]
    assert not missing, f"README's extract --algorithm row lacks {missing}"


def test_architecture_is_short() -> None:
    n = len((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines())
    assert n <= 150, f"docs/architecture.md has {n} lines: it is the map, the details live in the other pages"


def test_every_benchmark_section_names_its_command() -> None:
    """docs/benchmarks.md is the current tables, each with the command that reproduces it: every
    `## ` section that holds a table also names a script of bench/ or tests/ (or a command)."""
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    bad = []
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, body = part.partition("\n")
        if "\n|---" in body or "\n| ---" in body:
            if not re.search(r"(bench|tests)/\w+\.py|blockcrawl \w+", body):
                bad.append(title)
    assert not bad, f"benchmark sections without a command: {bad}"


# A file path in a code span (`crawl/engine/loop.py`, `tests/test_x.py::test_y`): relative to the
# repository, to blockcrawl/ or to the page. A part in capitals is a placeholder (`cli/NAME_cmd.py`).
_PATH_SPAN = re.compile(r"^[\w.-]+(?:/[\w.-]+)+\.(?:py|md|json|jsonl|toml|sh|html|tsv|txt)$")


def dead_paths(page: Path) -> list[str]:
    bad = []
    for line in page.read_text(encoding="utf-8").splitlines():
        for span in re.findall(r"`([^`\s]+)`", line):
            path = span.split("::")[0]
            if not _PATH_SPAN.match(path) or any(part.isupper() for part in re.split(r"[/_.]", path)):
                continue
            if not any((base / path).exists() for base in (ROOT, ROOT / "blockcrawl", page.parent)):
                bad.append(f"{_name(page)}: `{span}` (no such file)")
    return bad


def test_dead_paths_found(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    page.write_text("`crawl/engine/loop.py` `tests/test_docs.py::test_x` `cli/NAME_cmd.py` `a.md`\n"
                    "`tests/test_gone.py` and `store/nothing.py`\n", encoding="utf-8")
    assert dead_paths(page) == ["a.md: `tests/test_gone.py` (no such file)", "a.md: `store/nothing.py` (no such file)"]


def test_docs_cite_existing_files() -> None:
    """Every file a page names in a code span exists: a moved module or test leaves no dead citation."""
    bad = [b for page in _pages() if page.exists() for b in dead_paths(page)]
    assert not bad, "\n".join(bad)


# ---- code says what it does now: no history in code, tests or bench --------------------------------

# The patterns the before-stop hook warns about, and the merge markers and issue references beside them.
_ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|\d+(?:st|nd|rd|th))"
_HISTORY = re.compile(
    _ORDINAL + r" session"  # "ninth session", "9th session"
    r"|\bsession #?\d+|\b(?:this|that|previous|earlier|last|later|next|another) session\b"
    r"|\bissues? #?\d+"  # "issue 23", "issue #22"
    r"|(?<![\w#&])#\d{1,3}(\.\d+|\s+item)"  # "#24.5", "#23 item 3"
    # a score history, with or without the leading 0: "0.656 -> 0.759", ".902 -> .935", "4.0 -> 1.8 s"
    r"|(?<![\w.])\d*\.\d+ *(ms|s|x|%)? *(->|=>|\u2192) *\d*\.\d+"
    r"|\(was [\d.]"  # "(was 0.6: ...)", "(was 5)"
    r"|--- ?end \w+ ?---"  # a merge marker
    r"|adjust after .{0,40}merge",
    re.IGNORECASE)

# Files still to be cleaned, each a named exception to remove once its history is out (they were
# being edited on other branches when the rest was cleaned). The test below fails for a listed
# file that is already clean, so the list only shrinks.
HISTORY_PENDING: set[str] = set()
# this file holds the patterns and their examples
_HISTORY_SELF = {"tests/test_docs.py"}


def history_lines(path: Path) -> list[str]:
    """Each line of path that carries history, as 'path:line: text'."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _HISTORY.search(line):
            out.append(f"{_name(path)}:{n}: {line.strip()}")
    return out


def _code_files() -> list[Path]:
    return sorted(p for d in ("blockcrawl", "tests", "bench") for p in (ROOT / d).rglob("*.py"))


def test_history_pattern() -> None:
    hits = ["eighth " + "session", "issue " + "23, 9a", "(#" + "24.5)", "#" + "23 item 3",
            "R@5 0.656 " + "-> 0.759", "4.0 -> " + "1.8 s", "# --- end " + "realweb ---",
            "(adjust after " + "the crawl merges)", "documentation .902 " + "-> .935", "listing .637" + "->.719",
            "R@5 0.614 \u2192" + " 0.628", "9th " + "session", "the previous " + "session", "session " + "7",
            "issues " + "#22", "budget (was " + "0.6: a chunk", "backlog (was " + "5)"]
    misses = ["schema 5 -> 6", "self.session.get(url)", "scope='session'", "color: #333", "&#39;",
              "round(x, 3)", "0.8 s and 1.2 s", "a session advisory lock", "(tokenizer, ONNX Runtime session)",
              "one session", "v1.2.3 -> v1.2.4", "0 -> 1: create what is missing", "it was 5 pages",
              "(was the store edited?)", "an issue with the page"]
    assert [h for h in hits if not _HISTORY.search(h)] == []
    assert [m for m in misses if _HISTORY.search(m)] == []


def test_no_history_in_code() -> None:
    """Docstrings and comments say what the code does and why, as it is now: no session or issue
    numbers, no score histories ("0.656 -> 0.759"), no merge markers. A measured decision goes into
    docs/decisions/ (see its README)."""
    bad = [hit for p in _code_files() if _name(p) not in HISTORY_PENDING | _HISTORY_SELF
           for hit in history_lines(p)]
    assert not bad, "history in code (move a measured decision to docs/decisions/):\n" + "\n".join(bad)


def test_history_pending_files_still_pending() -> None:
    """A file in HISTORY_PENDING that is clean leaves the list (so the exceptions only shrink)."""
    clean = sorted(f for f in HISTORY_PENDING if not (ROOT / f).exists() or not history_lines(ROOT / f))
    assert not clean, "clean now, remove from HISTORY_PENDING: " + ", ".join(clean)


_DOC_HISTORY = re.compile(
    r"(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth) session"
    r"|(?<![\w#&])#\d{1,3}(\.\d+|\s+item|'s)\b|--- ?end \w+ ?---|adjust after .{0,40}merge", re.IGNORECASE)


def test_docs_carry_no_session_or_issue_numbers() -> None:
    """The docs say how things are, not which session or issue made them so (a decision record
    has the date; the measured choice is its content)."""
    bad = [f"{_name(page)}:{n}: {line.strip()}" for page in _pages() if page.exists()
           for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1) if _DOC_HISTORY.search(line)]
    assert not bad, "\n".join(bad)


# Code names a doc section as `docs/x.md, "Heading"` (or `docs/x.md "Heading"`, `("Heading"`).
_CITED_SECTION = re.compile(r'(docs/[\w-]+\.md),? ?\(?"([^"]{3,80})"')


def dead_sections(path: Path) -> list[str]:
    """Each doc section a file's text names whose heading (or a heading beginning so) is gone."""
    bad = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for doc, heading in _CITED_SECTION.findall(line):
            page = ROOT / doc
            want = heading.lower()
            if not page.exists() or not any(s.startswith(want.replace("`", "")) for s in _sections(page)):
                bad.append(f"{_name(path)}:{n}: {doc}, \"{heading}\"")
    return bad


def _sections(path: Path) -> list[str]:
    """The page's headings and bold paragraph lead-ins ("**Speed.** ..."), lower case, no backticks."""
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (m := _HEADING.match(line) or re.match(r"^()\*\*(.+?)\*\*", line)):
            out.append(m.group(2).lower().replace("`", ""))
    return out


# cite sections renamed when docs/algorithms.md and docs/search.md became reference pages; to be
# updated with those files' own clean-up (the test below fails once a listed file is fine)
SECTIONS_PENDING: set[str] = set()


def test_code_cites_existing_doc_sections() -> None:
    bad = [b for p in _code_files() if _name(p) not in SECTIONS_PENDING | _HISTORY_SELF for b in dead_sections(p)]
    assert not bad, "sections named in code that the docs no longer have:\n" + "\n".join(bad)
    fine = sorted(f for f in SECTIONS_PENDING if not dead_sections(ROOT / f))
    assert not fine, "cites only existing sections now, remove from SECTIONS_PENDING: " + ", ".join(fine)

