"""Index stage: embeddings (pluggable Embedder), vectors and FTS5 in the store, optional ANN."""
from .build import IndexStats, build_index
from .embed import Embedder, MiniLMEmbedder, default_embedder
from .errors import IndexError_, NotIndexed, StoreMissing

__all__ = ["Embedder", "IndexError_", "IndexStats", "MiniLMEmbedder", "NotIndexed", "StoreMissing",
           "build_index", "default_embedder"]
