"""What a flag means: the verdicts' quality measured on real text, stated in every report.

From ``benchmarks/real_text.py`` (BENCHMARKS.md, "Verdicts on real text"): records that name a real
person vs records that name nobody, in text nobody on the project wrote and no model was trained on,
judged by their vectors alone, default settings. Measured per embedder and verdict mode: MiniLM for
``default``, ``any`` and ``owner``; ``store`` (the store's model cannot run here) with mpnet vectors standing in
for the unknown model; all four with the default detector (version 17), whose labels train the fused verdict and
the owner's calibration, and attacks trained across registers (fortune cookies, numbers in running text, product
lines). ``owner`` and ``store``: the mean of six draws of the records (a draw moves a row by up to 0.25).
A report for any other pair says that nothing was measured. ``tests/scan/test_quality.py`` fails when BENCHMARKS.md
holds other figures.
"""

from __future__ import annotations

from vdbguard.reports.schema import ExpectedQuality

COMMAND = "OMP_NUM_THREADS=1 python benchmarks/real_text.py --out OUT --n 600 --with-text 800"
DRAWS = " --seed S, for S in 0..5"
MEASURED_ON = {"default": "2026-12-07", "any": "2026-12-07", "owner": "2026-12-07", "store": "2026-12-07"}

MINILM, STORE = "all-MiniLM-L6-v2", "store"
MEASURED: dict[tuple[str, str], tuple[tuple[str, float, float], ...]] = {
    # (embedder, mode): (source, recall, false-positive rate)
    (MINILM, "default"): (("WordNet person glosses vs places and organisations", 0.5183, 0.06),
                ("fortune cookies attributed to a person vs naming nobody", 0.6283, 0.0233)),
    (MINILM, "any"): (("WordNet person glosses vs places and organisations", 0.74, 0.1133),
            ("fortune cookies attributed to a person vs naming nobody", 0.8267, 0.1183)),
    (MINILM, "owner"): (("WordNet person glosses vs places and organisations", 0.9851, 0.0077),
              ("fortune cookies attributed to a person vs naming nobody", 0.6985, 0.0196)),
    (STORE, "store"): (("WordNet person glosses vs places and organisations (mpnet vectors)", 0.9958, 0.0026),
                       ("fortune cookies attributed to a person vs naming nobody (mpnet vectors)", 0.8614, 0.0136)),
}  # fmt: skip


def expected_quality(mode: str, embedder: str) -> list[ExpectedQuality]:
    """The measured quality of the verdict ``mode`` (``default``: fused, ``any``, ``owner`` or ``store``) on real
    text, for vectors of ``embedder`` (its name, or ``store``); empty when nobody measured that pair."""
    command = COMMAND + (DRAWS if mode in ("owner", "store") else "")
    shared = {"mode": mode, "measured_on": MEASURED_ON.get(mode, ""), "command": command}
    return [
        ExpectedQuality(**shared, source=source, recall=recall, false_positive_rate=fpr)
        for source, recall, fpr in MEASURED.get((embedder, mode), ())
    ]


def not_measured(mode: str, embedder: str) -> str:
    return (
        f"No quality was measured on real text for embedder {embedder!r} with the {mode!r} verdict: read its flags "
        "as unvalidated, or measure on your own data (vdbguard evaluate-attacks, benchmarks/real_text.py)."
    )


def quality_for(mode: str, embedder: str) -> tuple[list[ExpectedQuality], str | None]:
    """What a report states of its flags: the measured quality, or why there is none."""
    quality = expected_quality(mode, embedder)
    return quality, None if quality else not_measured(mode, embedder)
