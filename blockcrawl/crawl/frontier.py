"""Frontier entries and their states, as the crawl names them (defined in blockcrawl.frontier_item,
below the crawl and the store, which both use them)."""
from __future__ import annotations

from ..frontier_item import DONE, FAILED, IN_FLIGHT, QUEUED, SKIPPED, STATE_NAMES, Item

__all__ = ["DONE", "FAILED", "IN_FLIGHT", "QUEUED", "SKIPPED", "STATE_NAMES", "Item"]
