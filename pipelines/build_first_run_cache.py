"""Build ``vdbguard/data/first-run-cache.json``: the entries of the user's cache that a first scan on a new machine
would otherwise compute before its first page. The hash of every corpus the packaged models and verdicts were made
from (each profile's training corpus and its verdict's calibration corpus: seconds of Faker and spaCy to build, only
to be hashed), the detector's word lists (every Faker locale read, spaCy over every chatterbot line, in every
detector process), and the packaged MiniLM's identity (loading the model only to know its dimension).

Run it after anything those are made from changes (the corpus code, ``vdbguard/data``, the detector's lists, Faker,
chatterbot-corpus, spaCy, the packaged model); ``tests/test_cache.py`` fails until it is run::

    python pipelines/build_first_run_cache.py            # [--out FILE]: elsewhere, to compare
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "vdbguard" / "data" / "first-run-cache.json"
MACHINE_SPECIFIC = ("corpus-digests/sources-", "embedders/files-")  # keyed by file times and inodes: not portable


def first_run() -> None:
    """What a first default scan computes before its first page, into the cache ``VDBGUARD_CACHE_DIR`` names."""
    from vdbguard.attacks.training import PROFILES, training_digest
    from vdbguard.detectors.lexicon import name_gazetteer
    from vdbguard.detectors.validators import may_hold
    from vdbguard.embedders import Embedder
    from vdbguard.pii import PiiType
    from vdbguard.scan.fused import verdict_corpus_hash

    for profile in PROFILES.values():
        training_digest(profile)
        verdict_corpus_hash(profile.verdict_records)
    name_gazetteer()
    may_hold(PiiType.PERSON, "a text")  # the validators' ordinary words
    assert Embedder().fingerprint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    out = parser.parse_args().out
    import vdbguard.data

    vdbguard.data.first_run_cache = dict  # computed from scratch, never read back from the shipped file
    with tempfile.TemporaryDirectory() as cache:
        os.environ["VDBGUARD_CACHE_DIR"] = cache
        first_run()
        entries = {
            path.relative_to(cache).as_posix(): json.loads(path.read_text())
            for path in sorted(Path(cache).rglob("*.json"))
            if not path.relative_to(cache).as_posix().startswith(MACHINE_SPECIFIC)
        }
    out.write_text(json.dumps(entries, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"wrote {out}: {', '.join(entries)}")


if __name__ == "__main__":
    main()
