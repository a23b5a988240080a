"""Train the fast tier and the fused verdict for the packaged MiniLM and ship them in ``vdbguard/data``, so that a
first scan on that model trains nothing (issue #44 item 4). Run again whenever the training corpus, an attack's
version or the detector changes: ``tests/attacks/test_packaged_models.py`` fails until then.

    VDBGUARD_CACHE_DIR=$(mktemp -d) python pipelines/package_fast_tier.py
"""

from __future__ import annotations

import json
import shutil
import sys

from vdbguard.attacks.training import PACKAGED_MODELS, model_folders
from vdbguard.cache import cache_root
from vdbguard.data import packaged_file
from vdbguard.embedders import Embedder
from vdbguard.progress import progress_for
from vdbguard.scan.run import warm_up


def main() -> None:
    target = packaged_file(PACKAGED_MODELS[0])
    shutil.rmtree(target, ignore_errors=True)  # stale models would be found instead of training
    embedder = Embedder()
    with progress_for(sys.stderr) as progress:
        warm_up(embedder, progress=progress)
    trained = model_folders(embedder, cache_root())[0]
    # not a staging folder another process left, nor the cache's lock files
    shutil.copytree(trained, target, ignore=shutil.ignore_patterns("tmp*", ".*.lock"))
    (target / "embedder.json").write_text(json.dumps({"embedder": embedder.name, "probes": embedder.probe_embeddings}))
    for path in sorted(target.rglob("*")):
        path.chmod(0o644 if path.is_file() else 0o755)
        print(path.relative_to(target.parent), path.stat().st_size if path.is_file() else "")


if __name__ == "__main__":
    main()
