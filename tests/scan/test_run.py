"""One scan from its settings to its report: the state is opened once and held until the report is saved, and the
saved report is the one the caller gets, accepted findings hidden in both."""

from __future__ import annotations

import shutil
from datetime import date, timedelta
from pathlib import Path

import pytest
from vdbguard.connectors.chroma import ChromaConnector

from vdbguard.config import Suppression
from vdbguard.scan import ScanSettings, ScanStore, ScanTarget, scan_collection
from vdbguard.scan.state import target_key


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every state file opened, in order."""
    opened: list[Path] = []
    real = ScanStore._open

    def counted(self: ScanStore, path: Path) -> None:
        opened.append(path)
        real(self, path)

    monkeypatch.setattr(ScanStore, "_open", counted)
    return opened


def test_a_scan_opens_its_state_once_and_saves_what_it_returns_suppressions_applied(
    pii_store, embedder, small_attacks, tmp_path: Path, opens: list[Path]
) -> None:
    path, collection, _ = pii_store
    shutil.copytree(path, tmp_path / "store")
    state = tmp_path / "state.sqlite"

    def scan(suppressions: list[Suppression]):
        return scan_collection(
            ChromaConnector(collection=collection, path=tmp_path / "store"),
            ScanTarget("chroma", str(tmp_path / "store")),
            ScanSettings(profile="small", batch_size=32, state_path=state), embedder=embedder,
            suppressions=suppressions,
        )  # fmt: skip

    first = scan([])
    assert opens == [state], "one open for the whole scan: describe, calibrate, attack, save"
    accepted = first.findings[0]
    suppression = Suppression(
        record_id=accepted.record_id, reason="test data", owner="qa", expires=date.today() + timedelta(days=7)
    )
    again = scan([suppression])
    assert opens == [state, state], "an unchanged re-scan opens it once too"
    assert accepted.record_id not in {f.record_id for f in again.findings}
    assert len(again.findings) == sum(f.record_id != accepted.record_id for f in first.findings)  # every kind of it
    with ScanStore(state) as store:
        saved = store.latest_report(target_key("chroma", again.target.location, collection), with_findings=True)
    assert saved is not None and saved.summary == again.summary
    assert [f.record_id for f in saved.findings] == [f.record_id for f in again.findings]
