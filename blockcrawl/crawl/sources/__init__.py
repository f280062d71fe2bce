"""Where URLs come from besides a page's links, and the links themselves: parsers, no network.

* robots.py - robots.txt rules per host (protego).
* sitemaps.py, sitemap_parse.py - sitemap discovery and bounds; XML / gzip / TXT bodies to URLs.
* feeds.py - RSS, Atom and JSON Feed bodies to URLs.
* llmstxt.py - llms.txt files to URLs (`crawl --llms-txt`).
* links.py - the links of a parsed page (a[href], area[href], <base href>).
"""
