"""A PII detector worker: ``python -m vdbguard.detectors.worker NAME [--settings-on-stdin]`` (started by
``ProcessSharedDetector``; with the flag, its first line of input is the detector's settings as JSON).

It prints ``ready`` once its detector is built, then answers each line of input, a JSON list of texts, with one
line: a JSON list of each text's reading (``Detector.read_many``: ``{"detections": [...], "unsure": false,
"doubt": 0.0}``).
It exits at the end of its input, so it never outlives its scan.
"""

from __future__ import annotations

import gc
import json
import os
import sys

# Presidio imports transformers, and with it torch, for an engine vdbguard never uses. Blocked here (None in
# sys.modules makes an import raise ImportError, which Presidio expects), a worker starts in about 1.6 s
# instead of 5 and holds a few hundred MiB less; torch stays importable for a detector that runs a model.
sys.modules["transformers"] = None  # type: ignore[assignment]


def main() -> None:
    from vdbguard import plugins
    from vdbguard.detectors import load_detector
    from vdbguard.detectors.shared import READY, SETTINGS_FLAG, encode
    from vdbguard.identifiers import DetectorSettings

    if plugins.load("detectors", sys.argv[1]).uses_torch:
        import torch

        torch.set_num_threads(1)  # one worker a core
    else:
        sys.modules["torch"] = None  # type: ignore[assignment]

    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything a library prints goes to stderr, never into the answers
    sys.stdout = sys.stderr
    settings = DetectorSettings.model_validate_json(sys.stdin.readline()) if SETTINGS_FLAG in sys.argv[2:] else None
    detector = load_detector(sys.argv[1], settings=settings)
    gc.freeze()  # the loaded pipeline lives as long as this process: the cyclic collector need not walk it
    print(READY, file=answers, flush=True)
    for line in sys.stdin:
        print(encode(detector.read_many(json.loads(line))), file=answers, flush=True)


if __name__ == "__main__":
    main()
