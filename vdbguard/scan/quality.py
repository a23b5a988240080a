"""What a flag means: the verdicts' quality measured on real text, stated in every report.

From ``benchmarks/real_text.py`` (BENCHMARKS.md, "Verdicts on real text"): records that name a real
person vs records that name nobody, in text nobody on the project wrote and no model was trained on,
judged by their vectors alone (MiniLM; mpnet for ``store``), default settings. ``owner`` and ``store`` were
measured before the real-text training corpus, ``default`` (the fused verdict) and ``any`` after it.
Update these numbers together with BENCHMARKS.md when the benchmark is re-run.
"""

from __future__ import annotations

from vdbguard.reports.schema import ExpectedQuality

COMMAND = "OMP_NUM_THREADS=1 python benchmarks/real_text.py --out OUT --n 600 --with-text 800"
MEASURED_ON = "2026-11-23"

_MEASURED: dict[str, tuple[tuple[str, float, float], ...]] = {
    # mode: (source, recall, false-positive rate)
    "default": (("WordNet person glosses vs places and organisations", 0.5, 0.0467),
                ("fortune cookies attributed to a person vs naming nobody", 0.3783, 0.085)),
    "any": (("WordNet person glosses vs places and organisations", 0.7467, 0.0683),
            ("fortune cookies attributed to a person vs naming nobody", 0.6917, 0.1933)),
    "owner": (("WordNet person glosses vs places and organisations", 0.22, 0.03),
              ("fortune cookies attributed to a person vs naming nobody", 0.169, 0.0107)),
    "store": (("WordNet person glosses vs places and organisations", 0.135, 0.02),
              ("fortune cookies attributed to a person vs naming nobody", 0.1455, 0.0053)),
}  # fmt: skip


def expected_quality(mode: str) -> list[ExpectedQuality]:
    """The measured quality of the verdict ``mode`` (``default``: fused, ``any``, ``owner`` or ``store``) on real
    text."""
    shared = {"mode": mode, "measured_on": MEASURED_ON, "command": COMMAND}
    return [
        ExpectedQuality(**shared, source=source, recall=recall, false_positive_rate=fpr)
        for source, recall, fpr in _MEASURED.get(mode, ())
    ]
