"""What every benchmark script shares: a parser whose integer knobs default to the published run, and the real
sentences several of them embed."""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from pathlib import Path

# fortune cookies (fortunes, fortunes-min; BSD) and WordNet's gloss examples (wordnet-base): text nobody on the
# project wrote, for throughput and attack runs (never for training or tuning)
SENTENCE_PACKAGES = ("fortunes", "fortunes-min", "wordnet-base")


def bench_parser(doc: str | None, **ints: int) -> argparse.ArgumentParser:
    """An argparse parser with the script's docstring as help and one ``--name`` int option per keyword."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in ints.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=default)
    return parser


def real_sentences(path: Path) -> list[str]:
    """About 57,000 human-written English sentences of 4 to 30 words from ``SENTENCE_PACKAGES``, in a fixed order,
    written to ``path`` one a line the first time (``apt-get download``: run ``apt-get update`` once on a fresh
    machine; no root needed)."""
    if not path.exists():
        with tempfile.TemporaryDirectory() as work:
            try:
                subprocess.run(["apt-get", "download", *SENTENCE_PACKAGES], cwd=work, check=True, capture_output=True)
            except (OSError, subprocess.CalledProcessError) as exc:
                raise RuntimeError("apt-get download failed: run 'apt-get update' once first") from exc
            for deb in sorted(Path(work).glob("*.deb")):
                subprocess.run(["dpkg-deb", "-x", str(deb), f"{work}/x"], check=True)
            path.write_text("".join(f"{line}\n" for line in _sentences(Path(work) / "x/usr/share")), encoding="utf-8")
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _sentences(share: Path) -> list[str]:
    def clean(text: str) -> str:
        return re.sub(r"\s+", " ", text).strip(" \t\"'")

    def usable(text: str) -> bool:
        return 4 <= len(text.split()) <= 30 and text.isascii() and not re.search(r"[|_\\/<>{}\[\]=#@~^*]", text)

    seen: dict[str, None] = {}
    for file in sorted((share / "games/fortunes").glob("*"), key=str):
        if re.search(r"\.(dat|u8)$", str(file)) or "mario" in str(file):
            continue
        for cookie in file.read_text(encoding="latin-1").split("\n%\n"):
            body = " ".join(line for line in cookie.split("\n") if not line.strip().startswith("--"))
            for sentence in map(clean, re.split(r"(?<=[.!?])\s+(?=[A-Z\"'])", re.sub(r"\s+", " ", body))):
                if usable(sentence):
                    seen.setdefault(sentence)
    for file in sorted((share / "wordnet").glob("data.*"), key=str):
        for line in file.read_text(encoding="latin-1").splitlines(keepends=True):
            if "|" in line and not line.startswith("  "):
                for quoted in re.findall(r'"([^"]+)"', line.split("|", 1)[1]):
                    if usable(clean(quoted)):
                        seen.setdefault(clean(quoted))
    return list(seen)
