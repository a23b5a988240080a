"""Scan a collection: stream its vectors, attack them, report what leaks (``vdbguard scan``)."""

from vdbguard.scan.engine import Scanner, severity_of, summarise
from vdbguard.scan.run import resolve_embedder, scan_collection
from vdbguard.scan.state import ScanState

__all__ = ["ScanState", "Scanner", "resolve_embedder", "scan_collection", "severity_of", "summarise"]
