"""The terminal's one-line summaries of a scan: what it covered, and what the owner-side calibration reached."""

from __future__ import annotations

from vdbguard.reports.schema import Coverage
from vdbguard.reports.summary import coverage_line


def test_a_first_full_scan_says_only_what_it_attacked() -> None:
    coverage = Coverage(records_in_collection=120, records_attacked=120, records_carried_over=0, fast_tier_sample=1.0)
    assert coverage_line(coverage) == "attacked 120 new or changed records, carried 0 over"


def test_a_sampled_budgeted_rescan_names_the_sample_the_deep_tier_its_budget_and_what_it_closed() -> None:
    coverage = Coverage(
        records_in_collection=1000, records_attacked=40, records_carried_over=900, fast_tier_sample=0.5,
        deep_attacks=["slot-search"], deep_records=12, deep_flagged_by_fast=30, deep_flagged_covered=10,
        deep_budget_exhausted=True, findings_resolved=3, findings_suppressed=2,
    )  # fmt: skip
    assert coverage_line(coverage) == (
        "attacked 40 new or changed records, carried 900 over (sample 50% of new or changed); deep tier "
        "(slot-search) on 12 records, 10 of 30 flagged — budget used up; 3 findings resolved (records deleted); "
        "2 suppressed"
    )
