"""Presidio's layout: one recognizer class a module, every one of them in the default analyzer's registry, and the
built-ins they replace gone from it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from presidio_analyzer import EntityRecognizer

import vdbguard.detectors.recognizers as package
from vdbguard.detectors.presidio import PresidioDetector
from vdbguard.detectors.recognizers.registry import REPLACED

AD_HOC = {"IdentifierPatternRecognizer", "DenyListRecognizer"}  # built per request from a user's identifiers
BASES = {"DeclaredPatternRecognizer"}  # what a recognizer that is only settings subclasses
HELPERS = {"registry", "results"}  # modules that serve the recognizers and hold none


def _recognizer_classes() -> dict[str, list[type]]:
    found = {}
    for module in pkgutil.iter_modules(package.__path__):
        if module.name in HELPERS:
            continue
        loaded = importlib.import_module(f"{package.__name__}.{module.name}")
        found[module.name] = [
            cls
            for _, cls in inspect.getmembers(loaded, inspect.isclass)
            if issubclass(cls, EntityRecognizer) and cls.__module__ == loaded.__name__
        ]
    return found


def test_each_module_holds_one_recognizer_class() -> None:
    classes = _recognizer_classes()
    assert len(classes) >= 12
    assert {name: len(found) for name, found in classes.items() if len(found) != 1} == {}


def test_the_default_analyzer_holds_every_recognizer_and_none_it_replaces() -> None:
    registry = PresidioDetector().analyzer.registry
    held = {type(recognizer).__name__ for recognizer in registry.recognizers}
    ours = {cls.__name__ for found in _recognizer_classes().values() for cls in found}
    assert ours - AD_HOC - BASES <= held, sorted(ours - AD_HOC - BASES - held)
    names = [recognizer.name for recognizer in registry.recognizers]
    assert not set(REPLACED) & {type(r).__name__ for r in registry.recognizers}
    assert len(names) == len(set(names)), "two recognizers of one name: one would shadow the other's results"
