"""One exception tree for everything a user can get wrong or the world can refuse.

Every CLI command catches `BlockcrawlError` and prints its message as one line with exit 2, so a
new error is a new subclass here, never a new except-clause in each command.
"""
from __future__ import annotations


class BlockcrawlError(Exception):
    """Base of every error blockcrawl raises on purpose (bad input, a missing store...)."""


class ConfigError(BlockcrawlError, ValueError):
    """An option or configuration value is out of range or unknown."""


class StoreError(BlockcrawlError):
    """The store cannot be opened, is not a blockcrawl store, or is locked by another writer."""


class StoreMissing(StoreError):
    """No store at the given path."""


class NotIndexed(StoreError):
    """The store has no index, or one built with another model."""


class QueryError(BlockcrawlError, ValueError):
    """A search query or its options cannot be answered (empty query, unknown mode...)."""


class InputError(BlockcrawlError, TypeError):
    """A page handed to the library is neither text nor bytes (None, a number, a file object)."""


class FetchError(BlockcrawlError):
    """A page that the user asked for directly (extract URL) could not be fetched."""


__all__ = ["BlockcrawlError", "ConfigError", "FetchError", "InputError", "NotIndexed", "QueryError", "StoreError", "StoreMissing"]
