"""`vdbguard scan` end to end against every backend of the contract suite, as docs/scanning.md shows it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tests.connectors.contract.harness import Backend
from tests.connectors.contract.test_contract import fresh_name
from vdbguard.cli import main
from vdbguard.demo import demo_texts
from vdbguard.records import VectorRecord
from vdbguard.reports.schema import Report


def cli_arguments(kwargs: dict) -> list[str]:
    """The connector's constructor arguments spelled as the CLI's flags and --option pairs."""
    arguments = []
    for key, value in kwargs.items():
        if key in ("collection", "path", "url"):
            arguments += [f"--{key}", str(value)]
        else:
            arguments += ["--option", f"{key}={json.dumps(value)}"]
    return arguments


def test_scan_command_reports_leaks_without_writing(backend: Backend, embedder, small_attacks, tmp_path: Path) -> None:
    texts = demo_texts(40, seed=5)
    vectors = embedder.encode([text for text, _ in texts])
    namespace = "ns-a" if backend.namespaces else None
    records = [
        VectorRecord(
            id=f"00000000-0000-4000-8000-{i:012d}",
            vector=vector,
            payload={"kind": "note"},
            text=text,
            namespace=namespace,
        )
        for i, ((text, _), vector) in enumerate(zip(texts, vectors, strict=True))
    ]
    name = fresh_name("scan")
    with backend.connector(name) as connector:
        connector.ensure_collection(embedder.dimension, backend.metric)
        connector.upsert(records)
    before = backend.write_marker()
    arguments = ["scan", "--connector", backend.connector_name, *cli_arguments(backend.connector_kwargs(name))]
    result = CliRunner().invoke(main, [*arguments, "--profile", "small", "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    assert report.summary.records_scanned == 40
    assert report.findings
    assert backend.write_marker() == before
