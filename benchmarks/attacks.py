"""Attack benchmark (issue #4): every attack on held-out text nobody on the project wrote.

Builds three held-out sets (texts of at most 32 embedder tokens, sampled with a seed) as harness JSONL:

* ``debian``: human-written sentences from Debian's fortunes and WordNet (````common.real_sentences````);
* ``chatterbot``: the holdout split of chatterbot-corpus (the attacks train on the other split);
* ``pii``: synthetic PII sentences whose names come from Faker locales the training corpus never uses
  (en_NZ, en_IN), with the full names as ``names``.

Then it runs each inversion attack on each set through ``vdbguard evaluate-attacks`` itself, and measures
the probes (pii-probe, attribute-probe), secret exposure, data-subject presence (membership) and the
throughput of the fast tier. Everything lands in ``--out`` (one JSON per measurement, ``summary.json``).

    OMP_NUM_THREADS=1 nice python benchmarks/attacks.py --out bench-attacks --n 200 --slow-n 60
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from common import real_sentences
from sklearn.metrics import roc_auc_score

from vdbguard.corpus import LabelledText, human_sentences, synthetic_clean, synthetic_pii
from vdbguard.embedders import Embedder
from vdbguard.pii import PiiType

INVERSIONS = ("bag-of-words", "gradient", "slot-search", "generative", "vec2text", "adversarial-decoding")
SLOW = frozenset({"gradient", "vec2text", "adversarial-decoding"})  # ~1 record/s or less: the first --slow-n rows only
OTHERS = ("pii-probe", "attribute-probe", "secret-exposure", "membership", "throughput")
HELDOUT_LOCALES = ("en_NZ", "en_IN")
MAX_TOKENS = 32
_TITLE = re.compile(r"^(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof)\.?\s+")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(function: Callable[[], Any]) -> tuple[Any, float, float]:
    """The result, wall seconds and CPU seconds of this process."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    result = function()
    return result, round(time.perf_counter() - wall, 2), round(cpu_seconds() - cpu, 2)


# ----- held-out sets --------------------------------------------------------------------------------


def full_names(item: LabelledText) -> list[str]:
    """PERSON values of two or more words, titles stripped (the harness scores first / last / full)."""
    names = (_TITLE.sub("", value) for value in item.values.get(PiiType.PERSON, ()))
    return [name for name in names if len(name.split()) >= 2]


def real_text(out: Path, path: Path | None) -> list[str]:
    if path is None:
        return real_sentences(out / "real-text.txt")
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_sets(
    embedder: Embedder, n: int, probe_n: int, seed: int, real_text_path: Path | None, out: Path
) -> tuple[dict[str, list[dict[str, Any]]], list[LabelledText], list[str]]:
    """The three held-out sets (<= 32 tokens of the target embedder; ``n`` rows, ``probe_n`` for pii), plus the
    labelled PII records and every short Debian line, for the probes."""
    tokenizer = embedder.model.tokenizer

    def short(texts: Sequence[str]) -> list[bool]:
        ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return [len(row) <= MAX_TOKENS for row in ids]

    rng = random.Random(seed)
    debian = real_text(out, real_text_path)
    debian = [t for t, ok in zip(debian, short(debian), strict=True) if ok]
    chatter = human_sentences("holdout")
    chatter = [t for t, ok in zip(chatter, short(chatter), strict=True) if ok]
    pii = synthetic_pii(3 * probe_n, seed=999, locales=HELDOUT_LOCALES)  # ~55% are <= 32 tokens
    pii = [item for item, ok in zip(pii, short([i.text for i in pii]), strict=True) if ok][:probe_n]
    sets = {
        "debian": [{"text": t} for t in rng.sample(debian, min(n, len(debian)))],
        "chatterbot": [{"text": t} for t in rng.sample(chatter, min(n, len(chatter)))],
        "pii": [{"text": item.text, "names": full_names(item)} for item in pii],
    }
    return sets, pii, debian


def write_jsonl(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


# ----- inversion attacks, through the CLI -----------------------------------------------------------


def evaluate_attack(data: Path, attack: str, embedder: str, profile: str, out: Path) -> dict[str, Any]:
    """``vdbguard evaluate-attacks`` in this process (loading and any training included in the times)."""
    from vdbguard.cli import main

    args = ["evaluate-attacks", "--data", str(data), "--attack", attack, "--embedder", embedder]
    folder = out.with_suffix("")
    _, wall, cpu = timed(lambda: main.main([*args, "--profile", profile, "--out", str(folder)], standalone_mode=False))
    metrics = json.loads((folder / "attack-metrics.json").read_text())
    metrics |= {"call_wall_seconds": wall, "call_cpu_seconds": cpu}
    metrics["records_per_second"] = round(metrics["n"] / metrics["seconds"], 3)
    out.write_text(json.dumps(metrics, indent=2))
    return metrics


# ----- probes, exposure, membership, throughput -----------------------------------------------------


def trained(embedder: Embedder, name: str, profile: str) -> tuple[Any, float, float]:
    from vdbguard.attacks.training import trained_attacks

    (attack,), wall, cpu = timed(lambda: trained_attacks(embedder, [name], profile=profile))
    return attack, wall, cpu


def pii_probe_metrics(embedder: Embedder, profile: str, pii: Sequence[LabelledText], debian: Sequence[str]) -> dict:
    """Per PII type: AUC and accuracy at the attack's threshold; negatives are held-out clean text."""
    attack, train_wall, _ = trained(embedder, "pii-probe", profile)
    clean = [item.text for item in synthetic_clean(len(pii) // 2, seed=999)]
    chatter = human_sentences("holdout")[: len(pii) // 2]
    texts = [item.text for item in pii] + clean + chatter
    vectors = embedder.encode(texts)
    probabilities = attack.probabilities(vectors)
    per_type = {}
    for pii_type, p in probabilities.items():
        truth = np.array([pii_type in item.pii for item in pii] + [False] * (len(clean) + len(chatter)))
        if truth.any():
            per_type[pii_type.value] = {
                "positives": int(truth.sum()),
                "auc": round(float(roc_auc_score(truth, p)), 4),
                "accuracy": round(float(np.mean((p >= attack.threshold) == truth)), 4),
            }
    flagged = np.zeros(len(debian), dtype=bool)
    for p in attack.probabilities(embedder.encode(list(debian))).values():
        flagged |= p >= attack.threshold
    return {
        "n_pii": len(pii),
        "n_clean": len(clean) + len(chatter),
        "per_type": per_type,
        "debian_any_type_flag_rate": round(float(flagged.mean()), 4),
        "n_debian": len(debian),
        "load_or_train_seconds": train_wall,
    }


def attribute_probe_metrics(embedder: Embedder, profile: str, pii: Sequence[LabelledText]) -> dict:
    attack, train_wall, _ = trained(embedder, "attribute-probe", profile)
    chatter = [LabelledText(t, frozenset(), {}, "human") for t in human_sentences("holdout")[: len(pii) // 3]]
    items = [*pii, *chatter]
    metrics = attack.evaluate(items, embedder.encode([item.text for item in items]))
    return {"n": len(items), **metrics, "load_or_train_seconds": train_wall}


def exposure_metrics(embedder: Embedder, profile: str, n: int) -> dict:
    """Exposure bits of each SSN / card / account / phone number in held-out records (owner-side audit)."""
    from vdbguard.attacks.secret_exposure import find_secrets

    attack, _, _ = trained(embedder, "secret-exposure", profile)
    items = [i for i in synthetic_pii(8 * n, seed=1999, locales=HELDOUT_LOCALES) if find_secrets(i.text)][:n]
    texts = [item.text for item in items]
    results, wall, cpu = timed(lambda: attack.infer(embedder.encode(texts), known_texts=texts))
    bits: dict[str, list[float]] = {}
    for result in results:
        for pii_type, value in result.exposure_bits.items():
            bits.setdefault(pii_type.value, []).append(value)
    summary = {
        kind: {
            "secrets": len(values),
            "p10": round(float(np.percentile(values, 10)), 2),
            "median": round(float(np.median(values)), 2),
            "p90": round(float(np.percentile(values, 90)), 2),
            "share_over_threshold": round(float(np.mean(np.array(values) >= attack.threshold)), 4),
        }
        for kind, values in sorted(bits.items())
    }
    return {
        "records": len(items),
        "threshold_bits": attack.threshold,
        "per_type": summary,
        "seconds": wall,
        "cpu_seconds": cpu,
        "samples_per_secret": attack.samples,
    }


def membership_metrics(
    embedder: Embedder,
    profile: str,
    pii: Sequence[LabelledText],
    with_names: bool,
    null_locales: Sequence[str] | None = None,
) -> dict:
    """AUC of presence scores for people with a record in the store against people without one."""
    from vdbguard.attacks.membership import presence_scores

    store = [item.text for item in pii] + human_sentences("holdout")[: len(pii) // 2]
    present = sorted({name for item in pii for name in full_names(item)})
    absent = sorted(
        {name for item in synthetic_pii(3 * len(pii), seed=4242, locales=HELDOUT_LOCALES) for name in full_names(item)}
        - set(present)
    )
    rng = random.Random(0)
    k = min(100, len(present), len(absent))
    present, absent = rng.sample(present, k), rng.sample(absent, k)
    vectors = embedder.encode(store)
    name_model = trained(embedder, "slot-search", profile)[0] if with_names else None
    people = [{"name": name} for name in present + absent]
    locales = {"null_locales": tuple(null_locales)} if null_locales else {}
    results, wall, _ = timed(lambda: presence_scores(embedder, vectors, people, name_model=name_model, **locales))
    truth = np.array([True] * k + [False] * k)
    scores = np.array([r.score for r in results])
    called = np.array([r.present for r in results])
    return {
        "store_records": len(store),
        "present_people": k,
        "absent_people": k,
        "name_model": "slot-search" if with_names else None,
        "null_locales": list(null_locales) if null_locales else "training corpus",
        "auc": round(float(roc_auc_score(truth, scores)), 4),
        "true_positive_rate_p05": round(float(called[truth].mean()), 4),
        "false_positive_rate_p05": round(float(called[~truth].mean()), 4),
        "seconds": wall,
    }


def throughput(embedder: Embedder, profile: str, texts: Sequence[str], out: Path) -> dict:
    """Fast tier (pii-probe + bag-of-words ``infer``) on real-text vectors, at 1 and 2 torch threads."""
    import torch

    cache = out / f"throughput-vectors-{embedder.fingerprint}-{len(texts)}.npy"
    if cache.exists():
        vectors = np.load(cache)
    else:
        vectors = embedder.encode(list(texts))
        np.save(cache, vectors)
    attacks = [trained(embedder, name, profile)[0] for name in ("pii-probe", "bag-of-words")]
    result: dict[str, Any] = {"vectors": len(vectors)}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        rows: dict[str, dict[str, float]] = {}
        for attack in attacks:
            attack.infer(vectors[:256])  # warm-up
            _, wall, cpu = timed(
                lambda a=attack: [a.infer(vectors[s : s + 4096]) for s in range(0, len(vectors), 4096)]
            )
            rows[attack.name] = {"wall_seconds": wall, "cpu_seconds": cpu}
        wall, cpu = (sum(row[k] for row in rows.values()) for k in ("wall_seconds", "cpu_seconds"))
        rows["fast tier"] = {"wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2)}
        for row in rows.values():
            row |= {
                "vectors_per_second": round(len(vectors) / max(row["wall_seconds"], 1e-3)),
                "vectors_per_cpu_second": round(len(vectors) / max(row["cpu_seconds"], 1e-3)),
            }
        result[f"threads_{threads}"] = rows
    torch.set_num_threads(1)
    return result


# ----- driver -----------------------------------------------------------------------------------------


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--embedder", default="all-MiniLM-L6-v2")
    parser.add_argument("--profile", choices=("default", "small"), default="default")
    parser.add_argument("--n", type=int, default=200, help="rows per held-out set for the fast inversion attacks")
    parser.add_argument("--slow-n", type=int, default=60, help="rows per set for gradient and vec2text")
    parser.add_argument("--probe-n", type=int, default=1000, help="held-out PII records for probes and membership")
    parser.add_argument("--exposure-n", type=int, default=60, help="held-out records with a secret, for exposure")
    parser.add_argument("--throughput-n", type=int, default=20480, help="vectors for the fast-tier throughput")
    parser.add_argument("--attacks", default=",".join(INVERSIONS + OTHERS), help="comma-separated; see the source")
    parser.add_argument("--sets", default="debian,chatterbot,pii")
    parser.add_argument("--real-text", type=Path, help="a file of sentences, one a line (else common.real_sentences)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resume", action="store_true", help="skip measurements whose JSON already exists")
    args = parser.parse_args()
    attacks = [a for a in args.attacks.split(",") if a]
    unknown = set(attacks) - set(INVERSIONS + OTHERS)
    if unknown:
        parser.error(f"unknown --attacks {sorted(unknown)}; choose from {', '.join(INVERSIONS + OTHERS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    embedder = Embedder(args.embedder)
    sets, pii_items, debian_all = build_sets(embedder, args.n, args.probe_n, args.seed, args.real_text, args.out)
    summary: dict[str, Any] = {"embedder": args.embedder, "profile": args.profile, "measurements": {}}

    def measure(key: str, run: Callable[[], dict]) -> None:
        path = args.out / f"{key}.json"
        if args.resume and path.exists():
            summary["measurements"][key] = json.loads(path.read_text())
            return
        before = load_average()
        result = run()
        result |= {"load_average_before": before, "load_average_after": load_average()}
        path.write_text(json.dumps(result, indent=2))
        summary["measurements"][key] = result
        print(key, json.dumps(result), flush=True)

    for set_name in args.sets.split(","):
        rows = sets[set_name][: args.n]
        write_jsonl(rows, args.out / f"{set_name}.jsonl")
        write_jsonl(rows[: args.slow_n], args.out / f"{set_name}-slow.jsonl")
        for attack in (a for a in attacks if a in INVERSIONS):
            data = args.out / (f"{set_name}-slow.jsonl" if attack in SLOW else f"{set_name}.jsonl")
            key = f"{set_name}-{attack}"
            measure(
                key,
                lambda d=data, a=attack, k=key: evaluate_attack(
                    d, a, args.embedder, args.profile, args.out / f"{k}.json"
                ),
            )
    if "pii-probe" in attacks:
        measure("pii-probe", lambda: pii_probe_metrics(embedder, args.profile, pii_items, debian_all[:1000]))
    if "attribute-probe" in attacks:
        measure("attribute-probe", lambda: attribute_probe_metrics(embedder, args.profile, pii_items))
    if "secret-exposure" in attacks:
        measure("secret-exposure", lambda: exposure_metrics(embedder, args.profile, args.exposure_n))
    if "membership" in attacks:
        measure("membership", lambda: membership_metrics(embedder, args.profile, pii_items[: args.n * 2], False))
        measure(
            "membership-matched-null",
            lambda: membership_metrics(embedder, args.profile, pii_items[: args.n * 2], False, HELDOUT_LOCALES),
        )
        if "slot-search" in attacks:
            measure(
                "membership-names", lambda: membership_metrics(embedder, args.profile, pii_items[: args.n * 2], True)
            )
    if "throughput" in attacks:
        texts = (debian_all * (args.throughput_n // max(len(debian_all), 1) + 1))[: args.throughput_n]
        measure("throughput", lambda: throughput(embedder, args.profile, texts, args.out))
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
