"""The crawl's decisions: pure functions that return a frozen value (outcome.py) and change nothing.

The engine (crawl.engine.record) is the one place that applies what they return.

* outcome.py - the values: Answered, Stored, NotStored, Retry, Failed, ... (one union, `Outcome`).
* triage.py - a fetch result to retry / skip / fail / unchanged / gone / redirect / read the body.
* retry.py - back-off, Retry-After and redirect rules; a host's verdict after failures.
* pagestep.py - a fetched page to Stored / NotStored (noindex, canonical) / Unchanged / Failed.
* admission.py - which links, redirects and canonicals a page adds (`Known`: what the crawl knows).
* policy.py, traps.py - which URLs a crawl follows: scope, depth, include/exclude, URL traps.
* discovery.py - robots.txt, the sitemaps and feeds it leads to, and the URLs they list.
* seeding.py - what a crawl starts from: seeds, a resumed frontier, a recrawl baseline.
* sitemodels.py - when a site learns its model (crawl --algorithm site) and what is stored.
"""
