"""The tagger's linear layers in int8, by default on CPUs that do not multiply bfloat16 natively.

There the tagger would run in float32, at 1.8 times version 6's CPU a text. Torch's dynamic int8 kernel (fbgemm) reads
each matrix in about 0.6 of float32's time, but it scales a whole batch by the batch's largest value, so a text's
names would depend on the texts batched beside it. Here each word's row is scaled by its own largest value instead:
first each input channel is divided by its bound (the largest value it took on training text, ``person-tagger.int8
.json`` beside the tagger's folder, ``pipelines/int8_bounds.py``) to the power ``SMOOTHING``, the weights multiplied by
the same (SmoothQuant's migration: a few loud channels no longer take a row's 8 bits), then each row by its largest
value, which multiplies the row's result back; a row holding plus and minus 1 goes in with every batch, so the kernel's
scale is the same whatever the batch holds and each row's result is its own. It finds the names float32 finds in
99.8% of training texts (BENCHMARKS.md, "A learned PERSON tagger").
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from vdbguard.errors import VdbguardError

SMOOTHING = 0.3  # dev's choice of 0, 0.3, 0.5 and 1: the most texts tagged as float32 tags them


def bounds_file(folder: Path) -> Path:
    """Beside the tagger's folder, not in it: the folder is what the detector's version vouches for."""
    return folder.parent / f"{folder.name}.int8.json"


def int8_kernel() -> bool:
    """Whether torch here has fbgemm's int8 kernels (x86) and the quantised tensors they read, which torch deprecates
    (2.13)."""
    if not {"fbgemm", "x86"} & set(torch.backends.quantized.supported_engines):
        return False
    try:
        BoundedInt8Linear(nn.Linear(4, 2), torch.ones(4))(torch.ones(1, 4))
    except (AttributeError, RuntimeError, NotImplementedError):
        return False
    return True


def encoder_linears(model: Any) -> Iterator[tuple[str, Any, str, Any]]:
    """Each linear layer of the encoder: (its name, its parent, its attribute there, itself)."""
    for parent_name, parent in model.named_modules():
        for attribute, child in parent.named_children():
            name = f"{parent_name}.{attribute}" if parent_name else attribute
            if isinstance(child, nn.Linear) and name.startswith("encoder."):
                yield name, parent, attribute, child


def measure_bounds(model: Any, run: Callable[[], object]) -> dict[str, list[float]]:
    """The largest absolute value of each input channel of each encoder linear while ``run`` runs the float32 model,
    over the tokens each window holds: a padded position's values are never read, and would loosen the bounds."""
    largest: dict[str, torch.Tensor] = {}
    present: list[torch.Tensor] = []  # the layer running now: which of its (window, position)s hold a token

    def layer_mask(module: Any, inputs: tuple[Any, ...]) -> None:
        present[:] = [inputs[1].reshape(inputs[0].shape[:2]) == 0]  # the additive mask: 0 where a token is

    def hook(name: str) -> Callable[..., None]:
        def record(module: Any, inputs: tuple[Any, ...]) -> None:
            seen = inputs[0].detach()[present[0]].abs().amax(0).float()
            largest[name] = torch.maximum(largest[name], seen) if name in largest else seen

        return record

    handles = [layer.register_forward_pre_hook(layer_mask) for layer in model.encoder.layer]
    handles += [linear.register_forward_pre_hook(hook(name)) for name, _, _, linear in encoder_linears(model)]
    try:
        run()
    finally:
        for handle in handles:
            handle.remove()
    return {name: [float(f"{value:.5g}") for value in channels.tolist()] for name, channels in largest.items()}


def load_bounds(folder: Path, tagger: str) -> dict[str, list[float]]:
    try:
        saved = json.loads(bounds_file(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VdbguardError(f"cannot read the tagger's int8 bounds in {folder}: {exc}", "reinstall vdbguard") from exc
    if saved["tagger"] != tagger:
        raise VdbguardError(
            f"the int8 bounds in {folder} were measured on another tagger than the one beside them",
            "measure them again: python pipelines/int8_bounds.py",
        )
    return {name: [float(value) for value in channels] for name, channels in saved["bounds"].items()}


def quantise(model: Any, bounds: dict[str, list[float]]) -> None:
    """Replace every encoder linear of ``model`` by its bounded int8 form, in place."""
    if not int8_kernel():
        raise VdbguardError("torch has no int8 kernel on this machine", "run the tagger without int8")
    linears = list(encoder_linears(model))
    if {name: linear.in_features for name, _, _, linear in linears} != {name: len(b) for name, b in bounds.items()}:
        raise VdbguardError("the tagger's int8 bounds name other layers than it has", "reinstall vdbguard")
    for name, parent, attribute, linear in linears:
        setattr(parent, attribute, BoundedInt8Linear(linear, torch.tensor(bounds[name])))


class BoundedInt8Linear(nn.Module):
    """``linear`` with int8 weights (a scale per output) over inputs divided by ``bounds`` ** ``SMOOTHING`` (one per
    input channel), then each row by its own largest value, quantised on ±1."""

    def __init__(self, linear: nn.Linear, bounds: torch.Tensor) -> None:
        super().__init__()
        scale = bounds.float().clamp(min=1e-6) ** SMOOTHING  # a channel never seen to fire stays near 0
        self.inverse = 1 / scale
        weight = linear.weight.detach().float() * scale
        # weights in 7 bits, inputs in 8: without VNNI the kernel sums two products in 16 bits, and 255 × 63 × 2
        # fits where 255 × 127 × 2 would saturate
        scales = (weight.abs().amax(1) / 63).clamp(min=1e-12).double()
        zero = torch.zeros(weight.shape[0], dtype=torch.int64)
        with warnings.catch_warnings():  # the deprecation: int8_kernel() checks the kernel still runs
            warnings.simplefilter("ignore", UserWarning)
            quantised = torch.quantize_per_channel(weight, scales, zero, 0, torch.qint8)
        self.packed = torch.ops.quantized.linear_prepack(quantised, None)  # the bias goes on after the row's scale
        self.bias = linear.bias.detach().float()
        self.out_features = weight.shape[0]
        self.edge = torch.zeros(1, weight.shape[1])
        self.edge[0, :2] = torch.tensor([1.0, -1.0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        *lead, width = x.shape
        rows = x.numel() // width
        batch = torch.empty(rows + 1, width)
        torch.mul(x.reshape(rows, width), self.inverse, out=batch[:rows])
        largest = batch[:rows].abs().amax(1, keepdim=True).clamp_(min=1e-12)
        batch[:rows] /= largest
        batch[rows:] = self.edge
        out = torch.ops.quantized.linear_dynamic(batch, self.packed, False)  # False: inputs in all 8 bits
        return torch.addcmul(self.bias, out[:rows], largest).view(*lead, self.out_features)
