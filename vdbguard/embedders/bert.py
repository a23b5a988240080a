"""BERT's encoder in plain torch, under Hugging Face's parameter names so a package's weights load as they are.

Two users: the PERSON tagger (``vdbguard.detectors.tagger``) builds on its lower layers, and ``SentenceEncoder``
embeds text for a sentence-transformers folder of a BERT model with mean pooling (the packaged MiniLM): the same
vectors as sentence-transformers, without importing it and transformers, 5-7 s of a core at every scan's start.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from vdbguard.memory import heap_for_a_model


@dataclass(frozen=True)
class Shape:
    """A BERT model's sizes, as its ``config.json`` gives them (MiniLM-L6-H384's by default)."""

    hidden: int = 384
    heads: int = 12
    inner: int = 1536
    layers: int = 6
    vocab: int = 30522
    positions: int = 512
    eps: float = 1e-12

    @classmethod
    def of(cls, config: dict) -> Shape:
        return cls(
            hidden=config["hidden_size"],
            heads=config["num_attention_heads"],
            inner=config["intermediate_size"],
            layers=config["num_hidden_layers"],
            vocab=config["vocab_size"],
            positions=config["max_position_embeddings"],
            eps=config["layer_norm_eps"],
        )


class Named(nn.Module):
    """A module that only holds named children, so parameter names follow Hugging Face's."""

    def __init__(module, **children: nn.Module) -> None:  # "self" is one of BERT's children
        super().__init__()
        for name, child in children.items():
            module.add_module(name, child)


class Layer(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        hidden = shape.hidden
        self.heads = shape.heads
        self.attention = Named(
            self=Named(query=nn.Linear(hidden, hidden), key=nn.Linear(hidden, hidden), value=nn.Linear(hidden, hidden)),
            output=Named(dense=nn.Linear(hidden, hidden), LayerNorm=nn.LayerNorm(hidden, eps=shape.eps)),
        )
        self.intermediate = Named(dense=nn.Linear(hidden, shape.inner))
        self.output = Named(dense=nn.Linear(shape.inner, hidden), LayerNorm=nn.LayerNorm(hidden, eps=shape.eps))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        attention, out = self.attention.self, self.attention.output
        batch, length, hidden = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, length, self.heads, hidden // self.heads).transpose(1, 2)

        context = nn.functional.scaled_dot_product_attention(
            split(attention.query(x)), split(attention.key(x)), split(attention.value(x)), attn_mask=mask
        )
        x = out.LayerNorm(x + out.dense(context.transpose(1, 2).reshape(batch, length, hidden)))
        return self.output.LayerNorm(x + self.output.dense(nn.functional.gelu(self.intermediate.dense(x))))


class Bert(nn.Module):
    """Embeddings and ``shape.layers`` encoder layers; no pooler."""

    def __init__(self, shape: Shape = Shape()) -> None:
        super().__init__()
        self.embeddings = Named(
            word_embeddings=nn.Embedding(shape.vocab, shape.hidden),
            position_embeddings=nn.Embedding(shape.positions, shape.hidden),
            token_type_embeddings=nn.Embedding(2, shape.hidden),
            LayerNorm=nn.LayerNorm(shape.hidden, eps=shape.eps),
        )
        self.encoder = Named(layer=nn.ModuleList(Layer(shape) for _ in range(shape.layers)))

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        emb = self.embeddings
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = emb.word_embeddings(ids) + emb.position_embeddings(positions) + emb.token_type_embeddings.weight[0]
        return emb.LayerNorm(x)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for layer in self.encoder.layer:
            x = layer(x, mask)
        return x


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX-512 BF16 or AMX): there bfloat16 runs at about half fp32's
    time. torch's own check also answers yes on AVX-512 CPUs without it, where oneDNN only emulates bfloat16."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def attention_mask(present: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(batch, tokens) bool -> (batch, 1, 1, tokens), additive."""
    return torch.where(present[:, None, None, :], 0.0, float("-inf")).to(dtype)


# a batch is padded to its longest text, so texts sorted by length are batched only within this many tokens of its
# first: 1,024 demo notes in pages of 128 (as `protect` embeds them) took 6.6-7.0 s in batches of 64, 5.2-5.3 with this
SPREAD = 8
_TRANSFORMER, _POOLING, _NORMALIZE = (
    f"sentence_transformers.models.{kind}" for kind in ("Transformer", "Pooling", "Normalize")
)


class SentenceEncoder:
    """A sentence-transformers folder of a BERT model with mean pooling, run as sentence-transformers runs it (each
    text stripped, cut at ``max_seq_length`` tokens, mean of its tokens, unit length), in float32."""

    def __init__(self, folder: Path, shape: Shape, max_tokens: int) -> None:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self.model = Bert(shape)
        wanted = set(self.model.state_dict())
        stored = load_file(str(folder / "model.safetensors"))
        self.model.load_state_dict(
            {name: value for key, value in stored.items() if (name := key.removeprefix("bert.")) in wanted}
        )
        self.model.eval()
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_tokens)
        self.dimension = shape.hidden

    @classmethod
    def of(cls, folder: Path) -> SentenceEncoder | None:
        """The encoder of ``folder`` when it holds exactly that (a BERT transformer, mean pooling, an optional
        normalisation, weights in safetensors and a fast tokenizer); otherwise None, for sentence-transformers."""
        try:
            modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
            kinds = [module["type"] for module in modules]
            if kinds not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]) or modules[0]["path"]:
                return None
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
            settings = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None
        modes = {key for key, on in pooling.items() if key.startswith("pooling_mode") and on}
        plain_bert = (
            config.get("model_type") == "bert"
            and config.get("hidden_act") == "gelu"
            and config.get("position_embedding_type", "absolute") == "absolute"
        )
        files = all((folder / name).is_file() for name in ("model.safetensors", "tokenizer.json"))
        if not (plain_bert and files and modes == {"pooling_mode_mean_tokens"}) or settings.get("do_lower_case"):
            return None
        return cls(folder, Shape.of(config), int(settings.get("max_seq_length") or config["max_position_embeddings"]))

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit-length float32 embeddings, one row a text."""
        encodings = self.tokenizer.encode_batch([text.strip() for text in texts])
        batches: list[list[int]] = []
        for index in sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids)):
            batch = batches[-1] if batches else []
            if batch and len(batch) < batch_size and len(encodings[batch[0]].ids) - len(encodings[index].ids) < SPREAD:
                batch.append(index)
            else:
                batches.append([index])
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        with torch.inference_mode(), heap_for_a_model():  # the CLI's thresholds: 7.1 s, not 5.1-5.9, without it
            for chosen in batches:
                length = len(encodings[chosen[0]].ids)
                ids = torch.zeros(len(chosen), length, dtype=torch.long)
                present = torch.zeros(len(chosen), length, dtype=torch.bool)
                for row, index in enumerate(chosen):
                    tokens = encodings[index].ids
                    ids[row, : len(tokens)] = torch.tensor(tokens)
                    present[row, : len(tokens)] = True
                hidden = self.model(ids, attention_mask(present))
                weights = present.unsqueeze(-1).float()
                mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
                out[chosen] = nn.functional.normalize(mean, dim=-1).numpy()
        return out
