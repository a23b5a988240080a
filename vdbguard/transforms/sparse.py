"""SPARSE: learn which dimensions carry a concept, then put the metric-LDP noise there.

Tsai et al., "Concept-Aware Privacy Mechanisms for Defending Embedding Inversion Attacks"
(arXiv:2602.07090, ICLR 2026). Two steps, both here:

1. **Mask learning.** One hard-concrete gate per dimension (Louizos, Welling & Kingma, "Learning
   Sparse Neural Networks through L0 Regularization", ICLR 2018) multiplies the standardised vector;
   a small MLP reads the concept from the gated vector. Gates and MLP are trained together on
   cross-entropy plus the expected number of open gates (the L0 penalty), so what stays open is a
   small set of dimensions that suffices to read the concept: the "privacy neurons".
2. **Mahalanobis mechanism** (Xu et al., "A Differentially Private Text Perturbation Method Using
   a Regularized Mahalanobis Metric", PrivNLP 2020): noise ``z = Σ^{1/2}·r·u`` with ``u`` uniform on
   the sphere and ``r ~ Gamma(d, 1/ε)``, i.e. density ∝ ``exp(-ε·‖z‖_Σ)`` with
   ``‖z‖_Σ = sqrt(zᵀ Σ⁻¹ z)``. Here ``Σ = diag(s²)`` with ``s_i ∝ 1 + (ratio - 1)·mask_i``, scaled
   so ``mean(s²) = 1``: the expected noise energy equals the Laplace mechanism's at the same ε, only
   moved onto the masked dimensions (``ratio`` times the standard deviation of an unmasked one).

The privacy claim, precisely: for a fixed fitted ``Σ``, the mechanism is ε-d_X-private for the
Mahalanobis distance ``d(x, x') = ‖Σ^{-1/2}(x - x')‖`` (Chatzikokolakis et al. 2013), so for two
vectors that differ by Euclidean length Δ the likelihood ratio is at most ``exp(ε·Δ/s_max)`` when they
differ only on fully masked dimensions and ``exp(ε·Δ/s_min)`` when only on unmasked ones: tighter
than the Laplace mechanism's ``exp(ε·Δ)`` in the first case, looser in the second. Like Laplace and
Purkayastha (``ldp.py``), the bound is vacuous at the ε that keeps retrieval usable in d = 384; what it
buys is what an attack measured against it says. The mask is learned from the fit sample and is not
itself privatised: fit on data you may reveal (e.g. :func:`~vdbguard.transforms.concepts.corpus_concept_set`).

Limit seen on MiniLM: the "names a person" concept is spread over many dimensions. The mask keeps a
few dozen that suffice for the discriminator, and noise piled there blinds a probe trained on clean
vectors more than Laplace noise of the same energy does, but a probe retrained on protected vectors
reads the concept from the other dimensions, better than under Laplace noise. Against linear
readers :class:`~vdbguard.transforms.leace.LeaceErasure` is the direct tool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from vdbguard.errors import VdbguardError
from vdbguard.transforms.base import not_fitted_error
from vdbguard.transforms.concepts import label_columns
from vdbguard.transforms.gaussian import as_rows, check_strength
from vdbguard.transforms.ldp import GeneralizedLaplace

# Hard-concrete constants from Louizos et al. (2018): temperature β, stretch interval (γ, ζ).
BETA, GAMMA, ZETA = 2.0 / 3.0, -0.1, 1.1


def learn_concept_mask(
    vectors: np.ndarray,
    columns: Sequence[np.ndarray],
    *,
    l0_weight: float = 0.01,
    steps: int = 800,
    batch_size: int = 256,
    hidden: int = 64,
    seed: int | None = None,
) -> np.ndarray:
    """Per-dimension gate values in [0, 1] (mostly exactly 0 or 1): 1 where the concept is read.

    ``l0_weight`` is the price, in nats of cross-entropy, of keeping *every* gate open (each gate
    costs ``l0_weight / d``); larger keeps fewer dimensions. Deterministic for a given ``seed``.
    """
    import torch
    from torch import nn

    rows = as_rows(vectors)
    n, d = rows.shape
    mean, std = rows.mean(axis=0), rows.std(axis=0) + 1e-6
    x = torch.from_numpy((rows - mean) / std)
    targets = [torch.from_numpy(c) for c in columns]
    sizes = [int(c.max()) + 1 for c in columns]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed if seed is not None else int(np.random.SeedSequence().generate_state(1)[0]))
        log_alpha = nn.Parameter(torch.full((d,), 2.0))  # gates start open: P(open) ≈ 0.97
        net = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, sum(sizes)))
        optimiser = torch.optim.Adam([{"params": net.parameters()}, {"params": [log_alpha], "lr": 0.05}], lr=0.005)
        open_shift = BETA * math.log(-GAMMA / ZETA)
        for _ in range(steps):
            batch = torch.randint(n, (min(batch_size, n),))
            u = torch.rand(len(batch), d).clamp(1e-6, 1 - 1e-6)
            gate = torch.sigmoid((torch.log(u) - torch.log1p(-u) + log_alpha) / BETA) * (ZETA - GAMMA) + GAMMA
            logits = net(x[batch] * gate.clamp(0.0, 1.0)).split(sizes, dim=1)
            loss = sum(nn.functional.cross_entropy(lg, t[batch]) for lg, t in zip(logits, targets, strict=True))
            loss = loss + l0_weight * torch.sigmoid(log_alpha - open_shift).sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        with torch.no_grad():
            mask = (torch.sigmoid(log_alpha) * (ZETA - GAMMA) + GAMMA).clamp(0.0, 1.0)
    return mask.numpy().astype(np.float32)


def noise_scales(mask: np.ndarray, ratio: float) -> np.ndarray:
    """Per-dimension noise standard deviations: ``ratio`` times larger where masked, ``mean(s²) = 1``."""
    s = 1.0 + (ratio - 1.0) * mask.astype(np.float64)
    return (s / np.sqrt(np.mean(s * s))).astype(np.float32)


class SparseMahalanobis(GeneralizedLaplace):
    """Elliptical Laplace noise ``Σ^{1/2}·r·u`` whose ellipse is stretched along the learned concept dimensions.

    ``ratio``: noise standard deviation on a masked dimension over an unmasked one (1 = the plain
    Laplace mechanism). ``renormalize`` as in :class:`~vdbguard.transforms.ldp.GeneralizedLaplace`.
    The mask-learning knobs (``l0_weight``, ``steps``) go to :func:`learn_concept_mask`.
    """

    name: ClassVar[str] = "sparse"
    description: ClassVar[str] = (
        "SPARSE (Tsai et al. 2026): hard-concrete/L0 mask of the concept's dimensions, then Mahalanobis-mechanism "
        "noise stretched along them; fit on labelled vectors"
    )
    strength_meaning: ClassVar[str] = (
        "privacy parameter ε per unit of Mahalanobis distance (smaller is stronger; same noise energy as laplace)"
    )
    needs_fit: ClassVar[bool] = True
    needs_labels: ClassVar[bool] = True
    default_strengths: ClassVar[tuple[float, ...]] = GeneralizedLaplace.default_strengths

    def __init__(
        self,
        strength: float | None = None,
        seed: int | None = None,
        renormalize: bool | None = None,
        ratio: float = 8.0,
        l0_weight: float = 0.01,
        steps: int = 800,
    ) -> None:
        super().__init__(strength, seed, renormalize)
        self.ratio = check_strength(ratio, "noise ratio")
        self.l0_weight = check_strength(l0_weight, "l0_weight", positive=False)
        self.steps = int(steps)
        self.mask: np.ndarray | None = None
        self.scales: np.ndarray | None = None

    def fit(self, vectors: np.ndarray, labels: np.ndarray | None = None) -> SparseMahalanobis:
        rows = as_rows(vectors)
        columns = label_columns(labels, len(rows), self.name)
        self.mask = learn_concept_mask(rows, columns, l0_weight=self.l0_weight, steps=self.steps, seed=self.seed)
        self.scales = noise_scales(self.mask, self.ratio)
        return self

    @property
    def sensitive_dims(self) -> np.ndarray:
        """Indices of the dimensions whose gate stayed (mostly) open."""
        if self.mask is None:
            raise not_fitted_error(self)
        return np.flatnonzero(self.mask > 0.5)

    def noise(self, n: int, d: int) -> np.ndarray:
        """``n`` draws with density ∝ exp(-ε·‖z‖_Σ): Laplace noise scaled per dimension by ``Σ^{1/2}``."""
        if self.scales is None:
            raise not_fitted_error(self)
        if d != len(self.scales):
            raise VdbguardError(
                f"vectors have dimension {d}, the mask was learned on {len(self.scales)}",
                "fit on vectors from the same embedder",
            )
        noise = super().noise(n, d)
        noise *= self.scales
        return noise

    def params(self) -> dict[str, Any]:
        return {
            **super().params(),
            "ratio": self.ratio,
            "l0_weight": self.l0_weight,
            "steps": self.steps,
            "sensitive_dims": None if self.mask is None else len(self.sensitive_dims),
        }

    def fit_state(self) -> dict[str, np.ndarray]:
        return {} if self.mask is None else {"mask": self.mask}

    def load_fit_state(self, state: Mapping[str, np.ndarray]) -> SparseMahalanobis:
        self.mask = np.asarray(state["mask"], dtype=np.float32)
        self.scales = noise_scales(self.mask, self.ratio)
        return self

    @property
    def fit_dim(self) -> int | None:
        return None if self.mask is None else len(self.mask)
