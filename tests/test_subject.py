"""`vdbguard subject find / erase` on a real embedded Chroma store of MiniLM vectors.

The person is found by their name in the text, their email in another payload field, "Last, First" order,
and, where the payload was redacted after embedding, by the vector alone; erasure deletes exactly those
records, only with --yes, and logs the request without spelling the person out.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from faker import Faker
from vdbguard.connectors import load_connector

from vdbguard.cli import main
from vdbguard.errors import VdbguardError
from vdbguard.records import VectorRecord
from vdbguard.subject import Subject, erase_subject, find_subject

NAME, EMAIL = "Maren Olsgaard", "maren.olsgaard@example.org"
ABOUT_HER = {
    "her-ticket": ("Ticket 4411: Maren Olsgaard asked to move her appointment to Friday.", {}),
    "her-email": ("Customer asked why the March invoice was charged twice.", {"contact_email": EMAIL}),
    "her-last-first": ("Olsgaard,  Maren: follow-up call booked for next week.", {}),
}
# stored text redacted after the vector was made from the original: only the vector still names her
REDACTED = (
    "her-redacted",
    "<PERSON> reported a billing error on her card.",
    "Maren Olsgaard reported a billing error on her card.",
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    fake = Faker("en_US")
    fake.seed_instance(7)
    texts = {f"other-{i}": f"{fake.name()} {fake.sentence(nb_words=8)}" for i in range(40)}
    texts |= {f"clean-{i}": fake.sentence(nb_words=10) for i in range(20)}
    texts["namesake-first"] = "Maren Berg asked to move her appointment to Monday."
    records = [
        VectorRecord(i, v, {"document": t})
        for (i, t), v in zip(texts.items(), embedder.encode(list(texts.values())), strict=True)
    ]
    about = [(i, t, p) for i, (t, p) in ABOUT_HER.items()]
    vectors = embedder.encode([t for _, t, _ in about] + [REDACTED[2]])
    records += [VectorRecord(i, v, {"document": t, **p}) for (i, t, p), v in zip(about, vectors, strict=False)]
    records.append(VectorRecord(REDACTED[0], vectors[-1], {"document": REDACTED[1]}))
    path = tmp_path_factory.mktemp("subject") / "store"
    with load_connector("chroma")(collection="notes", path=path, create=True) as connector:
        connector.ensure_collection(embedder.dimension, "cosine")
        connector.upsert(records)
    return path


def chroma_ids(path: Path, collection: str) -> list[str]:
    with load_connector("chroma")(collection=collection, path=path) as connector:
        return [record.id for batch in connector.iter_batches() for record in batch.records]


def _find(store: Path, embedder, **identifiers: str):
    with load_connector("chroma")(collection="notes", path=store) as connector:
        return find_subject(connector, Subject(**identifiers), embedder, "notes")


def test_find_lists_her_records_by_payload_and_the_redacted_one_by_its_vector(store: Path, embedder) -> None:
    found = _find(store, embedder, name=NAME, email=EMAIL)
    by_id = {record.id: record for record in found.records}
    assert set(by_id) == {*ABOUT_HER, REDACTED[0]}, [(r.id, r.evidence) for r in found.records]
    for record_id in ABOUT_HER:
        assert "payload" in by_id[record_id].methods
    redacted = by_id[REDACTED[0]]
    assert redacted.methods == ["membership"], redacted.evidence
    (evidence,) = redacted.evidence
    assert evidence.score >= evidence.threshold == found.membership_threshold > 0
    assert found.records_read == 65 and not found.skipped
    assert "Olsgaard" not in json.dumps(found.to_json()) and "maren.olsgaard" not in json.dumps(found.to_json())


def test_a_person_the_store_does_not_hold_gets_no_record(store: Path, embedder) -> None:
    found = _find(store, embedder, name="Tobias Lindqvist", email="t.lindqvist@example.net")
    assert found.records == [] and found.records_read == 65


def test_payload_matching_ignores_case_spacing_and_phone_punctuation(tmp_path: Path) -> None:
    path = tmp_path / "store"
    rows = {
        "a": {"document": "call from MAREN   olsgaard today"},
        "b": {"document": "no name here", "phones": ["+47 (22) 33-44-55"]},
        "c": {"document": "Maren Olsgaardsen is someone else"},
    }
    with load_connector("chroma")(collection="notes", path=path, create=True) as connector:
        connector.ensure_collection(3, "cosine")
        connector.upsert([VectorRecord(i, [1.0, float(n), 0.5], p) for n, (i, p) in enumerate(rows.items())])
    with load_connector("chroma")(collection="notes", path=path) as connector:
        found = find_subject(connector, Subject(name=NAME, phone="47 22 33 44 55"), None, "notes")
    assert {r.id: r.methods for r in found.records} == {"a": ["payload"], "b": ["payload"]}
    assert "no embedder" in found.notes[0]
    with pytest.raises(VdbguardError, match="--name, --email or --phone"):
        Subject(name="  ")


def test_erase_is_a_dry_run_without_yes_then_deletes_exactly_her_records_and_logs(
    store: Path, tmp_path: Path, model_cache: Path
) -> None:
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    before = set(chroma_ids(copy, "notes"))
    log = tmp_path / "audit" / "erasures.jsonl"
    base = ["subject", "erase", "--connector", "chroma", "--path", str(copy), "--collection", "notes"]
    base += ["--name", NAME, "--email", EMAIL, "--profile", "small", "--audit-log", str(log)]
    dry = CliRunner().invoke(main, base)
    assert dry.exit_code == 0, dry.output
    assert "dry run: 4 records would be deleted" in dry.output and "Olsgaard" not in dry.output
    assert set(chroma_ids(copy, "notes")) == before and not log.exists()

    done = CliRunner().invoke(main, [*base, "--yes", "--actor", "dpo@example.com"])
    assert done.exit_code == 0, done.output
    assert set(chroma_ids(copy, "notes")) == before - {*ABOUT_HER, REDACTED[0]}
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    lines = log.read_text().splitlines()
    erasing, erased = (json.loads(line) for line in lines)
    assert [erasing["event"], erased["event"]] == ["erasing", "erased"]
    assert sorted(erased["ids"]) == sorted([*ABOUT_HER, REDACTED[0]]) and erased["actor"] == "dpo@example.com"
    assert erased["evidence"][REDACTED[0]] == ["membership"]
    assert erased["subject_sha256"]["name"] == hashlib.sha256(NAME.lower().encode()).hexdigest()
    assert "Olsgaard" not in log.read_text() and "olsgaard@" not in log.read_text()

    again = CliRunner().invoke(main, [*base, "--yes"])
    assert again.exit_code == 0 and "deleted 0 records" in again.output
    assert log.read_text().splitlines()[:2] == lines and len(log.read_text().splitlines()) == 4


class _NoDelete:
    """A store client that cannot delete (a connector from a third-party plugin may not)."""

    def delete(self, ids: list[str]) -> None:
        raise NotImplementedError("this connector cannot delete records")


def test_a_store_that_cannot_delete_is_a_clear_error_and_the_log_says_it_failed(
    store: Path, embedder, tmp_path: Path
) -> None:
    found = _find(store, embedder, name=NAME)
    log = tmp_path / "erasures.jsonl"
    with pytest.raises(VdbguardError, match="cannot delete") as refused:
        erase_subject(_NoDelete(), found, Subject(name=NAME), log, "memory")  # type: ignore[arg-type]
    assert "store's own client" in (refused.value.hint or "")
    events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
    assert events == ["erasing", "failed"]


def test_cli_find_masks_unless_show_pii_and_writes_the_list(store: Path, tmp_path: Path) -> None:
    base = ["subject", "find", "--connector", "chroma", "--path", str(store), "--collection", "notes"]
    base += ["--name", NAME, "--attack", "none"]
    masked = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "found")])
    assert masked.exit_code == 0, masked.output
    assert "3 records relate to M**** O*******" in " ".join(masked.output.split()), masked.output
    assert "Olsgaard" not in masked.output
    written = json.loads((tmp_path / "found" / "subject.json").read_text())
    # no --email this time: the record that holds only her email is not hers to this search
    assert {r["id"] for r in written["records"]} == {*ABOUT_HER, REDACTED[0]} - {"her-email"}
    shown = CliRunner().invoke(main, [*base, "--show-pii"])
    assert shown.exit_code == 0 and "Olsgaard" in shown.output
    nobody = CliRunner().invoke(
        main, ["subject", "find", "--connector", "chroma", "--path", str(store), "--collection", "notes"]
    )
    assert nobody.exit_code == 2 and "--name, --email or --phone" in nobody.output
