"""The product, forum and service rules (extraction.pagerules, params.type_rules) on small hand-made
pages: what each type's reader searches for stays, reviews, questions, signatures and text said
twice go."""
from dataclasses import replace

from blockcrawl.extraction import auto, pagerules
from blockcrawl.extraction.api import main_content
from blockcrawl.extraction.features import compute
from blockcrawl.extraction.furniture import whole
from blockcrawl.extraction.params import DEFAULTS
from blockcrawl.parse import load

NAV = '<nav><ul>' + "".join(f'<li><a href="/c{i}">Category {i}</a></li>' for i in range(8)) + "</ul></nav>"
FOOTER = "<footer><p>Copyright 2024 Example Shop Ltd.</p></footer>"


def _text(html: str, rule: str) -> str:
    dom = load(html)
    keep = auto.typed_rule(dom, compute(dom), rule, keep_title=False)
    assert keep is not None
    return main_content(dom, keep=keep)[1]


def product_page() -> str:
    slides = "".join(
        '<div class="slide"><p>Double-wall vacuum insulation keeps cold drinks cold and hot drinks '
        'hot until the last sip, all day long.</p></div>' for _ in range(3))
    specs = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in
                    [("Capacity", "591 ml"), ("Material", "18/8 stainless steel"), ("Weight", "0.9 lb"),
                     ("Dishwasher safe", "Yes")])
    reviews = "".join(
        f'<li class="review-item"><p><b>Buyer {i}</b>: Great mug, I take it everywhere and it has never '
        f'leaked once in {i} months of daily use, five stars from me.</p></li>' for i in range(6))
    cards = "".join(f'<div class="product-card"><a href="/p{i}">Bottle {i}</a><span>$2{i}.00</span></div>'
                    for i in range(6))
    return (f"<html><head><title>Rambler Tumbler</title></head><body>{NAV}<div class='product'>"
            "<h1>Rambler Tumbler</h1><p class='price'>$35.00</p>"
            "<div class='description'><p>A go-to for coffee on the go, this tumbler fits in most "
            "cupholders, resists splashes, and is built from durable steel to last for years.</p>"
            f"<div class='feature-slides'>{slides}</div></div>"
            f"<h2>Specifications</h2><table class='specs'>{specs}</table>"
            f"<section class='product-reviews'><h2>Customer reviews</h2><ul>{reviews}</ul></section>"
            "<div class='questions'><h3>Will it fit in my cupholder?</h3><p>Yes, it fits in most "
            "cupholders of cars and boats, and in the side pocket of most backpacks too.</p></div>"
            f"<div class='recommendations'><h2>Customers also bought</h2>{cards}</div>"
            f"</div>{FOOTER}</body></html>")


def test_product_rule_keeps_description_specs_price_and_drops_reviews():
    html = product_page()
    text = _text(html, "product")
    assert "A go-to for coffee on the go" in text
    assert "$35.00" in text
    for cell in ("Capacity", "591 ml", "18/8 stainless steel", "Dishwasher safe"):
        assert cell in text
    assert text.count("Double-wall vacuum insulation") == 1  # the carousel's cloned slides once
    assert "Buyer 3" not in text and "five stars" not in text
    assert "Will it fit" not in text
    assert "Bottle 2" not in text and "Customers also bought" not in text
    # the mild rule alone keeps the reviews and the clones: the product rule is what drops them
    mild = _text(html, "mild")
    assert "Buyer 3" in mild and mild.count("Double-wall vacuum insulation") == 3


def forum_page() -> str:
    posts = "".join(
        f'<div class="post"><div class="message-user"><a class="username" href="/u/{name}">{name}</a> '
        f'<div class="message-userExtras"><dl><dt>Messages</dt><dd>{1200 + i}</dd></dl></div>'
        f'<span>Posted May {i + 1}, '
        f"2024</span></div><div class='post-body'><p>Reply {i}: {body}</p></div>"
        f'<div class="signature">{name} - running Debian on a ThinkPad X220 since 2012.</div></div>'
        for i, (name, body) in enumerate([
            ("raoul", "After upgrading to 2024.5 the server hangs on start, the log shows a timeout "
                      "in the custom integration, which worked fine before."),
            ("petra", "Remove the integration from custom_components, restart, and add it back "
                      "once its author has released a fixed version for 2024.5."),
            ("raoul", "That worked, thank you, the server starts in twenty seconds again and the "
                      "log is clean, I will wait for the new release."),
            ("petra", "Glad it helped, please mark the thread as solved so others with the same "
                      "problem find the answer quickly.")]))
    side = "".join(f'<li><a href="/t/{i}">Other thread {i}</a></li>' for i in range(10))
    return (f"<html><head><title>Server hangs on start</title></head><body>{NAV}"
            f"<div class='thread'><h1>Server hangs on start</h1>{posts}</div>"
            f"<aside><ul>{side}</ul></aside>{FOOTER}</body></html>")


def test_forum_rule_keeps_every_post_with_its_author():
    html = forum_page()
    text = _text(html, "thread")
    for i in range(4):
        assert f"Reply {i}:" in text and f"Posted May {i + 1}, 2024" in text
    assert text.count("raoul") >= 2 and text.count("petra") >= 2
    assert "ThinkPad" not in text  # the signatures
    assert "Messages" not in text and "1203" not in text  # the authors' statistics
    assert "Other thread" not in text
    assert "ThinkPad" in _text(html, "mild")


def test_service_sections_take_main_else_wide():
    body = "".join(f"<section><h2>Plan {i}</h2><p>We design and maintain heating systems of size {i} "
                   f"for homes and offices across the county, one engineer from start to end.</p>"
                   f"<a class='cta' href='/quote{i}'>Get a quote</a></section>" for i in range(4))
    with_main = f"<html><body>{NAV}<main>{body}</main>{FOOTER}</body></html>"
    text = _text(with_main, "sections")
    assert all(f"Plan {i}" in text and f"heating systems of size {i}" in text for i in range(4))
    assert "Copyright" not in text and "Category 3" not in text
    dom = load(with_main)
    assert auto.typed_rule(dom, compute(dom), "sections", False) == whole(dom, compute(dom), region=True)
    no_main = with_main.replace("<main>", "<div>").replace("</main>", "</div>")
    dom = load(no_main)
    f = compute(dom)
    assert auto.typed_rule(dom, f, "sections", False) == auto.typed_rule(dom, f, "wide", False)


def test_service_sections_keep_page_builder_modules_and_the_hero_banner():
    """A page builder's modules (Elementor's elementor-widget-wrap) and a hero banner hold a
    service page's text: the sections rule keeps them, a cookie banner and a widget-area sidebar
    stay out (their other words, or "area", name them furniture)."""
    mods = "".join(f'<div class="elementor-widget-wrap elementor-element-populated"><h2>Plan {i}</h2>'
                   f"<p>We design and maintain heating systems of size {i} for homes and offices across "
                   f"the county, one engineer from start to end.</p></div>" for i in range(3))
    hero = ('<div class="banner has-hover"><h1>Heating you can trust</h1><p>Twenty years of installing, '
            "servicing and repairing boilers for families and small businesses in the valley.</p></div>")
    junk = ('<div class="cookie-banner"><p>We use cookies to improve your experience on this site, '
            'accept them or read our policy.</p></div><div class="widget-area"><p>Recent posts from our '
            "blog about boilers, radiators and the winter ahead, with tips for every home.</p></div>")
    html = f"<html><body>{NAV}<main>{hero}{mods}{junk}</main>{FOOTER}</body></html>"
    text = _text(html, "sections")
    assert "Twenty years of installing" in text
    assert all(f"heating systems of size {i}" in text for i in range(3))
    assert "We use cookies" not in text and "Recent posts" not in text
    dom = load(html)
    plain = main_content(dom, keep=whole(dom, compute(dom), region=True))[1]
    assert "Twenty years" not in plain and "heating systems of size 0" not in plain  # without the rule's names


def test_dedup_keeps_short_repeats_and_first_copies():
    dom = load("<div><p>Yes</p><p>Yes</p><p>Same sentence here.</p><p>Same   sentence here.</p></div>")
    keep = pagerules.dedup(dom, [True] * len(dom))
    kept = [dom.text[j] for j in range(len(dom)) if keep[j] and dom.tag[j] == "#text"]
    assert kept.count("Yes") == 2 and len([t for t in kept if t.startswith("Same")]) == 1


def test_a_named_wrapper_of_the_whole_text_stays():
    """A "review" page whose wrapper holds everything kept is no review list inside a product."""
    html = ("<html><body><div class='product-review-page'><p>" + "This blender crushes ice in seconds "
            "and is easy to clean, though it is loud at full speed. " * 4 + "</p></div></body></html>")
    dom = load(html)
    keep = pagerules.product(dom, [True] * len(dom), [False] * len(dom), [0] * len(dom))
    assert any(keep[j] for j in range(len(dom)) if dom.tag[j] == "#text" and "blender" in dom.text[j])


def test_a_bare_url_is_no_product_text():
    dom = load("<div><p>https://cdn.example.com/img/5001_BONE.jpg</p><p>Mid weight, 100% combed cotton "
               "https://example.com/care</p></div>")
    keep = pagerules.drop_urls(dom, [True] * len(dom))
    kept = [dom.text[j] for j in range(len(dom)) if keep[j] and dom.tag[j] == "#text"]
    assert kept == ["Mid weight, 100% combed cotton https://example.com/care"]


def test_docs_rule_keeps_the_body_and_drops_its_navigation_boxes():
    params = "".join(f"<dt><code>opt{i}</code></dt><dd>Sets option {i} of the stream.</dd>" for i in range(4))
    html = (f"<html><body>{NAV}<main><h1>open()</h1><div class='on-this-page'><a href='#p'>Parameters</a> "
            "<a href='#e'>Examples</a></div><p>Opens a stream and returns a handle that reads the file in "
            f"blocks, buffering as configured by the options below.</p><h2>Parameters</h2><dl>{params}</dl>"
            "<pre>h = open('data.bin')\nh.close()</pre>"
            "<div class='prev-next'><a href='/read'>Previous: read()</a> <a href='/seek'>Next: seek()</a></div>"
            "<div class='last-modified'>Last modified March 3, 2024 by the docs team</div>"
            f"</main>{FOOTER}</body></html>")
    text = _text(html, "docs")
    for want in ("Opens a stream", "opt3", "Sets option 3 of the stream.", "h.close()", "Parameters"):
        assert want in text
    assert "Previous: read()" not in text and "Last modified" not in text and "Examples" not in text
    region = _text(html, "region")
    assert "Previous: read()" in region and "Last modified" in region


def service_page() -> str:
    sections = "".join(
        f"<section><h2>Boiler plan {i}</h2><p>We design and maintain heating systems of size {i} for "
        f"homes and offices across the county, one engineer from start to end.</p>"
        f"<a href='/plan{i}'>Learn more</a></section>" for i in range(4))
    hero = ("<div class='hero'><h1>Heating you can trust</h1><p>Twenty years of installing, servicing "
            "and repairing boilers for families and small businesses in the valley.</p>"
            "<div><a href='/visit'>Book a visit</a><a class='btn-primary' href='/prices'>Prices</a></div></div>")
    quote = ("<blockquote class='slide'><p>They replaced our old boiler in a single day and left the "
             "house cleaner than they found it, a team we will call again.</p><p>Maria Lopez, Riverside</p>"
             "</blockquote>")
    tail = ("<p>Not sure which plan fits? Read our <a href='/guide'>buying guide</a> first.</p>"
            "<div><a href='/repairs'>Boiler repairs</a></div>")
    return (f"<html><head><title>Heating plans</title></head><body>{NAV}<main>{hero}{sections}"
            f"{quote}{quote}{tail}</main>{FOOTER}</body></html>")


def test_service_page_drops_its_calls_to_action_and_sentences_said_twice(monkeypatch):
    """A service page's buttons ("Learn more" under every section, a link opening with a call's verb, a link named a button) and
    a carousel's cloned slide go; a link inside a sentence and a link naming a service stay."""
    from blockcrawl.extraction import nfas

    monkeypatch.setattr(nfas, "page_type", lambda dom, keep: "service")

    def text(params=DEFAULTS) -> str:  # type: ignore[no-untyped-def]
        dom = load(service_page())
        return main_content(dom, keep=auto.select(dom, params=params))[1]

    got = text()
    assert all(f"heating systems of size {i}" in got for i in range(4))
    assert "Twenty years of installing" in got
    for cta in ("Learn more", "Book a visit", "Prices"):
        assert cta not in got, cta
    assert "Read our buying guide first" in " ".join(got.split())
    assert "Boiler repairs" in got
    assert got.count("replaced our old boiler") == 1 and got.count("Maria Lopez") == 1
    # without the rule: every section's button and both slides were the page's text
    before = text(replace(DEFAULTS, service_kinds=frozenset()))
    assert before.count("Learn more") == 4 and "Book a visit" in before and "Prices" in before
    assert before.count("replaced our old boiler") == 2 and before.count("Maria Lopez") == 2


def test_repeated_blocks_drop_second_copies_not_wrappers_or_short_repeats():
    """The second copy of a block goes whole; the first copy's wrappers (same text) stay, and so
    do a block under params.repeat_chars and a text node said twice in different blocks."""
    quote = "<p>A long sentence of praise for the team that fixed our heating in a day.</p><p>Ann, Leeds</p>"
    html = (f"<div id='a'><div><div class='slide'>{quote}</div></div></div><div class='slide'>{quote}</div>"
            "<div><p>Yes</p><p>Plan A</p></div><div><p>Yes</p><p>Plan A</p></div>"
            f"<div><p>A long sentence of praise for the team that fixed our heating in a day.</p><p>Bob</p></div>")
    dom = load(html)
    keep = pagerules.repeated_blocks(dom, [True] * len(dom))
    said = [dom.text[j] for j in range(len(dom)) if keep[j] and dom.text[j].strip()]
    assert said.count("Ann, Leeds") == 1
    assert said.count("Plan A") == 2  # 11 characters: under the limit
    assert said.count("Bob") == 1 and len([t for t in said if t.startswith("A long sentence")]) == 2


def test_calls_to_action_are_a_service_rule(monkeypatch):
    from blockcrawl.extraction import nfas

    monkeypatch.setattr(nfas, "page_type", lambda dom, keep: "article")
    dom = load(service_page())
    assert "Learn more" in main_content(dom, keep=auto.select(dom))[1]
