"""Where a step of adversarial decoding's conditioned beam search goes (issue #11), one torch thread:

    OMP_NUM_THREADS=1 python benchmarks/decoding_step.py [--repeats 20]

- the packaged generative model's pass for 5 beams, and inside it the output head over the whole 49,152-token
  vocabulary, computed as before version 5 (the head's rows gathered from the embedding table on every call)
  and as now (gathered once, or not at all when the vocabulary is the whole table);
- MiniLM re-embedding the 100 candidates a step scores (5 beams x top 20), as prefixes of 4, 10 and 20 words;
- the 4 drafts per record (version 5) for 24 development sentences, a record at a time and in batches of 8 and 24.
Medians in CPU-milliseconds (drafts: mean per record), all in one run.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
from adversarial_sweep import description_sentences
from common import bench_parser

from vdbguard.attacks.adversarial_decoding import _Conditioned, _generative
from vdbguard.embedders import Embedder

SENTENCE = "The committee approved the new budget after a long debate about schools and roads in the north."


def cpu_ms(run: Callable[[], object], repeats: int) -> float:
    run()
    times = []
    for _ in range(repeats):
        started = time.process_time()
        run()
        times.append((time.process_time() - started) * 1000)
    return round(statistics.median(times), 1)


def main() -> None:
    args = bench_parser(__doc__, repeats=20).parse_args()
    torch.set_num_threads(1)
    embedder = Embedder("all-MiniLM-L6-v2")
    generative = _generative(embedder)
    assert generative is not None, "the packaged MiniLM generative model is missing"
    model = generative.model
    target = embedder.encode([SENTENCE])[0]
    proposer = _Conditioned(model, target)
    hidden = torch.randn(5, model.hidden_size)
    with torch.inference_mode():
        _, cache = proposer.start()
        cache.batch_repeat_interleave(5)
        tokens = torch.tensor([[1]] * 5)

        def step() -> None:
            proposer.step(tokens, cache)
            cache.crop(-1)  # the same position every time

        rows = {
            "conditioned step, 5 beams (now)": cpu_ms(step, args.repeats),
            "output head, gathered per call (before)": cpu_ms(
                lambda: hidden @ model.token_embeddings[model.vocabulary].T + model.output_bias, args.repeats
            ),
            "output head (now)": cpu_ms(lambda: model.logits(hidden), args.repeats),
        }
    words = SENTENCE.rstrip(".").split()
    for count in (4, 10, 20):
        candidates = [" ".join((words * 2)[:count]) + f" {i}" for i in range(100)]
        rows[f"MiniLM embedding 100 candidates of {count} words"] = cpu_ms(
            lambda c=candidates: embedder.encode(c), max(3, args.repeats // 4)
        )
    generative.threads = 1
    targets = embedder.encode(description_sentences(24, 5))
    generative.hypotheses(targets[:1], beam_width=4)
    for batch in (1, 8, 24):
        started = time.process_time()
        for start in range(0, len(targets), batch):
            generative.hypotheses(targets[start : start + batch], beam_width=4)
        rows[f"4 drafts per record, {batch} records at a time"] = round(
            (time.process_time() - started) * 1000 / len(targets), 1
        )
    print("| what | CPU-ms |\n|---|---|")
    for what, ms in rows.items():
        print(f"| {what} | {ms} |")


if __name__ == "__main__":
    main()
