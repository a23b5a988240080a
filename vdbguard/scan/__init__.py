"""Scan a collection: stream its vectors, attack them, report what leaks (``vdbguard scan``)."""

from vdbguard.scan.engine import DeepTier, Scanner, ScanResult, severity_of
from vdbguard.scan.run import resolve_embedder, scan_collection
from vdbguard.scan.settings import ScanSettings, ScanTarget
from vdbguard.scan.state import ScanStore

__all__ = [
    "DeepTier",
    "ScanResult",
    "ScanSettings",
    "ScanStore",
    "ScanTarget",
    "Scanner",
    "resolve_embedder",
    "scan_collection",
    "severity_of",
]
