"""The examples under examples/: run the runnable ones for real, check the structure of the others.

Airflow is not installed here: its DAG is compiled and read with ``ast``, never imported.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import yaml

from tests.helpers import chroma_job
from vdbguard.config import load_job

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEVERE = {"high", "critical"}  # at least fail_on = "high"

LINES = [
    "Jane Doe asked for a refund; reach her at jane.doe@example.com.",
    "Patient Robert Miller was prescribed metformin for type 2 diabetes.",
    "Call Mary Johnson at 555-201-9934 about the delivery.",
    "The staging cluster runs out of disk every Monday after the log rotation.",
]
NAME_PARTS = ["Jane", "Doe", "jane.doe", "Robert", "Miller", "Mary", "Johnson"]
CLEAN = LINES[3]


def load_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def offline_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T


# -- ingestion through guard() ---------------------------------------------------------------------


def stored_qdrant(path: Path, collection: str) -> tuple[list[str], np.ndarray]:
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(path))
    try:
        points, _ = client.scroll(collection, limit=100, with_vectors=True, with_payload=True)
    finally:
        client.close()
    return [p.payload["text"] for p in points], np.asarray([p.vector for p in points], dtype=np.float32)


def stored_chroma(path: Path, collection: str) -> tuple[list[str], np.ndarray]:
    import chromadb

    got = chromadb.PersistentClient(path=str(path)).get_collection(collection).get(include=["documents", "embeddings"])
    return list(got["documents"]), np.asarray(got["embeddings"], dtype=np.float32)


def test_ingest_guarded_redacts_and_protects_both_stores(tmp_path: Path, embedder) -> None:
    module = load_example("ingest_guarded")
    source = tmp_path / "notes.txt"
    source.write_text("\n".join(LINES[:2]) + "\n\n" + "\n".join(LINES[2:]) + "\n", encoding="utf-8")
    qdrant, chroma = tmp_path / "qdrant", tmp_path / "chroma"
    done = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "ingest_guarded.py"),
            "--qdrant-path",
            str(qdrant),
            "--chroma-path",
            str(chroma),
            "--input",
            str(source),
        ],
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "4 documents" in done.stdout and not any(part in done.stdout for part in NAME_PARTS)

    plain = embedder.encode(LINES)
    for name, (texts, vectors) in {
        "qdrant": stored_qdrant(qdrant, module.COLLECTION),
        "chroma": stored_chroma(chroma, module.COLLECTION),
    }.items():
        assert len(texts) == len(vectors) == len(LINES), name
        # the stores keep the redacted text only: no name, and the clean line as it was
        assert not [t for t in texts if any(part in t for part in NAME_PARTS)], (name, texts)
        assert CLEAN in texts and sum("<PERSON>" in t for t in texts) == 3, (name, texts)
        # no stored vector is the plain embedding of an input line ...
        assert cosine_rows(vectors, plain).max() < 0.995, name
        # ... nor of its own redacted text: the guard's noise was applied on top of redaction,
        # small enough that each record still sits next to its text
        own = np.diag(cosine_rows(vectors, embedder.encode(texts)))
        assert (own < 0.995).all() and (own > 0.9).all(), (name, own)


def test_ingest_guarded_is_idempotent_on_record_ids() -> None:
    module = load_example("ingest_guarded")
    first = module.record_ids("notes.txt", 3)
    assert first == module.record_ids("notes.txt", 3) and len(set(first)) == 3
    assert first != module.record_ids("other.txt", 3)


# -- LangChain ---------------------------------------------------------------------------------------


def test_langchain_pipeline_never_embeds_a_name(embedder, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("langchain_core")
    module = load_example("langchain_pipeline")
    inner = module.main(embedder)
    documents = inner.seen[: len(module.DOCUMENTS)]
    assert len(documents) == len(module.DOCUMENTS)
    assert not [t for t in documents if any(p in t for p in ("Jane", "Doe", "jane.doe", "Bob", "Smith"))], documents
    assert "<PERSON>" in documents[0] and "Microsoft" in documents[0] and "Acme Corporation" in documents[1]
    assert documents[2] == module.DOCUMENTS[2]  # a line without PII reaches the model unchanged
    assert inner.seen[-1] == module.QUERY  # queries are not redacted by default
    out = capsys.readouterr().out
    assert "refund" in out.split("Top hit")[1]  # search still finds the redacted document


# -- the job file --------------------------------------------------------------------------------------


def test_job_file_validates_and_scans_what_the_ingest_example_writes() -> None:
    config = load_job(EXAMPLES / "vdbguard.toml")
    ingest = load_example("ingest_guarded")
    (store,) = config.stores
    assert store.connector == "chroma" and store.url is None
    assert config.resolve(store.path) == EXAMPLES / "data" / "chroma"  # ingest_guarded.py's default
    assert store.collections == [ingest.COLLECTION]
    assert config.job.fail_on == "high" and config.job.state is not None
    assert {"json", "sarif"} <= set(config.output.formats)


# -- Kubernetes ----------------------------------------------------------------------------------------


def by_kind(path: Path) -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    kinds = {d["kind"]: d for d in docs}
    assert len(kinds) == len(docs), "one object per kind expected"
    return kinds


def test_kubernetes_cronjob(tmp_path: Path) -> None:
    objects = by_kind(EXAMPLES / "kubernetes" / "cronjob.yaml")
    (secret,) = by_kind(EXAMPLES / "kubernetes" / "secret.example.yaml").values()
    config_map, claim, cron = objects["ConfigMap"], objects["PersistentVolumeClaim"], objects["CronJob"]
    assert cron["apiVersion"] == "batch/v1" and secret["kind"] == "Secret"
    assert len(cron["spec"]["schedule"].split()) == 5 and cron["spec"]["concurrencyPolicy"] == "Forbid"

    job_spec = cron["spec"]["jobTemplate"]["spec"]
    pod = job_spec["template"]["spec"]
    (container,) = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert pod["restartPolicy"] == "Never"
    exit_rules = [r for r in job_spec["podFailurePolicy"]["rules"] if "onExitCodes" in r]
    assert any(1 in r["onExitCodes"]["values"] and r["action"] == "FailJob" for r in exit_rules)  # findings: no retry

    # the job file comes from the ConfigMap and is valid
    (config_volume,) = [v for v in volumes.values() if "configMap" in v]
    assert config_volume["configMap"]["name"] == config_map["metadata"]["name"]
    (file_name,) = config_map["data"]
    command = container.get("command", []) + container.get("args", [])
    assert command[:2] == ["vdbguard", "scan"]
    config_path = command[command.index("--config") + 1]
    assert config_path == f"{mounts[config_volume['name']]}/{file_name}"
    job_file = tmp_path / file_name
    job_file.write_text(config_map["data"][file_name], encoding="utf-8")
    config = load_job(job_file)

    # every credential the job file names comes from the Secret, through secretKeyRef
    env = {e["name"]: e for e in container["env"]}
    wanted = {variable for store in config.stores for variable in store.credentials.values()}
    assert wanted == {"QDRANT_API_KEY"}
    for variable in wanted:
        ref = env[variable]["valueFrom"]["secretKeyRef"]
        assert ref["name"] == secret["metadata"]["name"] and ref["key"] in secret["stringData"], variable
        assert "value" not in env[variable]
    assert not [e for e in env.values() if "value" in e and "KEY" in e["name"]]  # no literal secrets

    # the state file, the reports and the attack cache live on the PVC
    (data_volume,) = [v for v in volumes.values() if "persistentVolumeClaim" in v]
    assert data_volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    on_claim = Path(mounts[data_volume["name"]])
    assert on_claim in config.resolve(config.job.state).parents
    assert on_claim in config.resolve(config.output.dir).parents
    assert on_claim in Path(env["VDBGUARD_CACHE_DIR"]["value"]).parents

    # non-root, read-only root filesystem with a writable /tmp, bounded resources
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert "emptyDir" in volumes[next(n for n, p in mounts.items() if p == "/tmp")]
    assert {"cpu", "memory"} <= set(container["resources"]["requests"]) and "memory" in container["resources"]["limits"]


# -- GitHub Actions -----------------------------------------------------------------------------------


def test_github_workflow() -> None:
    path = EXAMPLES / "github-actions" / "vdbguard-scan.yml"
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["schedule"][0]["cron"] and "workflow_dispatch" in triggers
    assert workflow["permissions"]["security-events"] == "write"
    (job,) = workflow["jobs"].values()
    steps = job["steps"]

    (scan,) = [s for s in steps if "vdbguard scan" in s.get("run", "")]
    assert "--config" in scan["run"].split() and not scan.get("continue-on-error")  # exit 1 fails the job
    assert scan["env"]["QDRANT_API_KEY"] == "${{ secrets.QDRANT_API_KEY }}"
    after = steps[steps.index(scan) + 1 :]

    (sarif,) = [s for s in after if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert sarif["uses"].endswith("@v3") and "always()" in sarif["if"]
    # The SARIF goes up as vdbguard wrote it: the whole reports folder, nothing run on it in between.
    assert sarif["with"]["sarif_file"] == "${{ env.REPORTS }}" and "category" not in sarif["with"]
    assert not [s for s in steps[steps.index(scan) + 1 : steps.index(sarif)] if "run" in s]
    assert "jq" not in path.read_text(encoding="utf-8") and "reject" not in path.read_text(encoding="utf-8")
    (artifact,) = [s for s in after if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert "always()" in artifact["if"]
    assert "report.html" in artifact["with"]["path"] and "report.json" in artifact["with"]["path"]


# -- Airflow (compiled and read, never imported) --------------------------------------------------------


def test_airflow_dag_builds_the_scan_command() -> None:
    path = EXAMPLES / "airflow" / "vdbguard_dag.py"
    source = path.read_text(encoding="utf-8")
    compile(source, str(path), "exec")
    tree = ast.parse(source)
    constants = {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
    }

    def render(node: ast.expr) -> Any:
        """A module-level string or dict, with names and f-strings resolved as Python would."""
        if isinstance(node, ast.Name):
            return render(constants[node.id])
        if isinstance(node, ast.JoinedStr):
            return "".join(render(v.value) if isinstance(v, ast.FormattedValue) else v.value for v in node.values)
        if isinstance(node, ast.Dict):
            out: dict[str, Any] = {}
            for key, value in zip(node.keys, node.values, strict=True):
                out.update(render(value) if key is None else {ast.literal_eval(key): render(value)})
            return out
        return ast.literal_eval(node)

    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "BashOperator"]
    (call,) = calls
    kwargs = {k.arg: k.value for k in call.keywords}
    command = render(kwargs["bash_command"])
    binary, _, config = command.partition(" scan --config ")
    assert "vdbguard" in binary and "vdbguard_config" in config  # both from Airflow Variables, with defaults
    env = render(kwargs["env"])
    assert "{{ conn." in env["QDRANT_API_KEY"] and "VDBGUARD_CACHE_DIR" in env
    assert render(kwargs["append_env"]) is True

    (dag,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "DAG"]
    settings = {k.arg: k.value for k in dag.keywords}
    assert render(settings["schedule"]) == "@daily" and render(settings["max_active_runs"]) == 1


# -- cron ----------------------------------------------------------------------------------------------


def test_cron_wrapper_runs_the_job(tmp_path: Path, pii_store, model_cache: Path) -> None:
    store_path, collection, _truth = pii_store
    job_file = tmp_path / "job" / "vdbguard.toml"
    job_file.parent.mkdir()
    job = chroma_job(store_path, collection, state="state.sqlite", profile="small", fail_on="high")
    job_file.write_text(job, encoding="utf-8")
    logs = tmp_path / "logs"
    done = subprocess.run(
        ["bash", str(EXAMPLES / "cron" / "nightly-scan.sh")],
        env=offline_env(VDBGUARD_CONFIG=str(job_file), VDBGUARD_VENV=sys.prefix, VDBGUARD_LOG_DIR=str(logs)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    (log,) = logs.glob("scan-*.log")
    log_text = log.read_text(encoding="utf-8")
    assert done.returncode in (0, 1), log_text[-3000:] + done.stderr
    assert f"exit {done.returncode}" in log_text and done.stdout == ""

    report_dir = job_file.parent / "reports" / "demo" / collection
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    assert (report_dir / "report.sarif").is_file() and (job_file.parent / "state.sqlite").is_file()
    assert report["summary"]["records_scanned"] == 120
    severe = [f for f in report["findings"] if f["severity"] in SEVERE]
    assert done.returncode == (1 if severe else 0)
    assert (done.stderr != "") == (done.returncode != 0)  # cron mails one line, only on failure
