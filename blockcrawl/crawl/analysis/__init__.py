"""Page analysis off the event loop: a fetched page through the site's SitePipeline.

* process.py - the worker side: parse once, take the links, run the pipeline (`analyse`).
* pool.py - the engine side: `PoolAnalyzer` runs it in worker processes, a site pinned to one.
"""
