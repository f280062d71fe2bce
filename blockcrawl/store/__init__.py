"""Store stage: the embedded SQLite file that crawl writes and index/search read."""
from .db import Store

__all__ = ["Store"]
