"""The learned ADDRESS head (issue #53 item 4): begin/inside/outside an address over the PERSON tagger's word states.

    OMP_NUM_THREADS=1 python benchmarks/detector_real.py --split train --write-train /tmp/tagger/train.jsonl
    python pipelines/train_address_tagger.py --train /tmp/tagger/train.jsonl --out vdbguard/data/address-tagger

The tagger's encoder already reads every word for names; this head reads each word's states there (the frozen lower
layers' beside the trained top's) and costs two small matrix products more. It replaces spaCy's places near a street
word, which found half of real registrations' addresses (BENCHMARKS.md, "A learned PERSON tagger").

Data, train sources only (never an eval source, Debian package documentation or CPython's pydoc_data):
- real postal addresses: the IEEE MA-M, MA-S (oui36) and IAB registrations that the silver JSONL of
  ``detector_real.py --split train`` holds as contact blocks (organisation, address), half of them also placed in a
  frame of ``address_frames.json`` (tickets, notes, forms); IEEE's MA-L list (``oui.txt``) is the eval register;
- Faker addresses of the train locales (``detector_real.LOCALES["train"]``) in those frames;
- every other text of the silver JSONL as one without an address: places, countries and languages in sentences,
  pci.ids product lines, numbers swapped into sentences, credits and clean sentences.

Dev, never trained on: the IAB registrations, the Jargon File's texts and a fifth of pci.ids' vendors. It chooses
the hidden layer's size and the outside bias by ``objective``: address recall less three times the share of
address-free texts given one. Ships float32 weights (400 KB) and what they were trained over.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import time
import zlib
from pathlib import Path

import numpy as np

from vdbguard.detectors import tagger as T

FRAMES_FILE = Path(__file__).resolve().parent / "address_frames.json"
FRAMES: list[str] = json.loads(FRAMES_FILE.read_text(encoding="utf-8"))["frames"]
DEV_REGISTRATIONS = "iab.csv"


def dev_addresses(root: Path) -> set[str]:
    """The IAB registrations' addresses, as the silver JSONL writes them."""
    from silver_sources import detector_real as real

    with open(root / "usr/share/ieee-data" / DEV_REGISTRATIONS, encoding="utf-8", errors="replace") as fh:
        return {real.flat(row["Organization Address"]) for row in csv.DictReader(fh)}


def framed(address: str, kind: str, rng: random.Random) -> dict:
    frame = rng.choice(FRAMES)
    start = frame.index("{address}")
    text = frame.replace("{address}", address)
    return {"text": text, "addresses": [[start, start + len(address)]], "kind": kind}


def faker_addresses(count: int, seed: int) -> list[str]:
    from faker import Faker
    from silver_sources import detector_real as real

    rng = random.Random(seed)
    fakers = [Faker(locale) for locale in real.LOCALES["train"]]
    for fake in fakers:
        fake.seed_instance(seed)
    made = []
    for _ in range(count):
        fake = rng.choice(fakers)
        whole = rng.random() < 0.7
        made.append(fake.address().replace("\n", ", ") if whole else f"{fake.street_address()}, {fake.city()}")
    return made


def split_rows(silver: Path, root: Path, fakes: int, seed: int) -> dict[str, list[dict]]:
    """Train and dev texts, each with its addresses' character spans and a kind to report recall by."""
    rng = random.Random(seed)
    held = dev_addresses(root)
    rows: dict[str, list[dict]] = {"train": [], "dev": []}
    for line in silver.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        spans = [(s["start"], s["end"]) for s in row["spans"] if s["label"] == "ADDRESS"]
        if row["register"] == "contact-block":
            (start, end), address = spans[0], row["text"][spans[0][0] : spans[0][1]]
            split = "dev" if address in held else "train"
            rows[split].append({"text": row["text"], "addresses": [[start, end]], "kind": "registration"})
            if rng.random() < 0.5:
                rows[split].append(framed(address, "registration in a frame", rng))
            continue
        if row["register"] == "product-line":
            split = "dev" if zlib.crc32(row["text"].split()[0].encode()) % 5 == 0 else "train"
        else:
            split = "dev" if row["source"] == "jargon" else "train"
        rows[split].append({"text": row["text"], "addresses": [], "kind": "none: " + row["register"]})
    rows["train"] += [framed(address, "faker", rng) for address in faker_addresses(fakes, seed)]
    for split in rows.values():
        rng.shuffle(split)
    return rows


def word_data(tagger: T.PersonTagger, rows: list[dict], page: int = 512) -> tuple[np.ndarray, np.ndarray, list]:
    """Each word's states and label (0 outside, 1 first word of an address, 2 inside) in the texts' order, and per
    text its words' offsets (the tagger reads windows grouped by length, not in order)."""
    states: list[list[np.ndarray]] = [[] for _ in rows]
    offsets: list[list[tuple[int, int]]] = [[] for _ in rows]
    for at in range(0, len(rows), page):
        chunk = rows[at : at + page]
        for index, words, _, window in tagger.read([row["text"] for row in chunk], with_states=True):
            offsets[at + index] += words
            states[at + index].append(window.numpy())
    labels: list[int] = []
    for row, words in zip(rows, offsets, strict=True):
        previous = None
        for start, end in words:
            inside = next((tuple(span) for span in row["addresses"] if span[0] <= start and end <= span[1]), None)
            labels.append(0 if inside is None else 2 if inside == previous else 1)
            previous = inside
    matrix = np.concatenate([window for text in states for window in text])
    return matrix, np.array(labels, dtype=np.int64), offsets


def fit(x: np.ndarray, y: np.ndarray, hidden: int, epochs: int, seed: int):  # -> torch.nn.Module
    """The head, with the states' standardisation folded into its first layer."""
    import torch

    torch.manual_seed(seed)
    mean, scale = x.mean(0), x.std(0) + 1e-4
    inputs = torch.from_numpy((x - mean) / scale)
    targets = torch.from_numpy(y)
    network = T.address_network(x.shape[1], hidden)
    optimiser = torch.optim.AdamW(network.parameters(), lr=1e-3, weight_decay=1e-4)
    for _ in range(epochs):
        order = torch.randperm(len(inputs))
        for at in range(0, len(order), 2048):
            chosen = order[at : at + 2048]
            loss = torch.nn.functional.cross_entropy(network(inputs[chosen]), targets[chosen])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    with torch.no_grad():
        network.hidden.bias -= network.hidden.weight @ torch.from_numpy(mean / scale)
        network.hidden.weight /= torch.from_numpy(scale)
    return network.eval()


def dev_scores(network, x: np.ndarray, rows: list[dict], offsets: list, biases: list[float]) -> dict[float, dict]:
    """Per outside bias: recall by kind of address text, and the share of address-free texts given an address."""
    import torch

    with torch.inference_mode():
        probabilities = network(torch.from_numpy(x)).softmax(-1).tolist()
    results = {}
    for bias in biases:
        found: dict[str, list[int]] = {}
        at = 0
        for row, words in zip(rows, offsets, strict=True):
            spans = T.spans_of(probabilities[at : at + len(words)], words, bias)
            at += len(words)
            kind = "none" if not row["addresses"] else row["kind"]
            hit = any(s < b and a < e for s, e, _ in spans for a, b in row["addresses"]) if row["addresses"] else spans
            counts = found.setdefault(kind, [0, 0])
            counts[0] += bool(hit)
            counts[1] += 1
        recall = {kind: round(h / n, 4) for kind, (h, n) in found.items() if kind != "none"}
        false = round(found["none"][0] / found["none"][1], 4)
        texts = {kind: n for kind, (_, n) in found.items()}
        results[bias] = {"recall": recall, "address_free_given_one": false, "texts": texts}
    return results


def objective(result: dict) -> float:
    return sum(result["recall"].values()) / len(result["recall"]) - 3 * result["address_free_given_one"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=Path, required=True, help="the silver JSONL of detector_real.py")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/vdbguard-detector-real"))
    parser.add_argument("--out", type=Path, default=T.ADDRESS_DIR)
    parser.add_argument("--hidden", type=int, nargs="+", default=[32, 64, 128], help="hidden layer sizes to try")
    parser.add_argument("--outside-biases", type=float, nargs="+", default=[0.0, 1.0, 2.0, 3.0, 4.0])
    parser.add_argument("--faker", type=int, default=4000, help="Faker addresses placed in frames")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch
    from safetensors.torch import save_file
    from silver_sources import detector_real as real

    torch.set_num_threads(1)
    started = time.perf_counter()
    rows = split_rows(args.train, real.unpack(args.cache), args.faker, args.seed)
    tagger = T.PersonTagger()
    x, y, _ = word_data(tagger, rows["train"])
    dev_x, _, dev_offsets = word_data(tagger, rows["dev"])
    print(f"{len(rows['train'])} train texts ({len(y)} words), {len(rows['dev'])} dev texts", flush=True)
    tried = []
    for hidden in args.hidden:
        network = fit(x, y, hidden, args.epochs, args.seed)
        for bias, result in dev_scores(network, dev_x, rows["dev"], dev_offsets, args.outside_biases).items():
            tried.append((objective(result), hidden, bias, result, network))
            print(f"hidden {hidden} bias {bias}: {result} objective {objective(result):.4f}", flush=True)
    best, hidden, bias, result, network = max(tried, key=lambda t: t[0])
    args.out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in network.state_dict().items()}, str(args.out / "head.safetensors"))
    training = {
        "tagger": T.tagger_digest(T.TAGGER_DIR), "labels": list(T.LABELS), "hidden": hidden, "outside_bias": bias,
        "dev": result, "objective": round(best, 4), "seed": args.seed, "epochs": args.epochs, "faker": args.faker,
        "frames": hashlib.sha256(FRAMES_FILE.read_bytes()).hexdigest()[:16],
        "silver": hashlib.sha256(args.train.read_bytes()).hexdigest()[:16],
        "texts": {split: len(texts) for split, texts in rows.items()},
        "tried": [{"hidden": h, "outside_bias": b, "objective": round(o, 4)} for o, h, b, _, _ in tried],
        "minutes": round((time.perf_counter() - started) / 60, 1),
    }  # fmt: skip
    (args.out / "training.json").write_text(json.dumps(training, indent=2) + "\n", encoding="utf-8")
    print(f"chose hidden {hidden}, outside bias {bias} -> {args.out}")


if __name__ == "__main__":
    main()
