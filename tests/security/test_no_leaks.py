"""The scanner's own output must not become the leak: PII values, an API key and a password planted in stored
records, and a password in a store URL, appear in no report format, no state file, no log line (plain and
JSON, verbose) and no error message of a real scan."""

from __future__ import annotations

import subprocess
from pathlib import Path

import chromadb
import pytest

from tests.evaluate.test_defense import KEY
from tests.faults.kill_resume import cli_env, store_records, vdbguard_command

pytestmark = pytest.mark.slow(minutes=9)

PLANTED = {
    "name": "Bjarni Gislason",
    "email": "bjarni.gislason@example.org",
    "phone": "+354 555 0199",
    "api key": "sk-live-4f9c2a7e1b3d5f60a8c9e2b4d6f8a0c1",
    "password": "Hunter2-Planted!",
}


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


@pytest.mark.parametrize(("log_format", "show_pii"), [("text", False), ("json", False), ("text", True)])
def test_no_planted_value_in_any_report_state_or_log_line(
    planted_store: Path, small_attacks, tmp_path: Path, log_format: str, show_pii: bool
) -> None:
    """With --show-pii, recovered PII may show (that is what it is for); secrets and stored text never do."""
    out, state = tmp_path / "out", tmp_path / "scan.sqlite"
    args = ["-v", "--log-format", log_format, "scan", "--connector", "chroma", "--path", str(planted_store)]
    args += ["--collection", "tickets", "--profile", "small", "--out", str(out), "--state", str(state)]
    args += ["--show-pii"] if show_pii else []
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
    secrets = {k: v for k, v in PLANTED.items() if k in ("api key", "password")}
    assert _leaks(outputs, secrets if show_pii else PLANTED) == []
    assert outputs["report.csv"].startswith(b"# WARNING: unmasked PII") == show_pii


HOSTILE_URLS = {  # a password or query credential each, none of them allowed unencoded by RFC 3986
    "slash and at": "http://admin:Pl/anted@Pa:ss9@127.0.0.1:9",
    "percent-encoded": "http://admin:Pl%2FantedPct9@127.0.0.1:9",
    "query string": "http://127.0.0.1:9/?api_key=PlantedQuery9&password=PlantedQuery8",
    "non-ascii": "http://admin:Pläss/wörd9@127.0.0.1:9",
}
SECRET_PARTS = ("Pl/anted", "anted@Pa", "Pa:ss9", "ss9", "PlantedPct9", "Pl%2F", "PlantedQuery", "Pläss", "wörd9")
SERVER_CONNECTORS = ["qdrant", "chroma", "weaviate", "milvus", "pinecone", "pgvector"]


def _store_url(connector: str, url: str) -> str:
    return url.replace("http", "postgresql").replace(":9", ":9/db") if connector == "pgvector" else url


@pytest.mark.parametrize("connector", SERVER_CONNECTORS)
def test_no_connector_error_shows_a_hostile_url_password(connector: str) -> None:
    """Each server connector, given URLs whose passwords hold '/', '@', ':', '%2F', non-ASCII letters or whose
    query carries credentials, fails with a clear error that shows none of it (before the CLI's own scrubbing)."""
    from vdbguard.connectors import load_connector

    from vdbguard.errors import VdbguardError

    extra = {"api_key": "k"} if connector == "pinecone" else {}

    def describe(url: str) -> None:
        with load_connector(connector)(collection="t", url=_store_url(connector, url), **extra) as store:
            store.describe()

    for what, url in HOSTILE_URLS.items():
        with pytest.raises(VdbguardError) as raised:
            describe(url)
        shown = f"{raised.value.message} {raised.value.hint}"
        assert not [part for part in SECRET_PARTS if part in shown], (what, shown)
        assert "127.0.0.1" in shown or "PostgreSQL URL" in shown, (what, shown)


@pytest.mark.parametrize(
    ("connector", "what"),
    [("chroma", "slash and at"), ("pgvector", "slash and at"), ("qdrant", "query string"), ("chroma", "non-ascii")],
)
def test_a_failing_connection_never_shows_the_url_password(tmp_path: Path, connector: str, what: str) -> None:
    url = _store_url(connector, HOSTILE_URLS[what])
    args = ["-v", "scan", "--connector", connector, "--url", url, "--collection", "tickets", "--out", str(tmp_path)]
    result = subprocess.run(vdbguard_command(*args), env=cli_env(), capture_output=True, text=True)
    assert result.returncode == 2
    assert not [part for part in SECRET_PARTS if part in result.stdout + result.stderr], result.stderr
    assert "Traceback" not in result.stdout + result.stderr


TRANSFORM_KEY = KEY  # the key tests/evaluate rotates with: the attack retrained on that rotation is cached once
QDRANT_KEY = "planted-qdrant-key-a94f0c2e"


def test_protect_shows_no_planted_value_and_never_the_transform_key(planted_store: Path, tmp_path: Path) -> None:
    import shutil

    store = tmp_path / "store"
    shutil.copytree(planted_store, store)
    state = tmp_path / "protect.sqlite"
    args = ["-v", "protect", "--connector", "chroma", "--path", str(store), "--collection", "tickets"]
    args += ["--to-collection", "safe", "--transform", "rotation", "--strength", "1", "--state", str(state)]
    args += ["--fail-on", "never"]  # what the scans before and after print is checked, not what they find
    env = {**cli_env(), "VDBGUARD_TRANSFORM_KEY": TRANSFORM_KEY}
    result = subprocess.run(vdbguard_command(*args), env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    outputs = {p.name: p.read_bytes() for p in tmp_path.glob("protect.sqlite*") if p.is_file()}
    outputs |= {p.name: p.read_bytes() for p in tmp_path.glob("*.npz")}
    outputs["output"] = (result.stdout + result.stderr).encode()
    assert _leaks(outputs, {**PLANTED, "transform key": TRANSFORM_KEY}) == []


def test_an_api_key_from_the_environment_never_shows_in_output(tmp_path: Path) -> None:
    """The real qdrant-client against the REST double, with the key in $QDRANT_API_KEY: right, then wrong."""
    pytest.importorskip("qdrant_client")
    from qdrant_client import QdrantClient, models

    from tests.connectors.doubles.qdrant_rest import QdrantRestDouble

    double = QdrantRestDouble(api_key=QDRANT_KEY)
    url = double.start()
    try:
        client = QdrantClient(url=url, api_key=QDRANT_KEY, check_compatibility=False)
        client.create_collection("tickets", vectors_config=models.VectorParams(size=4, distance=models.Distance.DOT))
        client.upsert("tickets", [models.PointStruct(id=1, vector=[0.1, 0.2, 0.3, 0.4])])
        args = ["-v", "--log-format", "json", "audit", "--connector", "qdrant", "--url", url, "--collection", "tickets"]
        command = vdbguard_command(*args, "--fail-on", "never")
        for key, code in ((QDRANT_KEY, 0), ("wrong-" + QDRANT_KEY, 2)):
            env = {**cli_env(), "QDRANT_API_KEY": key}
            result = subprocess.run(command, env=env, capture_output=True, text=True)
            assert result.returncode == code, result.stdout[-1000:] + result.stderr[-1000:]
            assert QDRANT_KEY not in result.stdout + result.stderr
    finally:
        double.stop()


def test_subject_find_and_erase_show_the_person_only_when_asked(planted_store: Path, small_attacks, tmp_path: Path):
    import shutil

    store = tmp_path / "store"
    shutil.copytree(planted_store, store)
    args = ["-v", "subject", "erase", "--connector", "chroma", "--path", str(store), "--collection", "tickets"]
    args += ["--name", PLANTED["name"], "--email", PLANTED["email"], "--profile", "small"]
    args += ["--audit-log", str(tmp_path / "erasures.jsonl"), "--out", str(tmp_path / "found")]
    shown = subprocess.run(vdbguard_command(*args, "--show-pii"), env=cli_env(), capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert PLANTED["name"] in " ".join(shown.stdout.split()), "--show-pii shows the matched name"
    secrets = {k: v for k, v in PLANTED.items() if k in ("api key", "password", "phone")}
    assert _leaks({"output": (shown.stdout + shown.stderr).encode()}, secrets) == []
    erased = subprocess.run(vdbguard_command(*args, "--yes"), env=cli_env(), capture_output=True, text=True)
    assert erased.returncode == 0, erased.stderr[-2000:]
    outputs = {p.name: p.read_bytes() for p in [*tmp_path.iterdir(), *(tmp_path / "found").iterdir()] if p.is_file()}
    outputs["output"] = (erased.stdout + erased.stderr).encode()
    assert set(outputs) == {"erasures.jsonl", "subject.json", "output"}
    assert _leaks(outputs, PLANTED) == [] and b"Bjarni" not in b"".join(outputs.values())


def test_evaluate_defense_shows_no_planted_value_and_never_the_transform_key(small_attacks, tmp_path: Path) -> None:
    """Held-out data that names the planted person and holds the secrets: the measurement reports numbers only."""
    import json

    texts = [record.text or "" for record in store_records(16, seed=5)]
    planted = [
        (f"Please ask {PLANTED['name']} to email {PLANTED['email']} or call {PLANTED['phone']}.", PLANTED["name"]),
        (f"Deploy with the key {PLANTED['api key']}; the wifi password is {PLANTED['password']}.", None),
    ]
    rows = [{"text": text} for text in texts]
    rows += [{"text": text, "names": [name] if name else [], "pii": [PLANTED["email"]]} for text, name in planted]
    data = tmp_path / "heldout.jsonl"
    data.write_text("\n".join(json.dumps(row) for row in rows))
    out = tmp_path / "defense" / "defense.json"
    args = ["-v", "--log-format", "json", "evaluate-defense", "--data", str(data), "--transform", "rotation"]
    args += ["--strength", "1", "--attack", "bag-of-words", "--profile", "small", "--attack-limit", "4"]
    args += ["--out", str(out.parent)]
    env = {**cli_env(), "VDBGUARD_TRANSFORM_KEY": TRANSFORM_KEY}
    result = subprocess.run(vdbguard_command(*args), env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(out.read_text())["attacked_records"] >= 1  # it measured something
    outputs = {"defense.json": out.read_bytes(), "output": (result.stdout + result.stderr).encode()}
    assert _leaks(outputs, {**PLANTED, "transform key": TRANSFORM_KEY}) == []
