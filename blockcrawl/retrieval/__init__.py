"""Search stage: hybrid (RRF of vector and keyword ranks), vector or keyword search; HTTP API."""
from .format import format_hits
from .hybrid import MODES, Hit, SearchError, search

__all__ = ["MODES", "Hit", "SearchError", "format_hits", "search"]
