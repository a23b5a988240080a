"""Keep what a transform's fit learned: one ``.npz`` of plain arrays (read with ``allow_pickle=False``) plus metadata.

A fit (an int8 scale, PQ codebooks, a PCA or LEACE projection) is part of the stored space: documents
written under one fit and queries under another no longer meet, and a resumed copy that refits mixes
two spaces in one collection. So ``protect`` and the hooks fit once and save the fit; later runs load
it. The file names the transform, its settings, the input dimension and, for keyed transforms, a
one-way tag of the key (never the key), and loading it into anything else is refused.
"""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from vdbguard.cache import atomic_write
from vdbguard.errors import VdbguardError
from vdbguard.transforms.base import Transform, not_fitted_error

__all__ = ["FIT_VERSION", "can_save_fit", "ensure_fitted", "load_fit", "read_fit", "save_fit"]

FIT_FORMAT = "vdbguard-fit"
FIT_VERSION = 1
_META = "__vdbguard_fit__"  # the metadata: a JSON string stored as a 0-d unicode array
# a seed only steers how a fit is found (or draws fresh noise), it does not define the fit; the key is checked apart
_NOT_COMPARED = ("seed", "key_id")

T = TypeVar("T", bound=Transform)


def can_save_fit(transform: Transform) -> bool:
    """Whether the transform's fit can be saved: nothing to fit, or it exports fit_state() (plugins may not)."""
    return not transform.needs_fit or type(transform).fit_state is not Transform.fit_state


def save_fit(transform: Transform, path: str | Path) -> Path:
    """Write the transform's fit to ``path`` in one atomic replace, so a crash never leaves half a file."""
    path = Path(path)
    if not can_save_fit(transform):
        raise VdbguardError(
            f"transform {transform.name!r} cannot save its fit", "implement fit_state() and load_fit_state() on it"
        )
    state = {name: np.asarray(array) for name, array in transform.fit_state().items()}
    if transform.needs_fit and not state:
        raise not_fitted_error(transform)
    if _META in state or any(array.dtype.hasobject for array in state.values()):
        raise VdbguardError(f"transform {transform.name!r}: fit_state() must give plain numeric arrays")
    params = _jsonable(transform.params())
    meta = {
        "format": FIT_FORMAT,
        "version": FIT_VERSION,
        "transform": transform.name,
        "params": params,
        "dimension": transform.fit_dim,
        "key_id": params.get("key_id") if transform.needs_key else None,
    }
    with atomic_write(path, "wb") as handle:
        np.savez(handle, **{_META: np.array(json.dumps(meta))}, **state)
    return path


def read_fit(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(metadata, arrays)`` of a fit file; never unpickles anything."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        meta = json.loads(str(arrays.pop(_META)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, zipfile.BadZipFile) as exc:
        raise VdbguardError(
            f"{path} is not a readable vdbguard fit file ({type(exc).__name__}: {exc})",
            "point to the file vdbguard saved, or delete it to fit again",
        ) from exc
    if not isinstance(meta, dict) or meta.get("format") != FIT_FORMAT or meta.get("version") != FIT_VERSION:
        raise VdbguardError(
            f"{path} is not a vdbguard fit file of format version {FIT_VERSION}", "delete it to fit again"
        )
    return meta, arrays


def load_fit(transform: T, path: str | Path, dimension: int | None = None) -> T:
    """Load the fit saved at ``path`` into ``transform``, refusing a fit made for another transform, other
    settings, another key or (when ``dimension`` is given) vectors of another dimension."""
    meta, state = read_fit(path)
    refit = "build the transform the fit was made for, or delete the file to fit again"
    if meta.get("transform") != transform.name:
        raise VdbguardError(
            f"the fit in {path} is for transform {meta.get('transform')!r}, not {transform.name!r}", refit
        )
    key_id = transform.params().get("key_id") if transform.needs_key else None
    if meta.get("key_id") != key_id:
        raise VdbguardError(
            f"the fit in {path} was made with another key (key_id {meta.get('key_id')!r}, this one {key_id!r})",
            "use the key the fit was made with, or delete the file to fit again",
        )
    if dimension is not None and meta.get("dimension") not in (None, dimension):
        raise VdbguardError(
            f"the fit in {path} was made on {meta['dimension']}-dimensional vectors, these have {dimension}",
            "fit again on vectors from this embedder (delete the file)",
        )
    try:  # on a copy first: a refused file leaves the transform as it was
        trial = copy.copy(transform).load_fit_state(state)
    except (KeyError, ValueError, TypeError) as exc:
        raise VdbguardError(f"the fit in {path} does not fit transform {transform.name!r}: {exc}", refit) from exc
    saved, now = meta.get("params", {}), _jsonable(trial.params())
    differs = sorted(k for k in {*saved, *now} if k not in _NOT_COMPARED and saved.get(k) != now.get(k))
    if differs:
        shown = ", ".join(f"{k} {saved.get(k)!r} in the file, {now.get(k)!r} here" for k in differs)
        raise VdbguardError(f"the fit in {path} was made with other settings: {shown}", refit)
    return transform.load_fit_state(state)


def ensure_fitted(
    transform: T,
    fit_path: str | Path | None = None,
    sample: np.ndarray | None = None,
    labels: np.ndarray | None = None,
) -> T:
    """Make ``transform`` ready before anything is written: load ``fit_path`` if it exists, else fit on
    ``sample`` (with ``labels`` where the transform needs them) and save to ``fit_path``; an already fitted
    transform is saved there when the file is missing. Nothing to fit from raises (fail closed)."""
    path = Path(fit_path) if fit_path is not None else None
    if transform.fitted:
        if path is not None and transform.needs_fit and not path.exists():
            save_fit(transform, path)
        return transform
    if path is not None and path.exists():
        return load_fit(transform, path, None if sample is None else np.shape(sample)[-1])
    if transform.needs_labels and (sample is None or labels is None):
        from vdbguard.transforms.concepts import missing_labels_error

        raise missing_labels_error(transform.name)
    if sample is None:
        raise VdbguardError(
            f"transform {transform.name!r} needs a fit before anything is written, and has nothing to fit from",
            "pass fit_sample=<sample vectors, shape (n, dim)> (and fit_path= to keep the fit), a fit_path= of a "
            "saved fit, or a transform already fitted with transform.fit(vectors)",
        )
    transform.fit(np.asarray(sample, dtype=np.float32), labels)
    if path is not None:
        save_fit(transform, path)
    return transform


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, sort_keys=True))
