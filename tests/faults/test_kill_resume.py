"""SIGKILL mid-work, then resume: the scan covers every record of the collection once and reports what a clean
scan reports, the store is untouched, and an interrupted `protect` ends with the copy a clean run makes; in place,
each transform that is not idempotent ends applied exactly once to every record, also run again without a state.

Two kills a command here, each at a random point of the records done; BENCHMARKS.md ("Kill and resume")
has the 20-kill runs over 20,000 records at random times.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from tests.faults.kill_resume import (
    IN_PLACE,
    build_store,
    build_vector_store,
    cli_env,
    in_place_outcome,
    protect_outcome,
    scan_command,
    scan_outcome,
    scratch_left,
    state_ids,
)

pytestmark = pytest.mark.slow(minutes=8)

RECORDS = 400
KILLS = 2
IN_PLACE_RECORDS = 160  # 8 batches of 20
IN_PLACE_KILLS = 2


@pytest.fixture(scope="module")
def fault_store(tmp_path_factory: pytest.TempPathFactory, model_cache) -> tuple[Path, list[str]]:
    path = tmp_path_factory.mktemp("faults") / "store"
    return path, build_store(path, RECORDS)


def test_a_killed_scan_resumes_to_exactly_what_a_clean_scan_reports(fault_store, small_attacks, tmp_path: Path) -> None:
    store, ids = fault_store
    outcome = scan_outcome(tmp_path, store, ids, KILLS, seed=1, by_progress=True)
    assert outcome.problems == [], outcome
    assert outcome.kills_mid_work >= 1, outcome


def test_a_killed_protect_resumes_to_exactly_a_clean_copy(fault_store, tmp_path: Path) -> None:
    store, ids = fault_store
    outcome = protect_outcome(tmp_path, store, ids, KILLS, seed=2, by_progress=True)
    assert outcome.problems == [], outcome
    assert outcome.kills_mid_work >= 1, outcome


@pytest.fixture(scope="module")
def vector_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """Random unit vectors, no model: in place, protect changes the vectors only. Each test copies it."""
    path = tmp_path_factory.mktemp("in-place") / "template"
    return path, build_vector_store(path, IN_PLACE_RECORDS)


@pytest.mark.parametrize("transform", sorted(IN_PLACE))
def test_a_killed_in_place_protect_applies_its_transform_once_to_each_record_and_a_rerun_nothing(
    vector_store, transform: str, tmp_path: Path
) -> None:
    """Noise, a keyed rotation and DCPE each stack when applied twice: killed mid-batch (also between a batch's
    write and its saved state) and resumed, then run with the finished state and without a state, every stored
    vector is its original through the transform exactly once: noise moved by one draw's distance, the rotation
    to float32 rounding, DCPE within its noise ball around the keyed scale and shuffle."""
    template, originals = vector_store
    outcome = in_place_outcome(tmp_path, template, originals, transform, IN_PLACE_KILLS, seed=4)
    assert outcome.problems == [], outcome
    assert outcome.kills_mid_work >= 1, outcome


def test_a_killed_scan_of_a_chroma_server_resumes_exactly(chroma_server, small_attacks, tmp_path: Path) -> None:
    ids = build_store(chroma_server, RECORDS, seed=3, collection="faults")
    outcome = scan_outcome(tmp_path, chroma_server, ids, KILLS, seed=3, by_progress=True, collection="faults")
    assert outcome.problems == [], outcome
    assert outcome.kills_mid_work >= 1, outcome


def test_a_terminated_scan_deletes_its_private_copy_and_resumes(fault_store, small_attacks, tmp_path: Path) -> None:
    # SIGTERM is how cron timeouts, CI cancels and Kubernetes stop a job: the copy of the store must not stay behind
    store, ids = fault_store
    state, log = tmp_path / "scan.sqlite", tmp_path / "scan.log"
    command = scan_command(store, tmp_path / "out", state, batch_size=16)
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=cli_env(tmp_path))
    while process.poll() is None and not (state_ids(state) and scratch_left(tmp_path)):
        time.sleep(0.05)
    assert process.poll() is None, "the scan ended before it could be stopped mid-work"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 128 + signal.SIGTERM, log.read_text()[-2000:]
    assert scratch_left(tmp_path) == []
    assert 0 < len(state_ids(state)) < len(ids)
    with log.open("ab") as out:
        subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=cli_env(tmp_path), check=False)
    assert sorted(state_ids(state)) == sorted(ids)
