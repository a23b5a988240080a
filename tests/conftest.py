"""Fixtures shared by the test suite."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ChromaServer, chroma_executable


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (the README's test command) one math thread a worker, for the worker and the commands it
    runs: two workers on two cores, each with two threads, ran the torch-heavy tests several times slower."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[variable] = "1"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules marked ``slow(minutes=N)`` first, longest first: pytest-xdist hands modules out in this order, and a
    nine-minute module met last kept one worker busy for minutes after the other had finished."""

    def minutes(item: pytest.Item) -> float:
        marker = item.get_closest_marker("slow")
        return float(marker.kwargs.get("minutes", 1)) if marker else 0.0

    items.sort(key=minutes, reverse=True)  # stable: a module's tests stay together and in order


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``chroma run`` server on a free local port; yields its base URL ``http://127.0.0.1:PORT``."""
    executable = chroma_executable()
    if executable is None:
        pytest.skip("the `chroma` executable is not installed (pip install 'vdbguard[chroma]')")
    server = ChromaServer(executable, tmp_path_factory.mktemp("chroma-server"))
    try:
        server.start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield server.url
    finally:
        server.stop()


def _started_pgvector_server(workdir: Path) -> Iterator[Any]:
    """A real PostgreSQL with pgvector (scripts/pgvector-server.sh), stopped afterwards; skips where none starts."""
    from tests.connectors.contract.backend_pgvector import PgvectorServer

    server = PgvectorServer(workdir)
    try:
        server.start()
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"no PostgreSQL server with pgvector here: {str(exc)[:200]}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pgvector_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real PostgreSQL with pgvector, shared by the tests that read it directly."""
    yield from _started_pgvector_server(tmp_path_factory.mktemp("pg"))


@pytest.fixture
def own_pgvector_server(tmp_path: Path) -> Iterator[Any]:
    """A real PostgreSQL with pgvector for one test alone: one it may reconfigure, stop and start again."""
    yield from _started_pgvector_server(tmp_path / "pg")


@pytest.fixture(scope="session")
def model_cache() -> Iterator[Path]:
    """One attack-model cache, also seen by CLI runs through VDBGUARD_CACHE_DIR.

    It lives in the checkout (git-ignored) so repeated local runs reuse trained models; entries are
    keyed by embedder fingerprint, corpus hash and attack version, so a stale model is never loaded.
    """
    cache = Path(__file__).resolve().parent.parent / ".test-cache"
    cache.mkdir(exist_ok=True)
    previous = os.environ.get("VDBGUARD_CACHE_DIR")
    os.environ["VDBGUARD_CACHE_DIR"] = str(cache)
    yield cache
    if previous is None:
        os.environ.pop("VDBGUARD_CACHE_DIR", None)
    else:
        os.environ["VDBGUARD_CACHE_DIR"] = previous


@pytest.fixture(scope="session")
def embedder():
    from vdbguard.embedders import Embedder

    return Embedder()


@pytest.fixture(scope="session")
def small_attacks(embedder, model_cache: Path):
    """Both default attacks trained on the small profile with the real MiniLM embedder (cached)."""
    from vdbguard.attacks import DEFAULT_ATTACKS
    from vdbguard.attacks.training import trained_attacks

    return trained_attacks(embedder, DEFAULT_ATTACKS, profile="small", cache_dir=model_cache)


@pytest.fixture(scope="session")
def pii_store(tmp_path_factory: pytest.TempPathFactory, embedder) -> tuple[Path, str, dict[str, bool]]:
    """An embedded Chroma store of 120 held-out notes, half with PII; returns (path, collection, truth)."""
    from vdbguard.demo import build_demo_store

    path = tmp_path_factory.mktemp("pii-store") / "store"
    truth = build_demo_store(path, 120, embedder)
    return path, "demo_notes", truth


@pytest.fixture(scope="session")
def local_embedder(tmp_path_factory: pytest.TempPathFactory, embedder):
    """A model no scan is told about: a local folder of MiniLM plus a random 384 -> 128 projection."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Dense

    torch.manual_seed(0)
    modules = [*embedder.model, Dense(384, 128, activation_function=torch.nn.Identity())]
    folder = tmp_path_factory.mktemp("own-model") / "team-finetune"
    SentenceTransformer(modules=modules, device="cpu").save(str(folder))
    from vdbguard.embedders import Embedder

    return Embedder(str(folder))
