"""Payload bytes that are not UTF-8 (a PostgreSQL ``bytea`` column, the real server) and text with invalid
UTF-8 replaced by the store: the scan reads, attacks and reports them, and its outputs stay valid UTF-8."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from vdbguard.cli import main

TEXTS = ["Call Maria Garcia at 555-123-4567 about the claim", "The printer on floor two jams again"]
FORMATS = ("json", "md", "html", "sarif", "csv")


def test_non_utf8_payload_bytes_are_scanned_and_reports_stay_utf8(
    embedder, small_attacks, own_pgvector_server, tmp_path: Path
) -> None:
    import psycopg

    server = own_pgvector_server
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute("CREATE TABLE notes (id text PRIMARY KEY, embedding vector(384), text text, blob bytea)")
        for i, (text, vector) in enumerate(zip(TEXTS, embedder.encode(TEXTS), strict=True)):
            literal = "[" + ",".join(map(str, vector.tolist())) + "]"
            blob = b"\xff\xfe\x00 not utf-8 \xc3\x28" + bytes([0x80 + i])
            conn.execute("INSERT INTO notes VALUES (%s, %s::vector, %s, %s)", (f"n{i}", literal, text, blob))
    out = tmp_path / "out"
    args = ["scan", "--connector", "pgvector", "--url", server.url(), "--collection", "notes", "--profile", "small"]
    args += ["--out", str(out), "--format", ",".join(FORMATS), "--fail-on", "never"]
    result = CliRunner().invoke(main, [*args, "--state", str(tmp_path / "state.sqlite")])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["summary"]["records_scanned"] == 2 and report["record_problems"] == []
    assert "n0" in {f["record_id"] for f in report["findings"]}
    for written in out.iterdir():
        written.read_bytes().decode("utf-8")  # strict: every output stays valid UTF-8


def test_a_lone_surrogate_in_stored_text_is_read_not_fatal(embedder) -> None:
    """Half of an emoji that a JSON payload cut in two (``"\\ud83d"``) reaches Python as a lone surrogate, which
    spaCy and the embedder's tokenizer cannot encode: it stopped the whole scan. Both now read it as U+FFFD."""
    from vdbguard.detectors.presidio import PresidioDetector

    text = "Call Maria Garcia \ud83d about the claim"
    names = [d for d in PresidioDetector().detect_many([text])[0] if d.pii_type.value == "PERSON"]
    assert "Maria Garcia" in {text[d.start : d.end] for d in names}, "offsets still index the stored text"
    vectors = embedder.encode([text, text.replace("\ud83d", "\ufffd")])
    assert vectors.shape == (2, 384) and float(vectors[0] @ vectors[1]) > 0.999
