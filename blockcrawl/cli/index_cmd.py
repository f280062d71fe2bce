"""`blockcrawl index`: embed the store's new chunks and bring the keyword index up to date."""
from __future__ import annotations

import argparse
import sys

EXAMPLES = """examples:
  blockcrawl index --store site.db                  embed chunks that have no vector yet
  blockcrawl index --store site.db --ann            build an HNSW graph (STORE.hnsw) even for a small store
  blockcrawl index --store site.db --batch-size 128
  blockcrawl index --store site.db --precision fp32   fp32 on torch (the default: int8 on ONNX Runtime)
  blockcrawl index --store site.db --rebuild          forget every vector and embed all chunks again

Re-running after a re-crawl embeds only chunks whose text is new: vectors are keyed by a hash of
the model name and the chunk text, so unchanged pages cost no model time.
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("index", help="embed a store's chunks for search (incremental)",
                       description="Embed the chunks of a crawled store with all-MiniLM-L6-v2 (bundled, "
                                   "offline) and keep its FTS5 keyword index in sync.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", required=True, metavar="PATH|URL",
                   help="the store written by 'blockcrawl crawl': an SQLite file or a postgresql:// URL")
    p.add_argument("--batch-size", type=int, default=64, metavar="N", help="texts per model call (default 64)")
    p.add_argument("--precision", choices=("int8", "fp32"), default=None,
                   help="int8: ONNX Runtime with int8 weights (default, ~3x faster); fp32: sentence-transformers "
                        "on torch. Both give vectors of one space: a store needs no re-index to switch")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="batches embedded at once, one thread each (default: the CPUs available)")
    p.add_argument("--rebuild", action="store_true",
                   help="forget every stored vector and embed all chunks again (damaged rows are "
                        "re-embedded without it)")
    p.add_argument("--ann", action="store_true", default=None,
                   help="build or update an approximate (HNSW) vector index next to the store even when "
                        "small (by default: from 300,000 vectors, or when one exists); needs hnswlib")
    p.add_argument("--no-ann", dest="ann", action="store_false", help="never build or update the HNSW index")
    p.add_argument("--no-progress", "--quiet", dest="no_progress", action="store_true",
                   help="no progress bar (there is none either when stderr is not a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.batch_size <= 4096:
        print("blockcrawl index: --batch-size must be between 1 and 4096", file=sys.stderr)
        return 2
    from ..limits import workers_error

    if args.workers is not None and (bad := workers_error(args.workers, 1)):
        print(f"blockcrawl index: --{bad}", file=sys.stderr)
        return 2
    from ..crawl.engine.progress import is_terminal
    from ..errors import BlockcrawlError
    from ..index import build_index
    from ..index.ann import available
    from ..index.embed import MiniLMEmbedder, default_embedder
    from ..store import is_postgres, open_store

    if args.ann and is_postgres(args.store):
        print("blockcrawl index: --ann keeps its graph in a file next to an SQLite store; a PostgreSQL "
              "store is searched exactly (drop --ann)", file=sys.stderr)
        return 2
    if args.ann and not available():
        print("blockcrawl index: --ann needs hnswlib (pip install 'blockcrawl[ann]')", file=sys.stderr)
        return 2
    try:
        # a writer: waits for no crawl (refused while one runs), never creates a store
        with open_store(args.store, create=False, who="blockcrawl index") as store:
            emb = default_embedder()
            if args.precision is not None or args.workers is not None:
                emb = MiniLMEmbedder(args.batch_size, precision=args.precision or emb.precision,
                                     workers=args.workers)
            # a bar only on a terminal: in a log file its `\r` redraws are a line each
            bar = not args.no_progress and is_terminal(sys.stderr)
            st = build_index(store, emb, batch_size=args.batch_size, ann=args.ann, progress=bar,
                             rebuild=args.rebuild)
            where = store.location
    except BlockcrawlError as e:
        print(f"blockcrawl index: {e}", file=sys.stderr)
        return 2
    print(f"indexed {where}: {st.chunks} chunks, {st.embedded} embedded, {st.reused} reused, "
          f"{st.removed} stale vectors removed{f', {st.repaired} damaged re-embedded' if st.repaired else ''}"
          f"{', ANN built' if st.ann else ''} in {st.seconds:.1f} s",
          file=sys.stderr)
    return 0
