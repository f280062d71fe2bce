"""Search stage: hybrid (RRF of vector and keyword ranks), vector or keyword search; HTTP API."""
from .format import format_hits
from .hybrid import MODES, Hit, SearchError, SearchOptions, search

__all__ = ["MODES", "Hit", "SearchError", "SearchOptions", "format_hits", "search"]
