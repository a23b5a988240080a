"""What each shipped data file that a deterministic pipeline rebuilds was made from, and whether that changed.

``pipelines/inputs.json`` holds, per file: its sha256, the commands that rebuild it, the sha256 of the repository
files it is made from and the versions of the installed packages it reads (``packages``: checked). What a clean clone
lacks (``downloads``) and what could not be reproduced here (``built_with``) is recorded, not checked.
``tests/test_pipelines.py`` fails when a checked hash or version differs: an input changed without a rebuild, or the
file changed without its inputs being recorded.

    python pipelines/inputs.py            # what differs (exit 1 if anything does)
    python pipelines/inputs.py --write    # after a rebuild (or a check that it is byte-identical): record today's

The first-run cache, the packaged models and the PERSON tagger have their own checks (``tests/test_cache.py``,
``tests/attacks/test_packaged_models.py``, ``tests/detectors/test_tagger.py``); ``pipelines/README.md`` lists them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = Path(__file__).with_name("inputs.json")
RECORD = "python pipelines/inputs.py --write"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"


def installed(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def stale(manifest: dict[str, Any] | None = None, root: Path = ROOT) -> list[str]:
    """One line per checked hash or version that is not what ``manifest`` records, each naming what to run."""
    manifest = manifest if manifest is not None else json.loads(MANIFEST.read_text(encoding="utf-8"))
    found = []
    for output, entry in manifest["files"].items():
        rebuild = " && ".join(entry["commands"])
        if sha256(root / output) != entry["sha256"]:
            found.append(
                f"{output} is not the file pipelines/inputs.json records: rebuild it ({rebuild}), then {RECORD}"
            )
        for name, digest in entry["inputs"].items():
            if sha256(root / name) != digest:
                found.append(f"{name} changed since {output} was built: rebuild it ({rebuild}), then {RECORD}")
        for package, version in entry.get("packages", {}).items():
            if installed(package) != version:
                found.append(
                    f"{package} {installed(package)} is installed, {output} was built with {version}: "
                    f"rebuild it ({rebuild}), then {RECORD}"
                )
    return found


def record(manifest: dict[str, Any], root: Path = ROOT) -> dict[str, Any]:
    """``manifest`` with today's hashes and versions of every file, input and package it names."""
    for output, entry in manifest["files"].items():
        entry["sha256"] = sha256(root / output)
        entry["inputs"] = {name: sha256(root / name) for name in entry["inputs"]}
        entry["packages"] = {package: installed(package) for package in entry.get("packages", {})}
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="record today's hashes and versions")
    if parser.parse_args().write:
        manifest = record(json.loads(MANIFEST.read_text(encoding="utf-8")))
        MANIFEST.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"recorded {MANIFEST}")
        return
    found = stale()
    print("\n".join(found) or "every shipped data file is as built from today's inputs")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
