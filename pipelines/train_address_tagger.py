"""The learned ADDRESS head (issue #53 item 4): begin/inside/outside an address over the PERSON tagger's word states.

    OMP_NUM_THREADS=1 python benchmarks/detector_real.py --split train --write-train /tmp/tagger/train.jsonl
    python pipelines/train_address_tagger.py --train /tmp/tagger/train.jsonl --out vdbguard/data/address-tagger
    python pipelines/train_address_tagger.py --train /tmp/tagger/train.jsonl --score OTHER_HEAD   # on today's dev

The shipped head (detector version 17) is the second line's with ``--context 1 --hidden 64 128 --outside-biases 2 3 4``
over version 17's tagger and its T.jsonl (``--old-registers --bible-people --every-script``); its dev chose 64 units
and a bias of 2 (version 16's: 128 and 2; 15's: 128 and 3; 14's: 64 and 2; version 11's dev chose one neighbour a side
over none and two).

The tagger's encoder already reads every word for names; this head reads each word's states there (its embedding or
frozen lower layers' beside the trained top's) and its neighbours' (``--context`` words a side: "Pamela" of "9 Pamela
Row" reads as a woman's name alone), and costs two small matrix products more. It replaced spaCy's places near a street
word, which found half of real registrations' addresses (BENCHMARKS.md, "A learned PERSON tagger").

Data, train sources only (never an eval source, Debian package documentation or CPython's pydoc_data):
- real postal addresses: the IEEE MA-M, MA-S (oui36) and IAB registrations that the silver JSONL of
  ``detector_real.py --split train`` holds as contact blocks (organisation, address), half of them also placed in a
  frame of ``address_frames.json`` (tickets, notes, forms, chats); IEEE's MA-L list (``oui.txt``) is the eval register;
- Faker addresses of the train locales (``detector_real.LOCALES["train"]``) in those frames, and as many frames holding
  something else (a company, a date, a lone city, a phone number, "N/A", a person with a record's other fields, as an
  intake form lists them since version 14, a spot inside a building, alone or beside a record's fields: "bay 2", "Room
  61, MRN ..."): a frame alone makes no address;
- every other text of the silver JSONL as one without an address: places, countries and languages in sentences,
  pci.ids product lines, numbers swapped into sentences, credits and clean sentences.

Dev, never trained on: the IAB registrations, a quarter of the frames (by hash) with a fifth of the Faker addresses and
fillers, the Jargon File's texts and a fifth of pci.ids' vendors. It chooses the neighbours, the hidden layer's size and
the outside bias by ``objective``: the mean share of an address's characters found, less three times the share of
address-free texts given one (a head that finds the house number alone scores as little as it protects). Ships float32
weights and what they were trained over.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import json
import random
import time
import zlib
from pathlib import Path

import numpy as np

from vdbguard.detectors import tagger as T

FRAMES_FILE = Path(__file__).resolve().parent / "address_frames.json"
_FRAMES_DATA = json.loads(FRAMES_FILE.read_text(encoding="utf-8"))
FRAMES: list[str] = _FRAMES_DATA["frames"]
SPOTS: list[str] = _FRAMES_DATA["spots"]  # "room 61", "Bay 2": no address alone
# a quarter of the frames, by hash, hold dev's addresses only: dev sees sentences the head was never trained on
SPLIT_FRAMES = {
    split: [frame for frame in FRAMES if (zlib.crc32(frame.encode()) % 4 == 0) == (split == "dev")]
    for split in ("train", "dev")
}
DEV_REGISTRATIONS = "iab.csv"


def dev_addresses(root: Path) -> set[str]:
    """The IAB registrations' addresses, as the silver JSONL writes them."""
    from silver_sources import detector_real as real

    with open(root / "usr/share/ieee-data" / DEV_REGISTRATIONS, encoding="utf-8", errors="replace") as fh:
        return {real.flat(row["Organization Address"]) for row in csv.DictReader(fh)}


def framed(address: str, kind: str, split: str, rng: random.Random) -> dict:
    frame = rng.choice(SPLIT_FRAMES[split])
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


def spot(rng: random.Random) -> str:
    """A place inside a building, as tickets and notes name one: "bay 2", "Room 61", "rack B4", "Building 3, Lab C"."""
    words = [rng.choice(SPOTS) for _ in range(2 if rng.random() < 0.15 else 1)]
    labels = [str(rng.randint(1, 120)), f"{rng.choice('ABCDEF')}{rng.randint(1, 40)}", rng.choice("ABCDEFG")]
    return ", ".join(f"{word.capitalize() if rng.random() < 0.5 else word} {rng.choice(labels)}" for word in words)


def spot_with_fields(fake, rng: random.Random) -> str:  # fake: a Faker
    """A spot beside a record's other fields, as a note writes one: "bay 2, DOB to follow", "Room 14, MRN 5512093"."""
    where, field = spot(rng), rng.choice(["DOB", "d.o.b.", "MRN", "tel", "ref"])
    return f"{where}, {field} {rng.choice([fake.date(), fake.numerify('#######'), 'pending', 'to follow'])}"


def record_fields(fake, rng: random.Random) -> str:  # fake: a Faker
    """A record's fields in a row, as an intake form writes them: "name Jacob Glass, DOB 1 Jul 1955, diagnosis ..."."""
    born = fake.date_of_birth().strftime(rng.choice(["%d %b %Y", "%B %d, %Y", "%d.%m.%Y", "%Y-%m-%d"]))
    label = rng.choice(["diagnosis", "dx", "plan", "status", "ward", "ref"])
    who, when = rng.choice(["name", "patient", "pt", "client"]), rng.choice(["DOB", "d.o.b."])
    fields = [f"{who} {fake.name()}", f"{when} {born}"]
    return ", ".join([*fields, f"{label} {rng.choice([fake.word(), 'pending', 'stable', fake.numerify('####')])}"])


def fillers(count: int, seed: int) -> list[str]:
    """What else a frame's slot can hold, none of it an address: companies, jobs, dates, lone cities and countries,
    phone numbers, codes, placeholders, people with a record's other fields ("Rudolf Szalai, SSN ...", "name Jacob
    Glass, DOB 1 Jul 1955, diagnosis ...") and spots inside a building: a frame must not make an address of whatever
    sits in it."""
    from faker import Faker
    from silver_sources import detector_real as real

    rng = random.Random(seed)
    fakers = [Faker(locale) for locale in real.LOCALES["train"]]
    for fake in fakers:
        fake.seed_instance(seed)
    phones = Faker("en_AU")  # a locale with phone numbers (not every train locale has them)
    phones.seed_instance(seed)
    kinds = (
        lambda f: f.company(), lambda f: f.job(), lambda f: f.date(), lambda f: f.city(), lambda f: f.country(),
        lambda f: phones.phone_number(), lambda f: f.license_plate(), lambda f: f.file_name(), lambda f: f.color_name(),
        lambda f: f.catch_phrase(), lambda f: rng.choice(["N/A", "pending", "unknown", "withheld", "TBD", "on file"]),
        lambda f: f"{rng.choice(['ref', 'case', 'order', 'claim', 'ticket'])} {f.bothify('??-####').upper()}",
        lambda f: f.name(), lambda f: f"{f.name()}, {f.email()}",
        lambda f: f"{f.name()}, {rng.choice(['SSN', 'acct', 'card', 'd.o.b.', 'tel'])} {f.numerify('###-##-####')}",
        lambda f: spot(rng), lambda f: spot_with_fields(f, rng), lambda f: record_fields(f, rng),
    )  # fmt: skip
    return [rng.choice(kinds)(rng.choice(fakers)) for _ in range(count)]


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
                rows[split].append(framed(address, "registration in a frame", split, rng))
            continue
        if row["register"] == "product-line":
            split = "dev" if zlib.crc32(row["text"].split()[0].encode()) % 5 == 0 else "train"
        else:
            split = "dev" if row["source"] == "jargon" else "train"
        rows[split].append({"text": row["text"], "addresses": [], "kind": "none: " + row["register"]})
    for at, (address, filler) in enumerate(zip(faker_addresses(fakes, seed), fillers(fakes, seed), strict=True)):
        split = "dev" if at % 5 == 0 else "train"
        rows[split].append(framed(address, "faker", split, rng))
        rows[split].append(framed(filler, "none: frame", split, rng) | {"addresses": []})
    for split in rows.values():
        rng.shuffle(split)
    return rows


def word_data(tagger: T.PersonTagger, rows: list[dict], page: int = 512) -> tuple[np.ndarray, np.ndarray, list, list]:
    """Each word's states and label (0 outside, 1 first word of an address, 2 inside) in the texts' order, per text its
    words' offsets (the tagger reads windows grouped by length, not in order), and the windows' lengths in words."""
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
    windows = [window for text in states for window in text]
    return np.concatenate(windows), np.array(labels, dtype=np.int64), offsets, [len(w) for w in windows]


def neighbour_index(lengths: list[int], context: int) -> np.ndarray:
    """Per word, the rows of the words ``context`` before it to ``context`` after it, in its window; -1 past an edge,
    which reads a row of zeros as ``T.with_neighbours`` pads."""
    rows = []
    at = 0
    for length in lengths:
        for word in range(length):
            rows.append([at + word + d if 0 <= word + d < length else -1 for d in range(-context, context + 1)])
        at += length
    return np.array(rows, dtype=np.int64)


def fit(x: np.ndarray, y: np.ndarray, neighbours: np.ndarray, hidden: int, epochs: int, seed: int):  # -> nn.Module
    """The head over each word's and its neighbours' states, with their standardisation folded into its first layer."""
    import torch

    torch.manual_seed(seed)
    mean, scale = x.mean(0), x.std(0) + 1e-4
    padded = torch.from_numpy((np.concatenate([x, np.zeros((1, x.shape[1]), x.dtype)]) - mean) / scale)
    index = torch.from_numpy(neighbours)
    targets = torch.from_numpy(y)
    network = T.address_network(x.shape[1] * neighbours.shape[1], hidden)
    optimiser = torch.optim.AdamW(network.parameters(), lr=1e-3, weight_decay=1e-4)
    for _ in range(epochs):
        order = torch.randperm(len(targets))
        for at in range(0, len(order), 2048):
            chosen = order[at : at + 2048]
            inputs = padded[index[chosen]].flatten(1)
            loss = torch.nn.functional.cross_entropy(network(inputs), targets[chosen])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    tiled_mean, tiled_scale = (torch.from_numpy(np.tile(v, neighbours.shape[1])) for v in (mean, scale))
    with torch.no_grad():
        network.hidden.bias -= network.hidden.weight @ (tiled_mean / tiled_scale)
        network.hidden.weight /= tiled_scale
    return network.eval()


def coverage(text: str, address: tuple[int, int], spans: list[tuple[int, int, float]]) -> float:
    """The share of an address's characters (spaces and commas aside) inside found spans: a head that finds only the
    house number of "9 Pamela Row, Lake Adam, S5 3WH" leaves the rest to be embedded, and scores 1 in 23 here."""
    kept = [c for c in range(*address) if not text[c].isspace() and text[c] != ","]
    return sum(any(s <= c < e for s, e, _ in spans) for c in kept) / max(len(kept), 1)


def dev_scores(
    network, x: np.ndarray, neighbours: np.ndarray, rows: list[dict], offsets: list, biases: list[float]
) -> dict[float, dict]:
    """Per outside bias: by kind of address text, the mean share of its addresses' characters found, and the share of
    address-free texts given an address."""
    import torch

    padded = torch.from_numpy(np.concatenate([x, np.zeros((1, x.shape[1]), x.dtype)]))
    with torch.inference_mode():
        probabilities = network(padded[torch.from_numpy(neighbours)].flatten(1)).softmax(-1).tolist()
    results = {}
    for bias in biases:
        found: dict[str, list[float]] = {}
        at = 0
        for row, words in zip(rows, offsets, strict=True):
            spans = T.spans_of(probabilities[at : at + len(words)], words, bias)
            at += len(words)
            if row["addresses"]:
                scores = [coverage(row["text"], tuple(address), spans) for address in row["addresses"]]
                found.setdefault(row["kind"], []).append(sum(scores) / len(scores))
            else:
                found.setdefault(row["kind"], []).append(float(bool(spans)))
        recall = {kind: round(sum(v) / len(v), 4) for kind, v in found.items() if not kind.startswith("none")}
        free = [kind for kind in found if kind.startswith("none")]
        false = round(sum(sum(found[kind]) for kind in free) / sum(len(found[kind]) for kind in free), 4)
        results[bias] = {
            "covered": recall,
            "address_free_given_one": false,
            "by_register": {kind: round(sum(found[kind]) / len(found[kind]), 4) for kind in free},
            "texts": {kind: len(v) for kind, v in found.items()},
        }
    return results


def objective(result: dict) -> float:
    return sum(result["covered"].values()) / len(result["covered"]) - 3 * result["address_free_given_one"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=Path, required=True, help="the silver JSONL of detector_real.py")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/vdbguard-detector-real"))
    parser.add_argument("--out", type=Path, default=T.ADDRESS_DIR)
    parser.add_argument("--tagger", type=Path, default=T.TAGGER_DIR, help="the PERSON tagger whose states it reads")
    parser.add_argument("--context", type=int, nargs="+", default=[0, 1, 2], help="neighbours a side to try")
    parser.add_argument("--hidden", type=int, nargs="+", default=[32, 64, 128], help="hidden layer sizes to try")
    parser.add_argument("--outside-biases", type=float, nargs="+", default=[0.0, 1.0, 2.0, 3.0, 4.0])
    parser.add_argument("--faker", type=int, default=4000, help="Faker addresses placed in frames")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--score", type=Path, help="score this trained head's folder on today's dev, at its own bias")
    args = parser.parse_args()

    import torch
    from safetensors.torch import save_file
    from silver_sources import detector_real as real

    torch.set_num_threads(1)
    started = time.perf_counter()
    rows = split_rows(args.train, real.unpack(args.cache), args.faker, args.seed)
    tagger = T.PersonTagger(args.tagger, int8=False)  # the states the head reads where bfloat16 is native
    dev_x, _, dev_offsets, dev_lengths = word_data(tagger, rows["dev"])
    if args.score:
        head = T.AddressHead(args.score, T.tagger_digest(args.tagger))
        dev_near = neighbour_index(dev_lengths, head.context)
        scored = dev_scores(head.network, dev_x, dev_near, rows["dev"], dev_offsets, [head.outside_bias])
        for bias, result in scored.items():
            print(f"{args.score} at bias {bias}: {result} objective {objective(result):.4f}")
        return
    x, y, _, lengths = word_data(tagger, rows["train"])
    print(f"{len(rows['train'])} train texts ({len(y)} words), {len(rows['dev'])} dev texts", flush=True)
    tried = []
    for context, hidden in itertools.product(args.context, args.hidden):
        near, dev_near = neighbour_index(lengths, context), neighbour_index(dev_lengths, context)
        network = fit(x, y, near, hidden, args.epochs, args.seed)
        for bias, result in dev_scores(network, dev_x, dev_near, rows["dev"], dev_offsets, args.outside_biases).items():
            tried.append((objective(result), context, hidden, bias, result, network))
            print(
                f"context {context} hidden {hidden} bias {bias}: {result} objective {objective(result):.4f}", flush=True
            )
    best, context, hidden, bias, result, network = max(tried, key=lambda t: t[0])
    args.out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in network.state_dict().items()}, str(args.out / "head.safetensors"))
    training = {
        "tagger": T.tagger_digest(args.tagger), "labels": list(T.LABELS), "context": context, "hidden": hidden,
        "outside_bias": bias,
        "dev": result, "objective": round(best, 4), "seed": args.seed, "epochs": args.epochs, "faker": args.faker,
        "frames": hashlib.sha256(FRAMES_FILE.read_bytes()).hexdigest()[:16],
        "silver": hashlib.sha256(args.train.read_bytes()).hexdigest()[:16],
        "texts": {split: len(texts) for split, texts in rows.items()},
        "tried": [
            {"context": c, "hidden": h, "outside_bias": b, "objective": round(o, 4)} for o, c, h, b, _, _ in tried
        ],
        "minutes": round((time.perf_counter() - started) / 60, 1),
    }  # fmt: skip
    (args.out / "training.json").write_text(json.dumps(training, indent=2) + "\n", encoding="utf-8")
    print(f"chose context {context}, hidden {hidden}, outside bias {bias} -> {args.out}")


if __name__ == "__main__":
    main()
