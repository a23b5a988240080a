"""The tagger's linear layers in int8, for CPUs that do not multiply bfloat16 natively (measured, not the default).

There the tagger runs in float32, at 1.8 times version 6's CPU a text. Torch's dynamic int8 kernel (fbgemm) reads
each matrix in about 0.6 of float32's time, but it scales a whole batch by the batch's largest value, so a text's
names would depend on the texts batched beside it. Each input is clamped to a bound measured once on training text
(``person-tagger.int8.json`` beside the tagger's folder, ``pipelines/int8_bounds.py``), and a row holding plus and
minus that bound goes in with every batch: the kernel's scale is then the bound's, whatever the batch holds, and each
row's result is its own. It finds the names float32 finds in 99.1% of training texts, but owner-side calibration
turned out to hang on the few it tags otherwise (BENCHMARKS.md, "A learned PERSON tagger").
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


def bounds_file(folder: Path) -> Path:
    """Beside the tagger's folder, not in it: the folder is what the detector's version vouches for."""
    return folder.parent / f"{folder.name}.int8.json"


def int8_kernel() -> bool:
    """Whether torch here has fbgemm's int8 kernels (x86) and the quantised tensors they read, which torch deprecates
    (2.13)."""
    if not {"fbgemm", "x86"} & set(torch.backends.quantized.supported_engines):
        return False
    try:
        BoundedInt8Linear(nn.Linear(4, 2), 1.0)(torch.ones(1, 4))
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


def measure_bounds(model: Any, run: Callable[[], object]) -> dict[str, float]:
    """The largest absolute input each encoder linear sees while ``run`` runs the float32 model."""
    bounds: dict[str, float] = {}

    def hook(name: str) -> Callable[..., None]:
        def record(module: Any, inputs: tuple[Any, ...]) -> None:
            bounds[name] = max(bounds.get(name, 0.0), float(inputs[0].abs().max()))

        return record

    handles = [linear.register_forward_pre_hook(hook(name)) for name, _, _, linear in encoder_linears(model)]
    try:
        run()
    finally:
        for handle in handles:
            handle.remove()
    return bounds


def load_bounds(folder: Path, tagger: str) -> dict[str, float]:
    try:
        saved = json.loads(bounds_file(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VdbguardError(f"cannot read the tagger's int8 bounds in {folder}: {exc}", "reinstall vdbguard") from exc
    if saved["tagger"] != tagger:
        raise VdbguardError(
            f"the int8 bounds in {folder} were measured on another tagger than the one beside them",
            "measure them again: python pipelines/int8_bounds.py",
        )
    return {name: float(bound) for name, bound in saved["bounds"].items()}


def quantise(model: Any, bounds: dict[str, float]) -> None:
    """Replace every encoder linear of ``model`` by its bounded int8 form, in place."""
    if not int8_kernel():
        raise VdbguardError("torch has no int8 kernel on this machine", "run the tagger without int8")
    linears = list(encoder_linears(model))
    if {name for name, *_ in linears} != set(bounds):
        raise VdbguardError("the tagger's int8 bounds name other layers than it has", "reinstall vdbguard")
    for name, parent, attribute, linear in linears:
        setattr(parent, attribute, BoundedInt8Linear(linear, bounds[name]))


class BoundedInt8Linear(nn.Module):
    """``linear`` with int8 weights (a scale per output) over inputs clamped to ``bound`` and quantised on it."""

    def __init__(self, linear: nn.Linear, bound: float) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        # weights in 7 bits, inputs in 8: without VNNI the kernel sums two products in 16 bits, and 255 × 63 × 2
        # fits where 255 × 127 × 2 would saturate
        scales = (weight.abs().amax(1) / 63).clamp(min=1e-12).double()
        zero = torch.zeros(weight.shape[0], dtype=torch.int64)
        with warnings.catch_warnings():  # the deprecation: int8_kernel() checks the kernel still runs
            warnings.simplefilter("ignore", UserWarning)
            quantised = torch.quantize_per_channel(weight, scales, zero, 0, torch.qint8)
        self.packed = torch.ops.quantized.linear_prepack(quantised, linear.bias.detach().float())
        self.bound, self.out_features = bound, weight.shape[0]
        self.edge = torch.zeros(1, weight.shape[1])
        self.edge[0, :2] = torch.tensor([bound, -bound])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        *lead, width = x.shape
        rows = x.numel() // width
        batch = torch.empty(rows + 1, width)
        torch.clamp(x.reshape(rows, width), -self.bound, self.bound, out=batch[:rows])
        batch[rows:] = self.edge
        out = torch.ops.quantized.linear_dynamic(batch, self.packed, False)  # False: inputs in all 8 bits
        return out[:rows].view(*lead, self.out_features)
