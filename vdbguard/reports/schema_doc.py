"""Regenerate docs/report-schema.json: ``python -m vdbguard.reports.schema_doc``."""

import json
from pathlib import Path

from vdbguard.reports.schema import Report

if __name__ == "__main__":
    target = Path(__file__).resolve().parents[2] / "docs" / "report-schema.json"
    target.write_text(json.dumps(Report.model_json_schema(), indent=2) + "\n")
    print(f"wrote {target}")
