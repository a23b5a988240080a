"""Train the bigger ``generative`` inverter (Vec2Text's base model) for one embedder on an accelerator.

The CPU default (``vdbguard/attacks/generative.py``) keeps 6 of SmolLM2's 30 layers, trains for 20 minutes on the
scan profile's 12,000 sentences and barely reads the embedding on text unlike them. This trains all 30 layers
(LoRA), with SmolLM2's whole output vocabulary so names and numbers stay spellable, on far more real text.

The texts are built and the embedder packed where the packages are; the training needs an accelerator:

    # here (CPU, ~4 minutes): every training text, each with its source
    python pipelines/train_generative_gpu.py texts --out build/generative/texts.jsonl.gz
    # here: the embedder's folder with int8 weights, small enough to carry (mpnet 114 MB, MiniLM 24 MB)
    python pipelines/train_generative_gpu.py pack --embedder all-mpnet-base-v2 \
        --out build/generative/all-mpnet-base-v2.tar --check-texts build/generative/texts.jsonl.gz
    # on the accelerator: embed (float16), train, keep the lowest held-out loss
    python pipelines/train_generative_gpu.py train --texts texts.jsonl.gz --embedder all-mpnet-base-v2.tar \
        --out OUT --max-seconds 430
    # here: ship the kept weights with the embedder's probes
    python pipelines/train_generative_gpu.py package --run OUT --embedder all-mpnet-base-v2 --name generative-mpnet

Training text, none of it written by the project and none of it in a benchmark set:

* ``docs:PACKAGE``: docstring and comment sentences of the Python packages installed here (the extraction of
  ``pipelines/build_real_text.py``, no per-package cap), leaving out the real corpus' calibration sources and
  vdbguard itself;
* ``chat``: chatterbot-corpus' train split (its holdout split is the ``chatterbot`` benchmark set);
* ``real-pii``: real train-split sentences with PII placed in them (``real_corpus``; train Faker locales);
* ``synthetic-pii``: Faker-filled templates in the train locales (the ``pii`` benchmark set uses en_NZ/en_IN).

Debian's documentation and CPython's ``pydoc_data`` are never read; neither are fortunes or WordNet, which the
``debian`` benchmark set is drawn from. ``train`` needs only torch, transformers, sentence-transformers,
safetensors, ``gguf``, the SmolLM2 file and vdbguard's source. Sentences whose hash falls in
``--validation-share`` are held out; their loss is measured every ``--eval-seconds`` and the weights with the
lowest one are written to OUT as soon as they are found (float16 safetensors + JSON), so a run stopped at its
time limit still leaves its best weights.

The packaged ``vdbguard/data/generative-minilm.*`` and ``generative-mpnet.*`` (BENCHMARKS.md, "Generative models
for MiniLM and mpnet, trained on an H200") came from ``train --max-seconds 430`` with the defaults above, both at
once on one H200 (two processes), from the packed embedders. The accelerator tool returns files of at most 16 MB:
split the weights before they leave the machine (``split -b 15000000``; ``cat`` joins them).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import json
import math
import random
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch

LEFT_OUT = {"vdbguard", "connectors", "chatterbot_corpus"}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def held_out(text: str, share: float) -> bool:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < share


# ---------------------------------------------------------------------------------------------- texts (CPU)


def docstring_texts() -> list[tuple[str, str]]:
    import build_real_text  # pipelines/, the folder a script runs from is on its path

    from vdbguard.corpus.real import CALIBRATION_SOURCES

    site = Path(importlib.util.find_spec("numpy").origin).parents[1]
    packages = sorted(p.name for p in site.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    rows = []
    for package in packages:
        if package in CALIBRATION_SOURCES or package in LEFT_OUT:
            continue
        prose, _credits = build_real_text.package_lines(package)
        rows += [(text, f"docs:{package}") for text in prose if not build_real_text.NAMED.search(text)]
    return rows


def build_texts(out: Path, real_pii: int, synthetic: int, max_tokens: int, seed: int) -> None:
    from vdbguard.attacks.decoder import load_tokenizer
    from vdbguard.corpus import human_sentences, synthetic_pii
    from vdbguard.corpus.real import real_corpus

    rows = docstring_texts()
    log(f"{len(rows)} docstring and comment sentences")
    rows += [(text, "chat") for text in human_sentences("train")]
    rows += [(item.text, "real-pii") for item in real_corpus(real_pii, 0, seed=seed, split="train")]
    rows += [(item.text, "synthetic-pii") for item in synthetic_pii(synthetic, seed=seed)]
    unique = dict(rows)
    tokenizer = load_tokenizer()
    texts = list(unique)
    lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]
    kept = [(text, unique[text]) for text, n in zip(texts, lengths, strict=True) if n <= max_tokens]
    random.Random(seed).shuffle(kept)
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as fh:
        for text, source in kept:
            fh.write(json.dumps({"text": text, "source": source}, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    for _, source in kept:
        kind = source.split(":")[0]
        counts[kind] = counts.get(kind, 0) + 1
    log(f"{len(kept)} texts of <= {max_tokens} SmolLM2 tokens {counts} -> {out} ({out.stat().st_size >> 10} KiB)")


# ---------------------------------------------------------------------------------------------- train (GPU)


def read_texts(path: Path) -> list[dict[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def pack_embedder(name: str, out: Path, check_texts: Path | None = None) -> None:
    """The embedder's folder with its matrices as int8, a float16 scale per 64 weights, for the accelerator.

    Embedding 150,000 texts with mpnet would take over an hour on these two cores, and its float16 weights
    (220 MB) are four calls' worth of what one call can carry (64 MiB). The int8 copy is about half that;
    ``unpack_embedder`` restores float16 weights there. With ``check_texts``, the restored model's vectors of the
    first 300 are compared with vdbguard's own (float32, this CPU)."""
    import tarfile

    from safetensors.torch import load_file, save_file

    from vdbguard.embedders.loading import resolve_model_path

    folder = resolve_model_path(name)
    packed: dict[str, torch.Tensor] = {}
    for key, tensor in load_file(str(folder / "model.safetensors")).items():
        if tensor.dim() == 2 and tensor.numel() >= 4096 and tensor.shape[1] % 64 == 0:
            groups = tensor.float().reshape(tensor.shape[0], -1, 64)  # a scale per 64 weights of a row
            scale = groups.abs().amax(dim=2, keepdim=True).clamp_min(1e-12) / 127.0
            packed[f"{key}.int8"] = torch.round(groups / scale).to(torch.int8)
            packed[f"{key}.scale"] = scale.to(torch.float16)
        else:
            packed[key] = tensor.to(torch.float16)
    out.parent.mkdir(parents=True, exist_ok=True)
    weights = out.with_suffix(".safetensors")
    save_file(packed, str(weights))
    with tarfile.open(out, "w") as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.name not in {"model.safetensors", "README.md", "desktop.ini", ".gitattributes"}:
                tar.add(path, arcname=str(path.relative_to(folder)))
        tar.add(weights, arcname="model.int8.safetensors")
    weights.unlink()
    log(f"{name} packed into {out} ({out.stat().st_size >> 20} MiB)")
    if check_texts:
        import tempfile

        from vdbguard.embedders import Embedder

        texts = [row["text"] for row in read_texts(check_texts)[:300]]
        with tempfile.TemporaryDirectory() as unpacked:
            restored = embed(unpack_embedder(out, Path(unpacked)), texts, "cpu").numpy()
        cosine = (restored * Embedder(name).encode(texts)).sum(axis=1)
        log(f"restored vs float32 vectors of {len(texts)} texts: cosine {cosine.mean():.5f} (min {cosine.min():.5f})")


def unpack_embedder(packed: Path, folder: Path) -> Path:
    """The folder ``pack_embedder`` packed, with float16 weights rebuilt from the int8 rows."""
    import tarfile

    from safetensors.torch import load_file, save_file

    with tarfile.open(packed) as tar:
        tar.extractall(folder, filter="data")
    stored = load_file(str(folder / "model.int8.safetensors"))
    weights = {key: tensor for key, tensor in stored.items() if not key.endswith((".int8", ".scale"))}
    for key in [k[: -len(".int8")] for k in stored if k.endswith(".int8")]:
        groups = stored[f"{key}.int8"].float() * stored[f"{key}.scale"].float()
        weights[key] = groups.reshape(groups.shape[0], -1).to(torch.float16)
    save_file(weights, str(folder / "model.safetensors"))
    (folder / "model.int8.safetensors").unlink()
    return folder


def embed(folder: Path, texts: list[str], device: str) -> torch.Tensor:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device=device)
    if device.startswith("cuda"):
        model.half()
    else:
        model.float()  # a packed folder's weights are float16
    vectors = model.encode(texts, batch_size=512, convert_to_tensor=True, normalize_embeddings=True)
    return vectors.float().to(device)


def train(args: argparse.Namespace) -> None:
    from safetensors.torch import save_file

    from vdbguard.attacks.decoder import EOS_ID, load_tokenizer
    from vdbguard.attacks.generative import GenerativeConfig, GenerativeInversion, InversionModel
    from vdbguard.text import token_f1

    started = time.monotonic()
    torch.manual_seed(args.seed)
    rows = read_texts(args.texts)[: args.limit or None]
    texts = [row["text"] for row in rows]
    folder = args.embedder
    if folder.suffix == ".tar":
        folder = unpack_embedder(folder, args.out.with_name(args.out.name + "-embedder"))
    vectors = embed(folder, texts, args.device)
    log(f"embedded {len(texts)} texts in {time.monotonic() - started:.0f} s, dimension {vectors.shape[1]}")
    tokenizer = load_tokenizer()
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
    sequences = [[*ids[: args.max_tokens], EOS_ID] for ids in encoded]
    validation = np.array([i for i, t in enumerate(texts) if held_out(t, args.validation_share)])[: args.validation_n]
    training = np.array([i for i, t in enumerate(texts) if not held_out(t, args.validation_share)])
    vocabulary = len(tokenizer)
    config = GenerativeConfig(
        layers=tuple(range(30)) if args.layers == "all" else tuple(int(i) for i in args.layers.split(",")),
        prefix_length=args.prefix_length,
        prefix_hidden=args.prefix_hidden,
        lora_rank=args.rank,
        lora_alpha=2.0 * args.rank,
        extra_vocabulary=vocabulary,
        max_tokens=args.max_tokens,
        vocabulary=list(range(vocabulary)),
    )
    model = InversionModel(vectors.shape[1], config).to(args.device)
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(parameters, lr=args.lr, weight_decay=0.01)
    use_bf16 = args.device.startswith("cuda")
    log(f"{len(training)} training texts, {len(validation)} held out, {sum(p.numel() for p in parameters)} weights")

    def batch_of(indices: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        tokens, mask = GenerativeInversion._pad([sequences[i] for i in indices])
        return vectors[torch.as_tensor(indices, device=vectors.device)], tokens.to(args.device), mask.to(args.device)

    @torch.no_grad()
    def validation_loss() -> float:
        model.eval()
        total = 0.0
        chunks = np.array_split(validation, max(1, len(validation) // args.batch_size))
        for chunk in chunks:
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_bf16):
                total += float(model.loss(*batch_of(chunk))) * len(chunk)
        model.train()
        model.decoder.eval()
        return total / len(validation)

    facts: dict[str, object] = {
        "texts": len(training),
        "validation_texts": len(validation),
        "sources": sorted({row["source"].split(":")[0] for row in rows}),
        "embedder": args.embedder.name.removesuffix(".tar"),
        "config": {**config.key(), "vocabulary": "all"},
        "batch_size": args.batch_size,
        "learning_rate": args.lr,
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device,
        "command": "python pipelines/train_generative_gpu.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    weights = args.out / "generative.safetensors"
    best = math.inf
    rng = np.random.default_rng(args.seed)
    step, losses, history = 0, [], []  # losses: every tenth step's
    budget_start = time.monotonic()
    last_eval = budget_start
    warmup = 200
    model.train()
    model.decoder.eval()
    while True:
        order = training[rng.permutation(len(training))]
        for start in range(0, len(order) - args.batch_size + 1, args.batch_size):
            elapsed = time.monotonic() - budget_start
            fraction = min(1.0, elapsed / args.max_seconds)
            lr = args.lr * min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * fraction)))
            for group in optimiser.param_groups:
                group["lr"] = lr
            optimiser.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_bf16):
                loss = model.loss(*batch_of(order[start : start + args.batch_size]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, 1.0)
            optimiser.step()
            step += 1
            if step % 10 == 1:
                losses.append(float(loss.detach()))
            now = time.monotonic()
            out_of_time = now - budget_start >= args.max_seconds or step >= args.steps
            if now - last_eval >= args.eval_seconds or out_of_time:
                last_eval = now
                held = validation_loss()
                history.append({"step": step, "seconds": round(now - budget_start), "validation_loss": round(held, 4)})
                log(f"step {step} loss {np.mean(losses[-5:]):.3f} held-out {held:.4f} lr {lr:.2e}")
                if held < best:
                    best = held
                    state = {
                        name: p.detach().to(torch.float16).cpu()
                        for name, p in model.named_parameters()
                        if p.requires_grad
                    }
                    kept = {**facts, "kept": history[-1], "steps": step}
                    save_file(state, str(weights), metadata={"facts": json.dumps(kept)})
                    (args.out / "generative.json").write_text(json.dumps(kept, indent=1))
            if out_of_time:
                break
        else:
            continue
        break
    facts |= {"steps": step, "history": history, "best_validation_loss": round(best, 4)}
    (args.out / "history.json").write_text(json.dumps(facts, indent=1))
    # a quick read of what the kept weights write back, on held-out texts (greedy)
    from safetensors.torch import load_file

    model.load_state_dict({k: v.float() for k, v in load_file(str(weights)).items()}, strict=False)
    model.eval()
    sample = validation[: args.decode_n]
    decoded: list[str] = []
    for chunk in np.array_split(sample, max(1, len(sample) // 64)):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_bf16):
            beams = model.beam_search(vectors[torch.as_tensor(chunk, device=vectors.device)], 1, args.max_tokens + 1)
        decoded += [tokenizer.decode(b[0][0]).strip() for b in beams]
    f1 = [token_f1(d, texts[i]) for d, i in zip(decoded, sample, strict=True)]
    exact = [d == texts[i].strip() for d, i in zip(decoded, sample, strict=True)]
    log(f"held-out greedy: token F1 {np.mean(f1):.3f}, exact {np.mean(exact):.3f} on {len(sample)}")
    with (args.out / "decoded.jsonl").open("w") as fh:
        for d, i in zip(decoded, sample, strict=True):
            fh.write(json.dumps({"truth": texts[i], "decoded": d, "source": rows[i]["source"]}) + "\n")
    log(f"done in {time.monotonic() - started:.0f} s")


def package(run: Path, embedder_name: str, name: str, texts_command: str) -> None:
    """Ship a run's kept weights in vdbguard/data, with the embedder's probes that ``pretrained`` matches on."""
    import shutil

    from vdbguard.data import packaged_file
    from vdbguard.embedders import Embedder

    facts = json.loads((run / "generative.json").read_text())
    if (run / "history.json").exists():
        facts["history"] = json.loads((run / "history.json").read_text())["history"]
    if facts.pop("embedder") != embedder_name:
        raise SystemExit(f"{run} was trained on another embedder's vectors than {embedder_name}")
    embedder = Embedder(embedder_name)
    shipped = {
        "embedder": embedder_name,
        "embedder_fingerprint": embedder.fingerprint,
        "embedder_probes": embedder.probe_embeddings,
        "config": facts.pop("config"),
        "training": {**facts, "texts_command": texts_command},
    }
    shutil.copyfile(run / "generative.safetensors", packaged_file(f"{name}.safetensors"))
    packaged_file(f"{name}.json").write_text(json.dumps(shipped, indent=1) + "\n")
    log(f"shipped {packaged_file(name)}.{{safetensors,json}} (held-out loss {facts['kept']['validation_loss']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    texts = commands.add_parser("texts", help="build the training texts (CPU)")
    texts.add_argument("--out", type=Path, required=True)
    texts.add_argument("--real-pii", type=int, default=30_000)
    texts.add_argument("--synthetic-pii", type=int, default=15_000)
    texts.add_argument("--max-tokens", type=int, default=40)
    texts.add_argument("--seed", type=int, default=11)
    pack = commands.add_parser("pack", help="an embedder's folder with int8 weights, to carry to the accelerator")
    pack.add_argument("--embedder", required=True, help="a vdbguard embedder name")
    pack.add_argument("--out", type=Path, required=True, help="a .tar file")
    pack.add_argument("--check-texts", type=Path, help="compare the restored model's vectors on these texts")
    ship = commands.add_parser("package", help="copy a run's kept weights into vdbguard/data")
    ship.add_argument("--run", type=Path, required=True, help="train's --out")
    ship.add_argument("--embedder", required=True, help="the vdbguard embedder name it was trained for")
    ship.add_argument("--name", required=True, help="e.g. generative-mpnet (see PACKAGED in attacks/generative.py)")
    ship.add_argument("--texts-command", default="python pipelines/train_generative_gpu.py texts --out texts.jsonl.gz")
    fit = commands.add_parser("train", help="embed and train (accelerator)")
    fit.add_argument("--texts", type=Path, required=True)
    fit.add_argument("--embedder", type=Path, required=True, help="a sentence-transformers folder, or pack's .tar")
    fit.add_argument("--out", type=Path, required=True)
    fit.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    fit.add_argument("--layers", default="all", help="'all' or comma-separated decoder layers")
    fit.add_argument("--rank", type=int, default=16)
    fit.add_argument("--prefix-length", type=int, default=16)
    fit.add_argument("--prefix-hidden", type=int, default=768)
    fit.add_argument("--max-tokens", type=int, default=40)
    fit.add_argument("--batch-size", type=int, default=256)
    fit.add_argument("--lr", type=float, default=1e-3)
    fit.add_argument("--steps", type=int, default=10**9)
    fit.add_argument("--max-seconds", type=float, default=360.0)
    fit.add_argument("--eval-seconds", type=float, default=30.0)
    fit.add_argument("--validation-share", type=float, default=0.01)
    fit.add_argument("--validation-n", type=int, default=2048)
    fit.add_argument("--decode-n", type=int, default=256)
    fit.add_argument("--limit", type=int, default=0, help="use only the first N texts (a smoke run)")
    fit.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.command == "texts":
        build_texts(args.out, args.real_pii, args.synthetic_pii, args.max_tokens, args.seed)
    elif args.command == "pack":
        pack_embedder(args.embedder, args.out, args.check_texts)
    elif args.command == "package":
        package(args.run, args.embedder, args.name, args.texts_command)
    else:
        train(args)


if __name__ == "__main__":
    main()
