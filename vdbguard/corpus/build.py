"""The attack-training corpus: synthetic PII, synthetic hard negatives, human lines, real sentences with placed
PII and real hard negatives, and the user's texts."""

from __future__ import annotations

import random
from collections.abc import Sequence

from vdbguard.corpus.generator import derive_seed, synthetic_clean, synthetic_pii
from vdbguard.corpus.human import human_sentences
from vdbguard.corpus.labelled import LabelledText, Split
from vdbguard.corpus.real import real_corpus


def build_corpus(
    n_pii: int,
    n_clean: int,
    seed: int = 0,
    user_texts: Sequence[str] = (),
    split: Split = "train",
    n_real_pii: int = 0,
    n_real_clean: int = 0,
) -> list[LabelledText]:
    """``n_pii`` PII sentences, ``n_clean`` clean ones and the caller's texts, deterministically shuffled.

    ``n_real_pii`` and ``n_real_clean`` add real sentences from the training sources of
    :mod:`vdbguard.corpus.real` (with placed PII, and hard negatives); never for ``split="holdout"``, whose
    real counterpart is that module's calibration split.

    The clean part is half synthetic hard negatives and half human lines from ``split`` (topped up with
    synthetic ones when there are too few human lines). ``user_texts`` come back with ``source="user"`` and
    empty labels: they are for the vocabulary, and whether they hold PII is the caller's call.
    """
    if n_pii < 0 or n_clean < 0:
        raise ValueError(f"n_pii and n_clean must be >= 0, got {n_pii} and {n_clean}")
    if split != "train" and (n_real_pii or n_real_clean):
        raise ValueError("real sentences are for training only: the holdout split has none")
    rng = random.Random(derive_seed(seed, f"corpus:{split}"))
    humans = human_sentences(split)
    n_human = min(n_clean // 2, len(humans))
    human_items = [
        LabelledText(text=t, pii=frozenset(), values={}, source="human") for t in rng.sample(humans, n_human)
    ]
    # Salting the seed with the split keeps holdout synthetic sentences different from training ones.
    sub_seed = seed if split == "train" else derive_seed(seed, "holdout")
    items = [
        *synthetic_pii(n_pii, sub_seed),
        *synthetic_clean(n_clean - n_human, sub_seed),
        *human_items,
        *(real_corpus(n_real_pii, n_real_clean, seed) if n_real_pii or n_real_clean else ()),
        *(LabelledText(text=t, pii=frozenset(), values={}, source="user") for t in user_texts if t.strip()),
    ]
    rng.shuffle(items)
    return items
