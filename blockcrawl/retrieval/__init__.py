"""Search stage: hybrid (RRF of vector and keyword ranks), vector or keyword search; HTTP API."""
from .format import format_hits
from .hit import Hit
from .options import MODES, SearchError, SearchOptions
from .searcher import search

__all__ = ["MODES", "Hit", "SearchError", "SearchOptions", "format_hits", "search"]
