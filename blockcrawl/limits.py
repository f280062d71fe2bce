"""Size limits shared by the stages, written once (the 10 MiB body cap was a literal in 7 places)."""

MAX_BODY_BYTES = 10 * 1024 * 1024  # largest body fetched, and after decompression (crawl --max-bytes)
