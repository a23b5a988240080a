"""Every command's settings, declared once: the scan job file (``vdbguard.toml``: what a scheduled job scans, how hard,
and what it reports) and the models of the other commands. A field's type, bounds, default and help are its flag's
too; a ``Flag`` beside it says how it reads on the command line.

Validated by pydantic so that a typo fails before a nightly run starts, with the field's location.
Credentials never live in the file: a store names the environment variables that hold them.
``docs/job-schema.json`` is generated from these models (``python -m vdbguard.config``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib
import inspect
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from vdbguard.credentials import (
    SECRET_NAME,
    credential_query_parameters,
    remember_secret,
    remember_settings,
    scrub,
    split_userinfo,
)
from vdbguard.embedders.loading import DEFAULT_EMBEDDER
from vdbguard.errors import VdbguardError
from vdbguard.identifiers import DetectorSettings, IdentifierTables, check_language
from vdbguard.pii import AnyPiiType, PiiType, pii_type_of
from vdbguard.reports.schema import Severity

if TYPE_CHECKING:
    from vdbguard.connectors.base import Connector

DEEP_RECORD_SECONDS = 1.8  # CPU-seconds a record, for deep attacks that take a budget: >= 0.5 records per CPU-second


@dataclass(frozen=True)
class Flag:
    """How a setting reads on the command line, beside the field that declares its type, bounds, default and help:
    ``name`` when the flag is not ``--field-name``; ``advanced`` to list it under "Advanced options"; ``help`` where
    the command line's wording differs from a file's; ``path`` "file" or "dir" for a path that must be one, and
    ``exists``; ``off`` the flag that turns a setting on by default off; ``help_from`` a "module:function" whose
    text ends the help, read only when ``--help`` shows it."""

    name: str | None = None
    advanced: bool = False
    help: str | None = None
    path: Literal["file", "dir"] | None = None
    exists: bool = False
    metavar: str | None = None
    off: str | None = None
    help_from: str | None = None


@dataclass(frozen=True)
class Declared:
    """The default that ``owner`` ("module:function" or "module:Class") declares for its parameter ``name``, read
    when needed (a field's ``default_factory``, a flag's default): importing every owner whenever the CLI loads cost
    each command 60-90 ms."""

    owner: str
    name: str

    def __call__(self) -> Any:
        module, _, attribute = self.owner.partition(":")
        return inspect.signature(getattr(importlib.import_module(module), attribute)).parameters[self.name].default


def job_default(section: type[BaseModel], name: str) -> Any:
    """A job file's default for one setting. The job file's models are the one place a scan's defaults are declared:
    `scan`'s flags, ``ScanSettings`` and owner-side calibration read theirs here."""
    return section.model_fields[name].get_default(call_default_factory=True)


GLOB_CHARACTERS = "*?["


def is_pattern(name: str) -> bool:
    """Whether a collection as a job or ``--collection`` names it is a shell-style glob."""
    return any(character in name for character in GLOB_CHARACTERS)


_ENVIRONMENT_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


class _Strict(BaseModel):
    """Unknown settings are errors; an error never quotes what was written, which may be a secret."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)


def _secret_kind(value: str) -> str | None:
    """What detect-secrets takes ``value`` for when a file quotes it, if a credential. Its keyword plugin is left
    out: it flags whatever ``api_key = "..."`` holds, a variable's name too."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.keyword import KeywordDetector

    for kind, plugin in sorted(get_mapping_from_secret_type_to_class().items()):
        if plugin is not KeywordDetector and plugin().analyze_line(filename="vdbguard.toml", line=f'"{value}"'):
            return kind
    return None


def _environment_name(variable: str) -> str:
    """A credential is named here, never written: a secret is refused whatever its shape (an AWS key id looks like
    a variable's name), by its setting alone, and remembered so that no later message can show it."""
    kind = _secret_kind(variable)
    if kind is None and _ENVIRONMENT_NAME.match(variable):
        return variable
    remember_secret(variable)
    if kind is not None:
        raise ValueError(
            f"this is a secret ({kind}), not the name of an environment variable: remove it from this file, rotate "
            "it, and name the variable that holds it instead (like QDRANT_API_KEY)"
        )
    raise ValueError(
        "must name an environment variable (like QDRANT_API_KEY, in capitals, digits and _), not hold the secret "
        "itself: remove the value from this file and rotate it if it was shared"
    )


EnvironmentName = Annotated[str, AfterValidator(_environment_name)]
StoredText = Literal["redact", "keep", "drop"]  # what `protect` stores beside the vectors it rewrites
FailOn = Literal["low", "medium", "high", "critical", "never"]
Profile = Literal["default", "small"]
_PROFILE = "Attack models to train or load: small is faster and weaker (for a first look, or tests)."
FAIL_ON: FailOn = "high"  # every command's: a CI gate fails on what matters


class JobSettings(_Strict):
    """How every collection of the job is scanned."""

    name: str = Field(default="vdbguard", description="Job name: in reports, metrics and the state file.")
    state: Annotated[
        Path | None,
        Flag(
            path="file",
            help="SQLite state file: a re-scan attacks only new or changed records and resolves deleted ones; an "
            "interrupted scan resumes.",
        ),
    ] = Field(
        default=None,
        description="SQLite state file (relative to this file). Re-runs attack only new or changed records, "
        "carry the rest over and resolve findings of deleted records; a killed run resumes. Default: none.",
    )
    embedder: Annotated[str, Flag()] = Field(
        default=DEFAULT_EMBEDDER,
        description="Model that made the vectors (a packaged name or local path); 'auto' to identify it from the "
        "vectors; 'store' for a model that cannot run here (an API model): the scan learns the store's space from "
        "records that keep their text (owner-side calibration) and maps the packaged attacks into it.",
    )
    profile: Profile = Field(default="default", description=_PROFILE)
    verdict: Literal["fused", "any"] = Field(
        default="fused",
        description="fused: one stacked model over every attack decides each PII type, its cutoffs set for the "
        "target false-positive rate on held-out real text (or on the store's own records, with owner-side "
        "calibration). any: a record is flagged when any attack passes its own threshold (more recall, many more "
        "false positives on real text).",
    )
    target_fpr: float = Field(
        default=0.02, ge=0.0, le=1.0, description="Share of records without PII that the fused verdict may flag."
    )
    owner_calibration: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Fit the probes and every attack's thresholds on the store's own records that keep their text "
        "(labelled by the PII detector), then judge every record by its vector alone. auto: when at least 300 "
        "records keep text. The report states the held-out recall and false-positive rate it reached.",
    )
    calibration_sample: int = Field(
        default=3000, ge=50, description="Records with text to label for owner-side calibration."
    )
    save_calibration: Annotated[Path | None, Flag(advanced=True, path="dir")] = Field(
        default=None,
        description="Keep the fitted owner-side calibration in this folder, to reuse on collections made with the "
        "same embedder (a job of one collection; with a state, each collection keeps its own there).",
    )
    load_calibration: Annotated[Path | None, Flag(advanced=True, path="dir", exists=True)] = Field(
        default=None,
        description="Reuse a saved calibration instead of fitting one, for a store that keeps no text (a job of "
        "one collection).",
    )
    batch_size: int = Field(default=256, ge=1, le=10_000, description="Records read at a time.")
    executor: Literal["in-process", "ray"] = Field(
        default="in-process",
        description="'ray': the fast tier's attacks on a Ray cluster, with the same report and state "
        "(pip install 'vdbguard[ray]'; this process reads, keeps the state and runs the deep tier).",
    )
    ray_address: Annotated[
        str | None,
        Flag(
            name="--address",
            advanced=True,
            metavar="ADDR",
            help="With --executor ray: a running cluster's address (ray start --head prints it); default a local "
            "cluster of --workers CPUs.",
        ),
    ] = Field(default=None, description="A running Ray cluster's address; default a local cluster of `workers` CPUs.")
    workers: int = Field(default=2, ge=1, description="With executor 'ray': attack actors, one CPU each.")
    findings: Annotated[list[Literal["vector", "stored_text"]], Flag()] = Field(
        default_factory=lambda: ["vector", "stored_text"],
        min_length=1,
        description="Kinds of finding to report: vector (what the vectors leak to an attacker) and stored_text (PII "
        "or secrets the records keep in plain text beside them).",
    )
    fail_on: Annotated[FailOn, Flag(help="Exit 1 when a finding is at least this severe ('never': always exit 0).")] = (
        Field(default=FAIL_ON, description="Exit 1 when any finding is at least this severe.")
    )


class StoreSettings(_Strict):
    """One vector store and the collections of it to scan."""

    name: str | None = Field(default=None, description="Label for reports (default: the connector name).")
    connector: str = Field(description="Store type; see `vdbguard connectors list`.")
    path: Path | None = Field(default=None, description="Directory of an embedded store (relative to this file).")
    url: str | None = Field(default=None, description="URL of a store server (no credentials in it).")
    collections: list[str] = Field(min_length=1)  # names, or globs ("*", "tickets_*"): see vdbguard.scan.job
    credentials: dict[str, EnvironmentName] = Field(
        default_factory=dict,
        description="Connector setting -> NAME of the environment variable holding it, e.g. api_key = "
        '"QDRANT_API_KEY". The value itself never goes in this file.',
    )
    options: dict[str, Any] = Field(default_factory=dict, description="Other connector settings.")

    @model_validator(mode="after")
    def _one_location(self) -> StoreSettings:
        if (self.path is None) == (self.url is None):
            raise ValueError("give exactly one of path (embedded store) or url (server)")
        return self

    @field_validator("connector")
    @classmethod
    def _known_connector(cls, connector: str) -> str:
        """A misspelt connector fails when the file is read, not when the job reaches its store."""
        from vdbguard import plugins

        known = plugins.names("connectors")
        if connector not in known:
            raise ValueError(f"unknown connector {connector!r}; {plugins.did_you_mean(connector, known)}one of {known}")
        return connector

    @field_validator("url")
    @classmethod
    def _no_credentials_in_url(cls, url: str | None) -> str | None:
        if url is None:
            return url
        if split_userinfo(url).userinfo is not None:
            raise ValueError("the url holds credentials: name their environment variable under credentials instead")
        if names := credential_query_parameters(url):
            raise ValueError(
                f"the url's query holds credentials ({', '.join(names)}): name their environment variable under "
                "credentials instead"
            )
        return url

    @field_validator("options")
    @classmethod
    def _no_secrets(cls, options: dict[str, Any]) -> dict[str, Any]:
        for key, value in options.items():
            names = value if isinstance(value, dict) else {}
            inner = [f"{key}.{name}" for name in names if SECRET_NAME.search(str(name))]
            if SECRET_NAME.search(key) or inner:
                raise ValueError(
                    f"option {(inner or [key])[0]!r} looks like a credential: put it in an environment variable and "
                    f'name that under [stores.credentials] ({key} = "MY_ENV_VAR")'
                )
        return options

    @classmethod
    def from_flags(
        cls, connector: str, path: Path | None, url: str | None, options: dict[str, Any], collections: list[str]
    ) -> StoreSettings:
        """The store `scan`'s flags name. Built without a job file's checks on
        purpose: a command line may carry credentials (a URL's password, ``--option api_key=...``), which the CLI
        has already remembered to mask and which reach no file; the CLI checks path against url itself."""
        return cls.model_construct(connector=connector, path=path, url=url, options=options, collections=collections)

    @property
    def label(self) -> str:
        return self.name or self.connector

    def store_settings(self, base_dir: Path) -> dict[str, Any]:
        """The connector's keyword arguments but ``collection`` (what listing the store takes), credentials read
        from the environment now."""
        settings: dict[str, Any] = dict(self.options)
        settings.update({"path": base_dir / self.path} if self.path is not None else {"url": self.url})
        for setting, variable in self.credentials.items():
            value = os.environ.get(variable)
            if not value:
                raise VdbguardError(
                    f"store {self.label!r}: environment variable {variable} (for {setting}) is not set",
                    f"export {variable}=... before the scan, e.g. from your secret store",
                )
            settings[setting] = value
        remember_settings(settings)
        return settings

    def connector_settings(self, collection: str, base_dir: Path) -> dict[str, Any]:
        """The connector's keyword arguments for one collection, credentials read from the environment now."""
        return {"collection": collection, **self.store_settings(base_dir)}

    def open(self, collection: str, base_dir: Path = Path(".")) -> Connector:
        """The connector for one collection of the store (``with`` it to close it)."""
        from vdbguard.connectors import load_connector

        connector_cls, settings = load_connector(self.connector), self.connector_settings(collection, base_dir)
        with self._settings_checked():
            return connector_cls(**settings)

    def list_collections(self, base_dir: Path = Path(".")) -> list[str]:
        from vdbguard.connectors import load_connector

        connector_cls, settings = load_connector(self.connector), self.store_settings(base_dir)
        with self._settings_checked():
            return connector_cls.list_collections(**settings)

    @contextlib.contextmanager
    def _settings_checked(self) -> Iterator[None]:
        """A connector that refuses its keyword arguments is a settings problem, named without the credentials."""
        try:
            yield
        except TypeError as exc:
            secrets = [os.environ.get(variable) for variable in self.credentials.values()]
            raise VdbguardError(
                f"store {self.label!r}: the {self.connector} connector rejected its settings: "
                f"{scrub(str(exc), secrets)}",
                "check the connector's settings (--option pairs, or [stores.options] in a job file)",
            ) from exc


class AttackSettings(_Strict):
    """The fast tier runs on every record (or a sample); the deep tier on what it flags plus a sample."""

    fast: Annotated[
        list[str], Flag(name="--attack", help="Attack to run (repeatable; see `vdbguard attacks list`).")
    ] = Field(default_factory=lambda: ["pii-probe", "bag-of-words"], description="See `vdbguard attacks list`.")
    sample: float = Field(
        default=1.0,
        gt=0.0,
        le=1.0,
        description="Share (0-1) of new or changed records the fast tier attacks (the report states the coverage).",
    )
    deep: Annotated[
        list[str], Flag(name="--deep-attack", advanced=True, help="Slower attack for the deep tier (repeatable).")
    ] = Field(
        default_factory=list,
        description="Slower attacks, e.g. slot-search, or strongest (the best measured inverter for the embedder).",
    )
    deep_sample: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Share of records the fast tier did not flag that the deep tier also attacks.",
    )
    deep_max_records: int | None = Field(default=None, ge=1, description="Deep-tier budget: records per run.")
    deep_max_seconds: float | None = Field(default=None, gt=0, description="Deep-tier budget: seconds per run.")
    deep_record_seconds: float = Field(
        default=DEEP_RECORD_SECONDS,
        ge=0,
        description="CPU-seconds a budgeted deep attack (adversarial-decoding) may spend per record; 0 = its own.",
    )

    @field_validator("fast", "deep")
    @classmethod
    def _known_attacks(cls, names: list[str], info: ValidationInfo) -> list[str]:
        """Every attack name the scan will load, checked where it is written (``attacks.deep``, its line)."""
        from vdbguard import plugins

        known = {*plugins.names("attacks"), "strongest"}
        for name in names:
            if name not in known:
                hint = plugins.did_you_mean(name, known)
                raise ValueError(f"unknown {info.field_name} attack {name!r}; {hint}one of {sorted(known)}")
        if info.field_name == "fast" and not names:
            raise ValueError("the fast tier needs at least one attack")
        return names


class AllowList(_Strict):
    """Values that are not a leak: public names, test accounts. A finding left with no evidence is dropped."""

    values: list[str] = Field(default_factory=list, description="Recovered values to ignore (case-insensitive).")
    patterns: list[str] = Field(default_factory=list, description="Regular expressions for recovered values.")
    records: list[str] = Field(default_factory=list, description="Record-id globs never reported (test data).")

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"pattern {pattern!r} is not a regular expression: {exc}") from exc
        return patterns

    @cached_property
    def _compiled(self) -> list[re.Pattern[str]]:
        return [re.compile(p, re.IGNORECASE) for p in self.patterns]

    def allows_value(self, value: str) -> bool:
        lowered = value.strip().lower()
        return any(lowered == v.strip().lower() for v in self.values) or any(p.search(value) for p in self._compiled)

    def allows_record(self, record_id: str) -> bool:
        return any(fnmatch.fnmatchcase(record_id, glob) for glob in self.records)


class Suppression(_Strict):
    """An accepted finding: who accepted it, why, and until when."""

    record_id: str = Field(description="Record id (a glob: * and ? match).")
    collection: str | None = Field(default=None, description="Only in this collection (default: any).")
    pii_type: str | None = Field(
        default=None, description="Only this type, built-in or an identifier's CUSTOM:NAME (default: every type)."
    )
    reason: str = Field(min_length=1)
    owner: str = Field(min_length=1, description="Who accepted the risk.")
    expires: date = Field(description="After this day the finding is reported again.")

    @field_validator("pii_type")
    @classmethod
    def _known_type(cls, pii_type: str | None) -> AnyPiiType | None:
        """A PiiType, or a user's CustomType: either reads as the string reports write (``.value``)."""
        if pii_type is None:
            return None
        try:
            return pii_type_of(pii_type.strip().upper())
        except ValueError:
            raise ValueError(
                f"unknown PII type {pii_type!r}; one of {', '.join(PiiType)} or CUSTOM:NAME (an identifier's)"
            ) from None

    def matches(self, collection: str, record_id: str, pii_type: str) -> bool:
        return (
            fnmatch.fnmatchcase(record_id, self.record_id)
            and self.collection in (None, collection)
            and (self.pii_type is None or self.pii_type == pii_type)
        )


class SeverityPolicy(_Strict):
    by_type: dict[PiiType, Severity] = Field(
        default_factory=dict, description='Base severity per PII type, e.g. person = "high" for HR data.'
    )

    @field_validator("by_type", mode="before")
    @classmethod
    def _upper_types(cls, by_type: Any) -> Any:
        return {str(k).upper(): v for k, v in by_type.items()} if isinstance(by_type, dict) else by_type


class OutputSettings(_Strict):
    dir: Path = Field(default=Path("vdbguard-reports"), description="One folder per store and collection inside.")
    formats: list[str] = Field(
        default_factory=lambda: ["json", "md"], min_length=1, description="json, md, html, sarif, csv."
    )
    show_pii: Annotated[bool, Flag(help="Do not mask recovered values (handle reports as PII!).")] = Field(
        default=False, description="Unmasked recovered values (every format warns)."
    )
    metrics_file: Annotated[
        Path | None,
        Flag(
            path="file",
            help="Write the counts as a Prometheus textfile (node exporter's textfile collector: name it *.prom), "
            "replaced atomically after every scan; a failed scan sets vdbguard_scan_success 0 and keeps the last "
            "success.",
        ),
    ] = Field(default=None, description="Prometheus textfile, e.g. for node exporter.")
    webhook_env: str | None = Field(
        default=None, description="Environment variable holding a URL to POST the counts to (it may hold credentials)."
    )

    @field_validator("formats")
    @classmethod
    def _known_formats(cls, formats: list[str]) -> list[str]:
        from vdbguard import plugins

        known = plugins.loaded("reports")  # loaded, not only registered: a broken writer fails here, not after a scan
        for name in formats:
            if name not in known:
                hint = plugins.did_you_mean(name, known)
                raise ValueError(f"unknown or broken format {name!r}; {hint}installed: {sorted(known)}")
        return formats


class JobConfig(_Strict, IdentifierTables):
    """A scan job: ``vdbguard scan --config vdbguard.toml``. ``[detector]``, ``[[identifiers]]`` and
    ``[[allow_lists]]`` (``vdbguard.identifiers``) come first: the user's own types and the detector's language."""

    job: JobSettings = Field(default_factory=JobSettings)
    stores: list[StoreSettings] = Field(min_length=1)
    attacks: AttackSettings = Field(default_factory=AttackSettings)
    allow: AllowList = Field(default_factory=AllowList)
    suppressions: list[Suppression] = Field(default_factory=list)
    severity: SeverityPolicy = Field(default_factory=SeverityPolicy)
    output: OutputSettings = Field(default_factory=OutputSettings)
    base_dir: Path = Field(default=Path("."), exclude=True, description="Folder relative paths start from.")

    @model_validator(mode="after")
    def _calibration_of_one(self) -> JobConfig:
        """A calibration saved to or loaded from one folder fits one collection: with several, each would overwrite
        or misread another's."""
        named = [c for store in self.stores for c in store.collections]
        for setting in ("save_calibration", "load_calibration"):
            if getattr(self.job, setting) is not None and (len(named) != 1 or is_pattern(named[0])):
                flag = "--" + setting.replace("_", "-")
                raise ValueError(
                    f"{setting} ({flag}) is for a job of one collection; with a state, each collection of several "
                    "keeps its own calibration"
                )
        return self

    def resolve(self, path: Path | None) -> Path | None:
        return None if path is None else self.base_dir / path

    def active_suppressions(self, today: date) -> list[Suppression]:
        return [s for s in self.suppressions if s.expires >= today]

    def expired_suppressions(self, today: date) -> list[Suppression]:
        return [s for s in self.suppressions if s.expires < today]

    def unset_credentials(self) -> list[str]:
        """``store: VARIABLE`` for each credential whose variable this environment does not set: the scan needs
        them, and a check run elsewhere (CI, a laptop) should say so without failing."""
        return sorted(
            f"{store.label}: {variable}"
            for store in self.stores
            for variable in store.credentials.values()
            if not os.environ.get(variable)
        )


class ProtectJob(_Strict):
    """`vdbguard protect` (``vdbguard.protect.run_protect``): a collection copied through a transform into another,
    scanned before and after."""

    to_collection: Annotated[str, Flag()] = Field(description="Collection to write the protected copy to.")
    transform: Annotated[str, Flag(help_from="vdbguard.transforms:needs_help")] = Field(
        description="See `vdbguard transforms list`."
    )
    strength: Annotated[float | None, Flag()] = Field(
        default=None,
        description="The transform's strength; default its own (redact 0.4; each one's default and meaning: "
        "transforms list).",
    )
    state: Annotated[Path | None, Flag()] = Field(
        default=None, description="Checkpoint file: an interrupted copy resumes."
    )
    fit_file: Annotated[Path | None, Flag(path="file")] = Field(
        default=None,
        description="For transforms that need a fit: load it from this .npz when it exists, else fit and save it "
        "here (default: beside --state). Reuse it to protect more data, or query, in the same space.",
    )
    in_place: Annotated[bool, Flag()] = Field(default=False, description="Overwrite --collection itself (needs --yes).")
    yes: Annotated[bool, Flag()] = Field(default=False, description="Confirm --in-place.")
    embedder: Annotated[str, Flag()] = Field(
        default=DEFAULT_EMBEDDER,
        description="Model that made the vectors: redact embeds with it; the scans take 'auto' and 'store' too (scan "
        "--help).",
    )
    stored_text: Annotated[StoredText, Flag(name="--payload")] = Field(
        default_factory=Declared("vdbguard.protect:protect_collection", "stored_text"),
        description="With redact: what the copy stores beside its vectors: the text and payload redacted, kept as "
        "they were, or the text dropped.",
    )
    scan: Annotated[bool, Flag(off="--no-scan")] = Field(
        default=True,
        description="Scan the collection before and the protected one after (a default scan each) and print the "
        "records flagged by type, before and after; the exit code follows --fail-on on the scan after.",
    )
    fail_on: Annotated[FailOn, Flag()] = Field(
        default=FAIL_ON, description="Exit 1 when a finding of the scan after is at least this severe."
    )
    out: Annotated[Path | None, Flag(path="dir")] = Field(
        default=None, description="Folder for the scans' reports, before/ and after/ (report.json and report.md each)."
    )
    concept: Annotated[str, Flag(advanced=True)] = Field(
        default_factory=Declared("vdbguard.transforms.concepts:corpus_concept_set", "concept"),
        description="For concept transforms (leace, sparse): the PII type or attribute to protect, learned from "
        "vdbguard's labelled corpus embedded with --embedder.",
    )
    batch_size: Annotated[int, Flag(advanced=True)] = Field(
        default_factory=Declared("vdbguard.protect:protect_collection", "batch_size"),
        ge=1,
        le=10_000,
        description="Records copied at a time.",
    )

    @model_validator(mode="after")
    def _in_place_confirmed(self) -> ProtectJob:
        if self.in_place and not self.yes:
            raise ValueError("--in-place rewrites every stored vector: add --yes to confirm")
        return self


class ScanCommand(_Strict):
    """`vdbguard scan`'s own flags; the rest set the job's settings (``JobSettings``, ``AttackSettings``,
    ``OutputSettings``) of the one store they name."""

    config: Annotated[Path | None, Flag(path="file", exists=True)] = Field(
        default=None,
        description="Run a scan job file (vdbguard.toml: stores, attacks, budgets, allow lists, outputs; "
        "`vdbguard config init` writes one). The other flags are then not used.",
    )
    identifiers: Annotated[Path | None, Flag(path="file", exists=True)] = Field(
        default=None,
        description="Types of your own, each reported as CUSTOM:NAME (regexes with context words and a checksum, "
        "deny lists), and allow lists per type: a YAML, JSON or TOML file of a job file's [[identifiers]] and "
        "[[allow_lists]], in Presidio's ad-hoc recognizer fields (docs/jobs.md).",
    )
    baseline: Annotated[Path | None, Flag(path="file", exists=True)] = Field(
        default=None,
        description="Accept what an earlier scan found: its report.json (matched per collection, record id and PII "
        "type), or a suppression list in the job file's [[suppressions]] form (TOML or JSON). Accepted findings are "
        "left out of the reports and the exit code, as suppressions are; a new leak still fails.",
    )
    as_json: Annotated[bool, Flag(name="--json")] = Field(
        default=False,
        description="Print one JSON summary on stdout instead of the table: counts, the exit code, report paths and "
        "the most severe findings (no recovered value). Nothing else goes to stdout.",
    )
    webhook: Annotated[str | None, Flag(metavar="URL")] = Field(
        default=None,
        description="POST the counts as JSON here after the scan (never a recovered value); a failure only warns. "
        "user:password@ in the URL is sent as Basic auth.",
    )
    top_findings: Annotated[int, Flag(advanced=True)] = Field(
        default_factory=Declared("vdbguard.reports.summary:JsonSummary", "top"),
        ge=0,
        description="With --json: how many of the most severe findings the summary lists.",
    )
    language: Annotated[str, AfterValidator(check_language), Flag(advanced=True)] = Field(
        default="en",
        description="Language of the stored text. The PII detector reads English only (en); another is refused.",
    )

    @field_validator("webhook")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        """Refused before the scan runs, never echoing its user:password or path."""
        from vdbguard.reports.metrics import check_webhook_url

        try:
            return None if url is None else check_webhook_url(url)
        except VdbguardError as exc:
            raise ValueError(exc.message) from exc


class EvaluateAttacks(_Strict):
    """`vdbguard evaluate-attacks` (``vdbguard.evaluate.inversion.measure_attack``)."""

    data: Annotated[Path, Flag()] = Field(description='Held-out JSONL: {"text": ..., "names": [...]}')
    embedder: Annotated[str, Flag()] = Field(
        default=DEFAULT_EMBEDDER, description="Model whose embeddings are attacked."
    )
    attack: Annotated[str, Flag()] = Field(
        default="strongest",
        description="An inversion attack; strongest: the best measured token F1 for --embedder (each run here is "
        "kept).",
    )
    profile: Annotated[Profile, Flag()] = Field(default="default", description=_PROFILE)
    out: Annotated[Path, Flag(path="dir")] = Field(description="Folder for attack-metrics.json (also printed).")
    seconds_per_record: Annotated[float, Flag(advanced=True)] = Field(
        default=0.0,
        ge=0,
        description="CPU-second budget per record for attacks that take one (a scan's deep tier gives 1.8); 0: none. "
        "Budgeted runs are not kept for --attack strongest.",
    )


class Attacker(_Strict):
    """How hard a defense is attacked (``vdbguard.evaluate.defense.DefenseBench``; `audit --transform`)."""

    attack: Annotated[list[str], Flag()] = Field(
        default_factory=list,
        description="Attack to measure leakage with (repeatable); the strongest result counts. Default: the strongest "
        "suite (white-box gradient, the best measured inversion attack, slot-search when the data names people, "
        "bag-of-words), each also adapted to the defense.",
    )
    cheap: Annotated[bool, Flag()] = Field(
        default=False,
        description="Only slot-search and bag-of-words (minutes, not hours): a lower bound on leakage, said so.",
    )
    profile: Annotated[Profile, Flag()] = Field(default="default", description=_PROFILE)
    attack_limit: Annotated[int | None, Flag()] = Field(
        default_factory=Declared("vdbguard.evaluate.defense:DefenseBench", "attack_limit"),
        ge=1,
        description="Attack at most this many records (a seeded sample of those naming someone); utility uses all.",
    )

    @model_validator(mode="after")
    def _cheap_or_named(self) -> Attacker:
        if self.cheap and self.attack:
            raise ValueError("--cheap picks the attacks itself: drop it or drop --attack")
        return self


class AuditSettings(Attacker):
    """`vdbguard audit` (``vdbguard.audit.run_audit``); the attacker's settings go with ``transform``."""

    embedder: Annotated[str, Flag()] = Field(
        default=DEFAULT_EMBEDDER, description="Model that made the vectors ('auto')."
    )
    sample_size: Annotated[int, Flag()] = Field(
        default_factory=Declared("vdbguard.audit:audit_collection", "sample"),
        ge=1,
        description="Records (a count) whose stored text is embedded again and compared with their vector.",
    )
    transform: Annotated[str | None, Flag()] = Field(
        default=None,
        description="The transform the store was protected with (key from $VDBGUARD_TRANSFORM_KEY): the audit "
        "checks it reproduces the stored vectors and measures what it buys against the adaptive attacker on the "
        "store's text.",
    )
    strength: Annotated[float | None, Flag()] = Field(
        default=None, description="With --transform: its strength (default: its own default)."
    )
    fit_file: Annotated[Path | None, Flag(path="file", exists=True)] = Field(
        default=None,
        description="With --transform, for transforms that need a fit: the .npz `vdbguard protect` saved.",
    )
    attack_limit: Annotated[int | None, Flag()] = Field(
        default_factory=Declared("vdbguard.audit:OwnerTransform", "attack_limit"),
        ge=1,
        description="With --transform: attack at most this many of the store's texts.",
    )
    out: Annotated[Path | None, Flag(path="dir")] = Field(
        default=None, description="Folder for audit.json (the findings and notes)."
    )
    fail_on: Annotated[FailOn, Flag()] = Field(
        default=FAIL_ON, description="Exit 1 when a finding is at least this severe ('never': always exit 0)."
    )

    @model_validator(mode="after")
    def _attacker_with_transform(self) -> AuditSettings:
        if self.transform is None and (self.fit_file or self.strength is not None or self.attack or self.cheap):
            raise ValueError("--strength, --fit-file, --attack and --cheap go with --transform")
        return self


class DefenseBenchSettings(Attacker):
    """What a defense is measured on (``DefenseBench.of``): `evaluate-defense`, `calibrate` and `frontier`."""

    data: Annotated[Path, Flag()] = Field(
        description='Held-out JSONL: {"text": ..., "names": [...], "pii": [...]} (names and pii optional).'
    )
    embedder: Annotated[str, Flag()] = Field(default=DEFAULT_EMBEDDER, description="Model that embeds the data.")
    seconds_per_record: Annotated[float, Flag(advanced=True)] = Field(
        default_factory=Declared("vdbguard.evaluate.defense:DefenseBench", "seconds_per_record"),
        ge=0,
        description="Search budget per record for attacks that have one (adversarial-decoding); 0: none.",
    )


class EvaluateDefense(DefenseBenchSettings):
    """`vdbguard evaluate-defense`: one transform."""

    transform: Annotated[str, Flag()] = Field(
        description="See `vdbguard transforms list` (its 'needs' column); chains: redact+gaussian, leace:1+gaussian. "
        "Transforms that need a fit are fitted on vdbguard's corpus; keyed ones read $VDBGUARD_TRANSFORM_KEY."
    )
    strength: Annotated[float | None, Flag()] = Field(
        default=None, description="The (last) transform's strength; default: its own default."
    )
    no_adaptive: Annotated[bool, Flag()] = Field(
        default=False, description="Skip the adaptive attacker (never enough to trust a defense)."
    )
    out: Annotated[Path, Flag(path="dir")] = Field(description="Folder for defense.json (also printed).")


class Calibrate(DefenseBenchSettings):
    """`vdbguard calibrate`: the weakest setting that meets the targets."""

    max_recall_loss: Annotated[float, Flag()] = Field(
        default_factory=Declared("vdbguard.evaluate.calibration:calibrate", "max_recall_loss"),
        ge=0,
        le=1,
        description="Recall@10 a defense may lose on queries without PII.",
    )
    target_leakage_cut: Annotated[float, Flag()] = Field(
        default_factory=Declared("vdbguard.evaluate.calibration:calibrate", "target_leakage_cut"),
        ge=0,
        le=1,
        description="Share of the leakage a defense must cut (drawn on the frontier's plot).",
    )
    transform: Annotated[list[str], Flag()] = Field(
        default_factory=list, description="Transforms or chains to try (default: all)."
    )
    out: Annotated[Path | None, Flag(path="dir")] = Field(
        default=None, description="Folder for calibration.json: every measured point."
    )


class Frontier(Calibrate):
    """`vdbguard frontier`: every transform at every strength."""

    transform: Annotated[list[str], Flag()] = Field(
        default_factory=list,
        description="Transforms or chains (default: every transform that sweeps strengths, and redact+gaussian, "
        "redact+dcpe, leace:1+gaussian).",
    )
    out: Annotated[Path, Flag(path="dir")] = Field(description="Folder for points.json, table.md and frontier.png.")


class SubjectSettings(_Strict):
    """`vdbguard subject find` and `erase` (``vdbguard.subject.search_subject``): who, and how hard to look."""

    name: Annotated[str | None, Flag()] = Field(
        default=None, description="The person's full name, as it would be written in a record."
    )
    email: Annotated[str | None, Flag()] = Field(default=None, description="The person's email address.")
    phone: Annotated[str | None, Flag()] = Field(
        default=None, description="The person's phone number (matched on its digits)."
    )
    embedder: Annotated[str, Flag()] = Field(
        default=DEFAULT_EMBEDDER,
        description="Model that made the vectors ('auto' to identify it; 'store' for one that cannot run here: "
        "payload search only).",
    )
    attack: Annotated[list[str], Flag()] = Field(
        default_factory=lambda: ["bag-of-words"],
        description="Inversion attack whose recovered words are matched against the name and email (repeatable; "
        "'none' for none).",
    )
    profile: Annotated[Profile, Flag()] = Field(default="default", description=_PROFILE)
    show_pii: Annotated[bool, Flag()] = Field(
        default=False, description="Show matched values unmasked (handle the output as PII!)."
    )
    out: Annotated[Path | None, Flag(path="dir")] = Field(
        default=None, description="Folder for subject.json: the records found and their evidence."
    )


def load_job(path: Path) -> JobConfig:
    """Read and validate a job file; every problem is reported with its location in the file."""
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except OSError as exc:
        raise VdbguardError(f"cannot read {path}: {exc.strerror}", "check the --config path") from exc
    except tomllib.TOMLDecodeError as exc:
        raise VdbguardError(f"{path} is not valid TOML: {exc}", "fix the syntax at that line") from exc
    job = parse_job(data, str(path), key_lines(text))
    return job.model_copy(update={"base_dir": path.resolve().parent})


def parse_job(data: dict[str, Any], source: str, lines: Mapping[tuple[str | int, ...], int] | None = None) -> JobConfig:
    """A parsed job file validated; every problem named with its location (and line, given ``lines``)."""
    try:
        return JobConfig.model_validate(data)
    except ValidationError as exc:
        raise VdbguardError(
            f"{source} has {exc.error_count()} problem(s):\n" + describe_errors(exc, lines or {}),
            "`vdbguard config init` writes a commented example",
        ) from exc


_TABLE = re.compile(r"^\s*(\[\[?)\s*([^\[\]#]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"^\s*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)\s*=")


def key_lines(text: str) -> dict[tuple[str | int, ...], int]:
    """The line of each table and key of a TOML file, by path: ``("stores", 1, "url") -> 14``.

    tomllib keeps no positions; this reads the headers and ``key =`` lines, which is what a job file holds.
    """
    lines: dict[tuple[str | int, ...], int] = {}
    tables_in_array: dict[tuple[str | int, ...], int] = {}
    table: tuple[str | int, ...] = ()
    for number, line in enumerate(text.splitlines(), start=1):
        if header := _TABLE.match(line):
            path: tuple[str | int, ...] = ()
            names = [name.strip().strip("\"'") for name in header.group(2).split(".")]
            for i, name in enumerate(names):
                path += (name,)
                if i < len(names) - 1 and path in tables_in_array:  # [stores.options] belongs to the last [[stores]]
                    path += (tables_in_array[path] - 1,)
            if header.group(1) == "[[":
                tables_in_array[path] = tables_in_array.get(path, 0) + 1
                path += (tables_in_array[path] - 1,)
            table = path
            lines.setdefault(table, number)
        elif key := _KEY.match(line):
            lines.setdefault((*table, key.group(1).strip("\"'")), number)
    return lines


def describe_errors(exc: ValidationError, lines: Mapping[tuple[str | int, ...], int] | None = None) -> str:
    """One line per problem: where in the file (``stores[1].url``, line 14) and what is wrong."""
    described = []
    for error in exc.errors():
        location = ""
        for part in error["loc"]:
            location += f"[{part}]" if isinstance(part, int) else f".{part}" if location else str(part)
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown setting (misspelt? see `vdbguard config init`)"
        line = _nearest_line(tuple(error["loc"]), lines or {})
        where = f"{location or '(top level)'}" + (f" (line {line})" if line else "")
        described.append(f"  {where}: {message}")
    return "\n".join(described)


def load_identifiers(path: Path) -> DetectorSettings:
    """``scan --identifiers FILE``: a job file's ``[detector]``, ``[[identifiers]]`` and ``[[allow_lists]]`` alone,
    in YAML, JSON or TOML (by its suffix), validated with each problem's place in the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise VdbguardError(f"cannot read {path}: {exc}", "check the --identifiers path") from exc
    data, lines = _parsed(path, text)
    try:
        return DetectorSettings.model_validate(data)
    except ValidationError as exc:
        raise VdbguardError(
            f"{path} has {exc.error_count()} problem(s):\n" + describe_errors(exc, lines),
            'see docs/jobs.md, "Identifiers of your own": Presidio\'s ad-hoc recognizer fields',
        ) from exc


def _parsed(path: Path, text: str) -> tuple[Any, dict[tuple[str | int, ...], int]]:
    """The file's data and the line of each of its keys (TOML by its suffix; YAML otherwise, which reads JSON)."""
    import yaml

    try:
        if path.suffix.lower() == ".toml":
            return tomllib.loads(text), key_lines(text)
        return yaml.safe_load(text), yaml_lines(yaml.compose(text))
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        kind = "TOML" if path.suffix.lower() == ".toml" else "YAML or JSON"
        raise VdbguardError(f"{path} is not valid {kind}: {exc}", "fix the syntax at that line") from exc


def yaml_lines(node: Any, path: tuple[str | int, ...] = ()) -> dict[tuple[str | int, ...], int]:
    """The line of each key and list item of a composed YAML (or JSON) document, by path, as ``key_lines``."""
    import yaml

    lines: dict[tuple[str | int, ...], int] = {}
    if node is None:
        return lines
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            lines.update(yaml_lines(value, (*path, str(key.value))))
            lines[(*path, str(key.value))] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines.update(yaml_lines(item, (*path, i)))
    return lines


def _nearest_line(location: tuple[str | int, ...], lines: Mapping[tuple[str | int, ...], int]) -> int | None:
    """The line of the setting, or of the closest enclosing table that is in the file (a missing setting)."""
    for end in range(len(location), 0, -1):
        if location[:end] in lines:
            return lines[location[:end]]
    return None


def job_schema() -> dict[str, Any]:
    return JobConfig.model_json_schema()


STARTER = """\
# vdbguard scan job: `vdbguard scan --config vdbguard.toml`; check it with `vdbguard config validate`.
# JSON Schema of this file: docs/job-schema.json. Relative paths start from this file's folder.

[job]
name = "nightly"
state = "vdbguard-state.sqlite"  # re-runs attack only new or changed records; a killed run resumes
# embedder = "auto"              # the model that made the vectors; "auto" identifies it, "store" learns it
# profile = "default"            # "small" trains smaller attack models (faster, weaker)
# verdict = "fused"              # "any": flag on any attack's own threshold (more recall, more noise)
# target_fpr = 0.02              # share of PII-free records the verdict may flag
# owner_calibration = "auto"     # fit on the store's own records that keep their text
# executor = "ray"              # scan on a Ray cluster (pip install 'vdbguard[ray]'); with ray_address, workers
fail_on = "high"                 # exit 1 when a finding is at least this severe ("never" to always exit 0)

[[stores]]
connector = "chroma"             # see `vdbguard connectors list`
path = "chroma-data"             # an embedded store; a server takes url = "http://host:port"
collections = ["tickets"]        # or globs matched against what the store lists: ["*"], ["tickets_*"]
# [stores.credentials]           # connector setting = NAME of the environment variable that holds it
# api_key = "QDRANT_API_KEY"
# [stores.options]               # other connector settings
# timeout = 30
# tls_verify = "private-ca.pem"  # a server's certificate from a private CA (false: no check, warned)

[attacks]
fast = ["pii-probe", "bag-of-words"]  # on every record
# sample = 1.0                   # or a share of records, for very large collections
# deep = ["slot-search"]         # slower attacks on what the fast tier flags ...
# deep_sample = 0.01             # ... plus this share of the other records
# deep_max_records = 1000        # per run
# deep_max_seconds = 600         # per run
# deep_record_seconds = 1.8      # CPU-seconds per record for adversarial-decoding (0 = unbounded)

[allow]
# values = ["Ada Lovelace"]      # public names, test accounts: not a leak
# patterns = ['@example\\.com$']
# records = ["test-*"]           # record ids never reported

# [[suppressions]]               # an accepted finding
# record_id = "ticket-0042"
# pii_type = "person"
# reason = "public figure, consented"
# owner = "privacy@example.com"
# expires = 2027-06-30

# [severity.by_type]             # base severity per PII type
# person = "high"

# [detector]
# name = "presidio"              # version 17 (learned names and addresses), or presidio-ner (6), presidio-sm (5)
# language = "en"                # the only language the detector reads; another is refused

# [[identifiers]]                # a type of your own, reported as CUSTOM:EMPLOYEE_ID (Presidio's ad-hoc fields)
# supported_entity = "EMPLOYEE_ID"
# context = ["employee", "staff"] # a context word just before a match adds 0.35; 0.4 is reported
# validator = "luhn"             # or iban, aba_routing, verhoeff: a checksum the match must pass
# allow_list = ["EMP-000000"]    # matches that are not a leak
# severity = "high"              # default medium
# [[identifiers.patterns]]       # one or more regexes (case-insensitive)
# name = "employee id"
# regex = '\\bEMP-\\d{6}\\b'
# score = 0.3                    # without context: not reported; with it, 0.65
# [[identifiers]]
# supported_entity = "PROJECT_CODENAME"
# deny_list = ["Project Nightingale", "Bluebird"]  # words or phrases, any case

# [[allow_lists]]                # values the detector never reports as a type
# supported_entity = "EMAIL"
# allow_list = ["support@example.com"]

[output]
dir = "vdbguard-reports"
formats = ["json", "md", "html", "sarif", "csv"]
# show_pii = false               # never in shared places
# metrics_file = "/var/lib/node_exporter/textfile/vdbguard.prom"
# webhook_env = "VDBGUARD_WEBHOOK_URL"
"""


if __name__ == "__main__":
    import json

    target = Path(__file__).resolve().parents[1] / "docs" / "job-schema.json"
    target.write_text(json.dumps(job_schema(), indent=2) + "\n")
    print(f"wrote {target}")
