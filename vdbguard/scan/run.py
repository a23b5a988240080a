"""One call from connector to Report: what the CLI, scheduled jobs and the demo all use."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import numpy as np

from vdbguard.attacks import DEFAULT_ATTACKS
from vdbguard.attacks.training import TrainingProfile, trained_attacks
from vdbguard.connectors.base import Connector
from vdbguard.credentials import redact_location
from vdbguard.detectors import DEFAULT_DETECTOR, load_detector
from vdbguard.embedders import Embedder
from vdbguard.errors import RecordError, VdbguardError
from vdbguard.progress import ProgressSink
from vdbguard.reports.schema import AttackInfo, EmbedderInfo, Report, Target
from vdbguard.scan.engine import Scanner, summarise

AUTO_EMBEDDER = "auto"


def resolve_embedder(connector: Connector, name_or_path: str, sample_size: int = 64) -> Embedder:
    """The embedder named, or for ``auto`` the known model that best explains a sample of stored vectors.

    The scan picks its attack models by embedder, so a wrong guess would mean wrong attacks: ``auto``
    fails with every candidate's score rather than guess.
    """
    if name_or_path != AUTO_EMBEDDER:
        return Embedder(name_or_path)
    from vdbguard.embedders.identify import identify_embedder

    sample: list[np.ndarray] = []
    for batch in connector.iter_batches(batch_size=sample_size):
        for record in batch.records:
            with contextlib.suppress(RecordError):  # the scan itself reports bad records
                sample.append(record.checked_vector())
        if len(sample) >= sample_size:
            break
    if not sample:
        raise VdbguardError("--embedder auto needs stored vectors to look at, and the collection has none")
    dimensions = {vector.size for vector in sample}
    if len(dimensions) > 1:
        raise VdbguardError(
            f"stored vectors have mixed dimensions {sorted(dimensions)}", "pass --embedder NAME_OR_PATH"
        )
    return Embedder(identify_embedder(np.stack(sample)))


def scan_collection(
    connector: Connector,
    *,
    connector_name: str,
    location: str,
    embedder: Embedder,
    attack_names: Sequence[str] = DEFAULT_ATTACKS,
    profile: TrainingProfile | str = "default",
    batch_size: int = 256,
    state_path: Path | None = None,
    mask_pii: bool = True,
    detector: str = DEFAULT_DETECTOR,
    progress: ProgressSink | None = None,
) -> Report:
    info = connector.describe()
    if info.dimension is not None and info.dimension != embedder.dimension:
        raise VdbguardError(
            f"collection {info.name!r} stores {info.dimension}-d vectors but embedder {embedder.name!r} "
            f"produces {embedder.dimension}-d ones",
            "pass --embedder with the model that produced this collection",
        )
    attacks = trained_attacks(embedder, attack_names, profile=profile, progress=progress)
    scanner = Scanner(attacks, load_detector(detector), embedder.dimension, mask_pii=mask_pii)
    safe_location = redact_location(location)
    state = scanner.scan(
        connector,
        batch_size=batch_size,
        state_path=state_path,
        target=f"{connector_name}:{safe_location}:{info.name}",
        total=info.count,
        progress=progress,
    )
    return Report(
        tool_version=version("vdbguard"),
        created_at=datetime.now(UTC),
        target=Target(
            connector=connector_name,
            collection=info.name,
            location=safe_location,
            dimension=info.dimension,
            count=info.count,
            metric=info.metric,
        ),
        embedder=EmbedderInfo(name=embedder.name, fingerprint=embedder.fingerprint, dimension=embedder.dimension),
        attacks=[
            AttackInfo(name=a.name, description=a.description, threshold=a.threshold, metrics=a.metrics())
            for a in attacks
        ],
        masked=mask_pii,
        summary=summarise(state),
        findings=state.findings,
        record_problems=state.problems,
    )
