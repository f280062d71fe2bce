"""Index stage: embeddings (pluggable Embedder), vectors and FTS5 in the store, optional ANN."""
from ..errors import NotIndexed, StoreMissing
from .build import IndexStats, build_index
from .embed import Embedder, MiniLMEmbedder, default_embedder

__all__ = ["Embedder", "IndexStats", "MiniLMEmbedder", "NotIndexed", "StoreMissing", "build_index", "default_embedder"]
