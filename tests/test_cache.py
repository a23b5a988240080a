"""Cache files are replaced whole: a writer that fails half-way leaves the previous file and no debris."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from vdbguard.cache import ScratchDir, _host_tag, atomic_write, write_json_atomic


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state.json"
    write_json_atomic(path, {"done": 3})
    with pytest.raises(RuntimeError), atomic_write(path, "w") as handle:
        handle.write('{"done": ')
        raise RuntimeError("killed half-way")
    assert path.read_text() == '{"done": 3}'
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.json"]


def test_cached_json_computes_once_and_recovers_from_a_broken_file(tmp_path: Path) -> None:
    from vdbguard.cache import cached_json

    calls: list[int] = []

    def compute() -> dict[str, int]:
        calls.append(1)
        return {"dimension": 384}

    path = tmp_path / "sub" / "identity.json"
    assert cached_json(path, compute) == {"dimension": 384}
    assert cached_json(path, compute) == {"dimension": 384} and len(calls) == 1
    path.write_text('{"dimen')  # a file cut short by another tool: computed again, never trusted
    assert cached_json(path, compute) == {"dimension": 384} and len(calls) == 2


def test_scratch_folders_of_gone_processes_are_deleted_and_no_others(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code = "import os; from vdbguard.cache import ScratchDir; kept = ScratchDir('x')"
    code += "; (kept.path / 'copy').write_text('user data'); print(kept.path, flush=True)"
    code += "; os._exit(0)"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    gone = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()
    unowned = tmp_path / "vdbguard-unowned"
    unowned.mkdir()
    assert Path(gone).exists()  # os._exit, like SIGKILL, runs no cleanup
    for child in Path(gone).iterdir():  # killed halfway through deleting its own folder: the name still owns it
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    elsewhere = tmp_path / Path(gone).name.replace(_host_tag(), "0" * 8)
    elsewhere.mkdir()
    live = ScratchDir("live")
    assert not Path(gone).exists()
    assert live.path.exists() and unowned.exists() and elsewhere.exists()
    ScratchDir("another")  # the live process's folder stays
    assert live.path.exists()
    live.drop()
    assert not live.path.exists()


STALE = "the first-run cache is stale: run pipelines/build_first_run_cache.py and commit vdbguard/data"


def test_a_first_run_computes_nothing_the_package_ships_and_what_ships_is_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new machine's first scan reads the corpus hashes, word lists and embedder identity that vdbguard ships
    instead of building corpora and loading the model before its first page; each shipped value is what computing
    it gives."""
    import importlib.util
    import json

    from vdbguard.attacks.training import PROFILES, training_digest
    from vdbguard.corpus.human import _read_human_lines
    from vdbguard.corpus.labelled import corpus_hash
    from vdbguard.data import first_run_cache
    from vdbguard.embedders import Embedder
    from vdbguard.embedders.loading import same_probe_embeddings

    script = Path(__file__).parents[1] / "pipelines" / "build_first_run_cache.py"
    spec = importlib.util.spec_from_file_location("build_first_run_cache", script)
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    monkeypatch.setenv("VDBGUARD_CACHE_DIR", str(tmp_path))
    shipped = first_run_cache()
    build.first_run()
    made = {p.relative_to(tmp_path).as_posix(): p for p in tmp_path.rglob("*.json")}
    portable = {name for name in made if not name.startswith(build.MACHINE_SPECIFIC)}
    assert portable <= set(shipped), (STALE, sorted(portable - set(shipped)))
    assert all(json.loads(made[name].read_text()) == shipped[name] for name in portable)

    assert training_digest("small") == corpus_hash(PROFILES["small"].corpus()), STALE
    assert shipped[next(name for name in shipped if name.startswith("corpus/human-lines-"))] == list(
        _read_human_lines()
    ), STALE
    embedder = Embedder()
    assert "model" not in vars(embedder) and embedder.dimension == 384, "known without loading the model"
    measured = embedder.measured_identity()
    assert same_probe_embeddings(embedder.probe_embeddings, measured["probes"]), STALE
