"""Names off every list: what adversarial decoding's spelling stage (version 8) adds, on held-out-locale names.

The set: template sentences with PII whose names come from the Faker locales the training corpus never uses
(en_NZ, en_IN), at most 32 tokens, only those that name someone: ``--records`` of them, drawn with a seed that
no development run used (a smoke test of name spelling, since the sentences are templates; nobody on the
project wrote the names, and the attack uses no name list).

Default: adversarial decoding (its defaults, so no spelling) at the scan's budget (``--seconds-per-record``, 1.8
CPU-seconds), then the spelling stage over ``--spell-positions`` words, unbudgeted, on each of those hypotheses;
one row before and one after, with what the spelling cost. With ``--end-to-end SETTINGS...`` each JSON object of
constructor arguments runs the whole attack instead (``'{}'`` the defaults, without spelling;
``'{"spell_positions": 4}'`` with it). Run from the repository root:

    OMP_NUM_THREADS=1 python benchmarks/spelling.py --embedder all-MiniLM-L6-v2
    OMP_NUM_THREADS=1 python benchmarks/spelling.py --records 40 --end-to-end '{}' '{"spell_positions": 4}'
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import numpy as np
from attacks import HELDOUT_LOCALES, MAX_TOKENS, full_names
from common import bench_parser

from vdbguard.attacks.adversarial_decoding import AdversarialDecoding, _Search
from vdbguard.corpus import synthetic_pii
from vdbguard.embedders import Embedder
from vdbguard.evaluate.inversion import inversion_scores


def main() -> None:
    parser = bench_parser(__doc__, seed=7777, spell_positions=4)
    parser.add_argument("--embedder", default="all-MiniLM-L6-v2")
    parser.add_argument("--records", type=int, default=80)
    parser.add_argument("--seconds-per-record", type=float, default=1.8)
    parser.add_argument("--end-to-end", nargs="*", default=None, help="JSON objects of constructor arguments")
    args = parser.parse_args()
    embedder = Embedder(args.embedder)
    rows = named_sentences(embedder, args.records, args.seed)
    texts = [text for text, _ in rows]
    targets = embedder.encode(texts)
    if args.end_to_end is not None:
        for settings in args.end_to_end:
            attack = AdversarialDecoding(threads=1, **json.loads(settings))
            attack.embedder = embedder
            attack.infer(targets[:1])  # loads the language model and vocabulary table outside the timing
            attack.encoder_queries = 0
            started = time.process_time()
            found = [inference.recovered_text for inference in attack.infer(targets)]
            cost = {
                "cpu_seconds_per_record": round((time.process_time() - started) / len(rows), 2),
                "encoder_queries_per_record": round(attack.encoder_queries / len(rows), 1),
            }
            print(json.dumps({"settings": json.loads(settings), **scored(embedder, rows, targets, found), **cost}))
        return
    attack = AdversarialDecoding(max_seconds=args.seconds_per_record, threads=1)
    attack.embedder = embedder
    before = [inference.recovered_text for inference in attack.infer(targets)]
    print(
        json.dumps(
            {
                "stage": f"adversarial decoding at {args.seconds_per_record} CPU-s",
                **scored(embedder, rows, targets, before),
            }
        )
    )
    unbudgeted = AdversarialDecoding(spell_positions=args.spell_positions, threads=1)
    unbudgeted.embedder = embedder
    after, queries, started = [], 0, time.process_time()
    for text, target in zip(before, targets, strict=True):
        search = _Search(unbudgeted, target)
        search.consider([text])
        search.spell()
        after.append(search.best_text)
        queries += search.queries - 1
    cost = {
        "cpu_seconds_per_record": round((time.process_time() - started) / len(rows), 2),
        "encoder_queries_per_record": round(queries / len(rows), 1),
        "changed": [[old, new] for old, new in zip(before, after, strict=True) if old != new],
    }
    print(json.dumps({"stage": "+ spelling, unbudgeted", **scored(embedder, rows, targets, after), **cost}))


def named_sentences(embedder: Embedder, count: int, seed: int) -> list[tuple[str, list[str]]]:
    items = synthetic_pii(8 * count, seed=seed, locales=HELDOUT_LOCALES)
    lengths = embedder.model.tokenizer([item.text for item in items], add_special_tokens=False)["input_ids"]
    rows = [(item.text, full_names(item)) for item, ids in zip(items, lengths, strict=True) if len(ids) <= MAX_TOKENS]
    return [(text, names) for text, names in rows if names][:count]


def scored(
    embedder: Embedder, rows: Sequence[tuple[str, list[str]]], targets: np.ndarray, predictions: list[str]
) -> dict[str, float | int | None]:
    references, names = [text for text, _ in rows], [named for _, named in rows]
    return {"names": sum(map(len, names)), **inversion_scores(embedder, targets, predictions, references, names)}


if __name__ == "__main__":
    main()
