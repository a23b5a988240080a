"""The scanner's own output must not become the leak: PII values, an API key and a password planted in stored
records, and a password in a store URL, appear in no report format, no state file, no log line (plain and
JSON, verbose) and no error message of a real scan."""

from __future__ import annotations

import subprocess
from pathlib import Path

import chromadb
import pytest

from tests.faults.kill_resume import cli_env, store_records, vdbguard_command

PLANTED = {
    "name": "Bjarni Gislason",
    "email": "bjarni.gislason@example.org",
    "phone": "+354 555 0199",
    "api key": "sk-live-4f9c2a7e1b3d5f60a8c9e2b4d6f8a0c1",
    "password": "Hunter2-Planted!",
}
URL_PASSWORD = "PlantedUrlPass9"


@pytest.fixture(scope="module")
def planted_store(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    path = tmp_path_factory.mktemp("planted") / "store"
    texts = [record.text or "" for record in store_records(40, seed=3)]
    texts += [
        f"Please ask {PLANTED['name']} to email {PLANTED['email']} or call {PLANTED['phone']}.",
        f"Deploy with the key {PLANTED['api key']} from the vault.",
        f"The wifi password is {PLANTED['password']} for guests.",
    ]
    collection = chromadb.PersistentClient(path=str(path)).create_collection("tickets")
    collection.add(
        ids=[f"r{i}" for i in range(len(texts))], embeddings=embedder.encode(texts).tolist(), documents=texts
    )
    return path


def _leaks(outputs: dict[str, bytes], values: dict[str, str]) -> list[str]:
    return [
        f"{what} in {where}"
        for what, value in values.items()
        for where, data in outputs.items()
        if value.encode() in data
    ]


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_no_planted_value_in_any_report_state_or_log_line(
    planted_store: Path, small_attacks, tmp_path: Path, log_format: str
) -> None:
    out, state = tmp_path / "out", tmp_path / "scan.sqlite"
    args = ["-v", "--log-format", log_format, "scan", "--connector", "chroma", "--path", str(planted_store)]
    args += ["--collection", "tickets", "--profile", "small", "--out", str(out), "--state", str(state)]
    result = subprocess.run(
        vdbguard_command(*args, "--format", "json,md,html,sarif,csv", "--fail-on", "never"),
        env=cli_env(),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    outputs = {path.name: path.read_bytes() for path in out.iterdir()}
    assert set(outputs) == {"report.json", "report.md", "report.html", "report.sarif", "report.csv"}
    outputs |= {p.name: p.read_bytes() for p in tmp_path.glob("scan.sqlite*") if p.is_file()}
    outputs["output"] = (result.stdout + result.stderr).encode()
    assert b"Bjarni" not in outputs["output"], "the scan's own log lines carry no stored text"
    assert _leaks(outputs, PLANTED) == []


def test_a_failing_connection_never_shows_the_url_password(tmp_path: Path) -> None:
    url = f"http://admin:{URL_PASSWORD}@127.0.0.1:9/"
    args = ["-v", "scan", "--connector", "chroma", "--url", url, "--collection", "tickets", "--out", str(tmp_path)]
    result = subprocess.run(vdbguard_command(*args), env=cli_env(), capture_output=True, text=True)
    assert result.returncode == 2
    assert URL_PASSWORD not in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
