"""Collects every ``backend_*.py`` module's Backend subclasses and runs the contract once for each."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.connectors.contract.harness import Backend


def _backend_classes() -> list[type[Backend]]:
    package = Path(__file__).parent
    classes: list[type[Backend]] = []
    for module in sorted(pkgutil.iter_modules([str(package)]), key=lambda m: m.name):
        if module.name.startswith("backend_"):
            loaded = importlib.import_module(f"tests.connectors.contract.{module.name}")
            classes += [
                value
                for value in vars(loaded).values()
                if isinstance(value, type)
                and issubclass(value, Backend)
                and value is not Backend
                and value.__module__ == loaded.__name__
                and not getattr(value, "__abstractmethods__", None)
            ]
    return classes


BACKENDS = _backend_classes()


@pytest.fixture(scope="session", params=BACKENDS, ids=[b.id for b in BACKENDS])
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    instance = request.param(tmp_path_factory.mktemp(request.param.id))
    instance.start()
    try:
        yield instance
    finally:
        instance.stop()
