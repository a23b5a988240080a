"""The scan `vdbguard scan`'s flags describe, its options keyed as the command's parameters (``attack_names``,
``deep_sample``...): several collections as the job that scans them, one collection as it always ran.

One collection named as written is scanned straight into ``--out`` (no folder of its own) and may save or load a
calibration; a comma-separated list or a glob runs as a job file's collections do, a report folder each.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vdbguard.config import JobConfig, Suppression
from vdbguard.connectors.base import Connector
from vdbguard.errors import VdbguardError
from vdbguard.identifiers import DetectorSettings
from vdbguard.progress import ProgressSink
from vdbguard.reports import write_reports
from vdbguard.scan.job import CollectionResult

ONE_COLLECTION_ONLY = ("save_calibration", "load_calibration")  # with several, each keeps its own in the state


def opened(factory: functools.partial, name: str) -> Connector:
    """The connector the flags describe, opened; settings it refuses are named as the --option pairs' fault."""
    try:
        return factory()
    except TypeError as exc:
        raise VdbguardError(f"the {name} connector rejected its settings: {exc}", "check the --option names") from exc


def job_from_flags(flags: Mapping[str, Any], collections: list[str], settings: Mapping[str, Any]) -> JobConfig:
    """`scan --collection PATTERN` as the job that scans those collections with the flags' settings, so that it
    runs as a job file's collections do: one after another, a report folder each, one --state for all.
    ``settings``: the connector's, from the flags (path and url are the store's own fields)."""
    from pydantic import ValidationError

    from vdbguard.attacks import DEFAULT_ATTACKS
    from vdbguard.config import AttackSettings, JobSettings, OutputSettings, StoreSettings, describe_errors

    options = {key: value for key, value in settings.items() if key not in ("path", "url")}
    store = StoreSettings.from_flags(flags["connector_name"], flags["path"], flags["url"], options, collections)
    kinds = {"findings": list(flags["findings"])} if flags.get("findings") else {}
    try:
        return JobConfig(
            job=JobSettings(
                state=flags["state"],
                embedder=flags["embedder"],
                profile=flags["profile"],
                verdict=flags["verdict"],
                target_fpr=flags["target_fpr"],
                owner_calibration=flags["owner_calibration"],
                calibration_sample=flags["calibration_sample"],
                batch_size=flags["batch_size"],
                executor=flags["executor"],
                ray_address=flags["address"],
                workers=flags["workers"],
                fail_on=flags["fail_on"],
                **kinds,
            ),
            stores=[store],
            attacks=AttackSettings(
                fast=list(flags["attack_names"] or DEFAULT_ATTACKS),
                sample=flags["sample"],
                deep=list(flags["deep_attack_names"]),
                deep_sample=flags["deep_sample"],
                deep_max_records=flags["deep_max_records"],
                deep_max_seconds=flags["deep_max_seconds"],
                deep_record_seconds=flags["deep_record_seconds"],
            ),
            output=OutputSettings(
                dir=flags["out"],
                formats=list(flags["formats"]),
                show_pii=flags["show_pii"],
                metrics_file=flags["metrics_file"],
            ),
        )
    except ValidationError as exc:
        raise VdbguardError(
            f"the scan's flags have problems:\n{describe_errors(exc)}", "see `vdbguard scan --help`"
        ) from exc


def run_one(
    flags: Mapping[str, Any],
    factory: functools.partial,
    detector_settings: DetectorSettings | None = None,
    baseline: Sequence[Suppression] = (),
    progress: ProgressSink | None = None,
    on_identified: Callable[[str], None] | None = None,
) -> CollectionResult:
    """Scan the one collection ``factory`` opens and write its reports into ``--out`` itself, the baseline
    applied. ``on_identified`` hears the model `--embedder auto` chose."""
    from vdbguard.scan.distributed import RayExecutor
    from vdbguard.scan.run import resolve_embedder, scan_collection
    from vdbguard.scan.settings import ScanSettings, ScanTarget

    started = time.monotonic()
    name = flags["connector_name"]
    with opened(factory, name) as connector:
        model = resolve_embedder(connector, flags["embedder"])
        if model is not None and model.name != flags["embedder"] and on_identified is not None:
            on_identified(model.name)
        report = scan_collection(
            connector,
            ScanTarget(name, str(flags["path"] or flags["url"])),
            ScanSettings.from_flags(flags, detector_settings),
            embedder=model,
            progress=progress,
            executor=RayExecutor(flags["workers"], flags["address"]) if flags["executor"] == "ray" else None,
            suppressions=baseline,
        )
    duration = time.monotonic() - started
    write_reports(report, flags["out"], flags["formats"])
    return CollectionResult(name, flags["collection"], report, flags["out"], duration)
