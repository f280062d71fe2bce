"""The `blockcrawl` command. Each subcommand lives in its own module with add_parser(sub)."""
from __future__ import annotations

import argparse
import importlib
import sys

from .._version import __version__

# Subcommand modules, in the order --help lists them.
COMMANDS = ["extract", "crawl", "workers", "sites", "export", "changes", "index", "search", "serve", "mcp"]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with only, just that subcommand's (importing every command module costs
    ~2 s: crawl's pulls in aiohttp, extract's the PDF reader; `search` needs neither)."""
    p = argparse.ArgumentParser(
        prog="blockcrawl",
        description="Crawl websites into clean, de-duplicated, heading-aware text blocks and search them.",
        epilog="Run 'blockcrawl COMMAND --help' for the options and examples of each command.",
    )
    p.add_argument("--version", action="version", version=f"blockcrawl {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else [only]:
        importlib.import_module(f"blockcrawl.cli.{name}_cmd").add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from ..errors import BlockcrawlError

    try:
        return int(args.func(args) or 0)
    except BlockcrawlError as e:  # every command: one line, exit 2, no traceback
        print(f"blockcrawl {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("blockcrawl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
