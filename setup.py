"""Packages only; everything else is in pyproject.toml.

The store adapters live in the top-level ``connectors/`` folder but install as ``vdbguard.connectors``:
PyPI has an unrelated package named ``connectors``, and pyproject.toml cannot map a folder while
also finding packages.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["vdbguard", "vdbguard.*"]), "vdbguard.connectors"],
    package_dir={"vdbguard.connectors": "connectors"},
    package_data={
        "vdbguard.data": [
            "*.jsonl.gz",
            "*.LICENSE",
            "*.json",
            "*.safetensors",
            "trained-*/*.json",
            "trained-*/*/*",
            "ner-person/*",
            "person-tagger/*",
            "address-tagger/*",
        ],
        "vdbguard.reports": ["templates/*.j2"],
    },
)
