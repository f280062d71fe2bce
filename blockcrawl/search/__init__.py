"""Search stage: hybrid (RRF of vector and keyword ranks), vector or keyword search; HTTP API."""
from .hybrid import MODES, Hit, SearchError, search

__all__ = ["MODES", "Hit", "SearchError", "search"]
