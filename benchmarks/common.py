"""What every benchmark script shares: a parser whose integer knobs default to the published run."""

from __future__ import annotations

import argparse


def bench_parser(doc: str | None, **ints: int) -> argparse.ArgumentParser:
    """An argparse parser with the script's docstring as help and one ``--name`` int option per keyword."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in ints.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=default)
    return parser
