"""Plumbing every connector shares: guarded store calls with retries, private copies of embedded stores,
metric names and option parsing."""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import random
import shutil
import ssl
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, TypeVar
from urllib.parse import urlsplit

from vdbguard.connectors.base import STORE_WIDE

from vdbguard.cache import ScratchDir
from vdbguard.credentials import redact_url, remember_secret, split_userinfo
from vdbguard.errors import ConnectorError, VdbguardError

T = TypeVar("T")
log = logging.getLogger("vdbguard.connectors")


# -- retries and error mapping ----------------------------------------------------------------------


def with_retries(
    call: Callable[[], T],
    *,
    is_transient: Callable[[BaseException], bool],
    what: str,
    attempts: int = 5,
    base_delay: float = 0.2,
    max_delay: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``call``; on a transient error wait ``base_delay * 2**n`` (jittered, capped) and try again.

    ``what`` names the operation in logs; it must not contain credentials. Non-transient errors and
    the last transient one propagate unchanged, so connectors can map them to clear messages.
    """
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as exc:
            if attempt == attempts or not is_transient(exc):
                raise
            delay = min(max_delay, base_delay * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
            log.warning("%s failed (%s), retry %d/%d in %.2fs", what, type(exc).__name__, attempt, attempts - 1, delay)
            sleep(delay)
    raise AssertionError("unreachable")


def http_status_is_transient(status: int | None) -> bool:
    """Timeouts aside, only 429 and 5xx answers are worth asking again."""
    return status is not None and (status == 429 or status >= 500)


class StoreCalls:
    """Runs a connector's store calls: transient errors retried, other failures mapped to clear errors.

    The hooks a connector sets: ``store`` (its name in messages and logs), ``store_error`` (what its
    client raises: anything else propagates unchanged), ``_retries`` (embedded engines have no
    transient errors), ``_transient``, ``_scrub`` (masks its credentials) and ``_failed`` (auth
    failures, missing collections, unreachable servers; by default a message naming the call).
    """

    store: ClassVar[str]
    reached = False  # once the store has answered, a lost connection may be a restart: retried for longer
    store_error: ClassVar[type[Exception] | tuple[type[Exception], ...]] = Exception
    collection_name: str
    location: str

    def _retries(self) -> bool:
        return True

    def _transient(self, exc: BaseException) -> bool:
        return False

    def _scrub(self, text: str) -> str:
        return text

    def _where(self, what: str) -> str:
        if self.collection_name == STORE_WIDE:  # listing the store's collections: there is no collection to name
            return f"{self.store} {what} at {self.location}"
        return f"{self.store} {what} on {self.collection_name!r} at {self.location}"

    def _detail(self, exc: BaseException) -> str:
        return f"{type(exc).__name__}: {self._scrub(str(exc))}"

    def _failure(self, what: str, exc: BaseException, hint: str | None = None) -> ConnectorError:
        return ConnectorError(f"{self._where(what)} failed: {self._detail(exc)}", hint)

    def _failed(self, what: str, exc: BaseException) -> VdbguardError:
        return self._failure(what, exc)

    def _call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        call = functools.partial(fn, *args, **kwargs)
        try:
            if not self._retries():
                return call()
            # before the first answer, fail fast (a wrong URL); after it, wait out a restart: 10-20 s in all
            attempts, max_delay = (8, 8.0) if self.reached else (5, 5.0)
            result = with_retries(
                call,
                is_transient=lambda exc: self._transient(exc) and not certificate_refused(exc),
                what=f"{self.store} {what}",
                attempts=attempts,
                max_delay=max_delay,
            )
            self.reached = True
            return result
        except VdbguardError:
            raise
        except self.store_error as exc:
            raise self._failed(what, exc) from exc


# -- private copies of embedded stores --------------------------------------------------------------


def copy_store(source: Path, target: Path) -> None:
    """A store that is a folder or a single file, copied as is."""
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copy2(source, target)


def copy_tree_sparse(src: Path, dst: Path) -> None:
    """``shutil.copytree`` that keeps holes: Qdrant preallocates sparse 32 MiB WAL and mmap files.

    A file that vanishes between the listing and its copy is left out, as ``rsync`` does: a live shard's WAL
    renames its preallocated ``tmp-open-N`` segments while we copy, and a missing empty segment is remade on load.
    """
    shutil.copytree(src, dst, copy_function=_copy_sparse)


def _copy_sparse(src: str, dst: str, *, follow_symlinks: bool = True) -> str:
    seek_data, seek_hole = getattr(os, "SEEK_DATA", None), getattr(os, "SEEK_HOLE", None)
    try:
        fin = open(src, "rb")  # noqa: SIM115 - closed by the with below; only this open may find the file gone
    except FileNotFoundError:
        return dst
    with fin, open(dst, "wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        if seek_data is None or seek_hole is None:
            _copy_range(fin, fout, 0, size)
        else:
            position = 0
            while position < size:
                try:
                    start = os.lseek(fin.fileno(), position, seek_data)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:  # only a hole is left
                        break
                    raise
                end = os.lseek(fin.fileno(), start, seek_hole)
                _copy_range(fin, fout, start, end - start)
                position = end
        fout.truncate(size)
    with contextlib.suppress(FileNotFoundError):
        shutil.copystat(src, dst)
    return dst


def _copy_range(fin: BinaryIO, fout: BinaryIO, start: int, length: int) -> None:
    """Bytes ``start`` to ``start + length`` of one file to the same place in the other: in the kernel where it
    can (``copy_file_range``: no copy through Python), else through a buffer."""
    done = 0
    while done < length and hasattr(os, "copy_file_range"):
        try:
            copied = os.copy_file_range(fin.fileno(), fout.fileno(), length - done, start + done, start + done)
        except OSError:  # a kernel or file system without it: copy the rest through a buffer
            break
        if copied == 0:
            break
        done += copied
    fin.seek(start + done)
    fout.seek(start + done)
    while done < length:
        chunk = fin.read(min(length - done, 1 << 20))
        if not chunk:
            break
        fout.write(chunk)
        done += len(chunk)


class PrivateCopy:
    """A copy of an embedded store under the temp dir, for engines that write or lock files on a plain read.

    The copy is ``<tmp>/<name>``, made by ``copy(source, path)`` in a :class:`~vdbguard.cache.ScratchDir`:
    ``drop()`` deletes it, and so do the garbage collector, a normal exit and the next run after a kill.
    """

    def __init__(
        self, source: Path, *, store: str, name: str = "store", copy: Callable[[Path, Path], object] = copy_store
    ) -> None:
        self._scratch: ScratchDir | None = None
        try:  # a full disk can refuse the folder itself
            self._scratch = ScratchDir(store)
            self.path = self._scratch.path / name
            copy(source, self.path)
        except (OSError, shutil.Error) as exc:  # copytree gathers its files' errors into one shutil.Error
            self.drop()
            first = exc.args[0][0][2] if isinstance(exc, shutil.Error) and exc.args and exc.args[0] else str(exc)
            raise ConnectorError(
                f"cannot copy {source} to a private snapshot under {tempfile.gettempdir()} ({first})",
                "free space there or point TMPDIR at a disk that has room for a copy of the store "
                "(or read it in place with --option snapshot=false, which some engines write to)",
            ) from exc
        except BaseException:
            self.drop()
            raise

    def drop(self) -> None:
        if self._scratch is not None:
            self._scratch.drop()


# -- local or server ---------------------------------------------------------------------------------


def require_path_or_url(connector: str, path: object, url: object, hint: str) -> None:
    """Connectors that read an embedded store or a server take exactly one of ``path`` and ``url``."""
    if (path is None) == (url is None):
        raise VdbguardError(f"the {connector} connector needs exactly one of path or url", hint)


@dataclass(frozen=True)
class ServerUrl:
    """A store server's URL as a connector dials it: no userinfo, no query."""

    scheme: str
    hostname: str
    port: int
    path: str

    @property
    def secure(self) -> bool:
        return self.scheme == "https"

    @property
    def netloc(self) -> str:
        host = f"[{self.hostname}]" if ":" in self.hostname else self.hostname
        return f"{host}:{self.port}"

    @property
    def location(self) -> str:
        """Safe to print and to put in reports."""
        return f"{self.scheme}://{self.netloc}"


def server_url(
    url: str, store: str, default_port: int, *, with_path: bool = False, schemes: tuple[str, ...] = ("http", "https")
) -> ServerUrl:
    """``http(s)://HOST:PORT`` (``http://`` when no scheme is given), read the way a person wrote it: a password
    holding ``/``, ``@`` or ``:`` is the userinfo, never the host or port, and no message shows it."""
    split = split_userinfo(url)
    remember_secret(split.password)
    rest = split.rest if "://" in split.rest else f"http://{split.rest}"
    parts = urlsplit(rest)
    shown = redact_url(url)
    if parts.scheme not in schemes or not parts.hostname or (not with_path and parts.path not in ("", "/")):
        raise VdbguardError(f"unsupported {store} URL {shown!r}", "use http(s)://HOST:PORT")
    try:
        port = parts.port
    except ValueError as exc:
        raise VdbguardError(f"bad port in {store} URL {shown!r}", "use http(s)://HOST:PORT") from exc
    if port is None:
        port = 443 if parts.scheme == "https" else default_port
    return ServerUrl(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))


def close_quietly(client: Any) -> None:
    """Closing must not mask the real outcome (and some clients fail when closed twice)."""
    close = getattr(client, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            close()


class ServerStore(ABC):
    """A store behind a server: one client, made on first use, for reads and writes; retried when transient."""

    remote = True
    snapshot = False
    _client: Any = None

    @abstractmethod
    def _connect(self) -> Any: ...

    def reader(self) -> Any:
        if self._client is None:
            self._client = self._connect()
        return self._client

    def writer(self) -> Any:
        return self.reader()

    def drop_snapshot(self) -> bool:
        return False

    def close(self) -> None:
        close_quietly(self._client)
        self._client = None


class EmbeddedStore(ABC):
    """An embedded store, for engines that write or lock its files whenever they open it.

    Writes open the store itself. With ``snapshot`` reads open a private copy made on the first read
    (``drop_snapshot`` deletes it, so that the next read sees later writes); without, they share the
    writer's client. Subclasses say how to open a store, check it exists and, if need be, copy it.
    """

    remote = False
    copy_prefix: ClassVar[str]  # names the temp dir of the copy
    copy_name: str = "store"
    described_as: ClassVar[str]  # "the Chroma store": what cannot be opened, in messages
    open_hint: ClassVar[str]

    def __init__(self, path: Path, snapshot: bool) -> None:
        self.path = path
        self.location = str(path)
        self.snapshot = snapshot
        self._reader: Any = None
        self._writer: Any = None
        self._copy: PrivateCopy | None = None

    @abstractmethod
    def _connect(self, path: Path) -> Any:
        """A client on the store at ``path`` (the store itself or its copy)."""

    def _open_failed(self, exc: Exception) -> ConnectorError:
        return ConnectorError(
            f"cannot open {self.described_as} at {self.location}: {type(exc).__name__}: {exc}", self.open_hint
        )

    def _open(self, path: Path) -> Any:
        try:
            return self._connect(path)
        except Exception as exc:
            raise self._open_failed(exc) from exc

    @abstractmethod
    def _check(self) -> None:
        """Raise a clear error when there is no store to read (reading must never create one)."""

    def _copy_store(self, target: Path) -> None:
        copy_store(self.path, target)

    def _release(self, client: Any, path: Path) -> None:
        close_quietly(client)

    def reader(self) -> Any:
        if self._reader is None:
            self._check()
            if not self.snapshot:
                return self.writer()
            self._copy = PrivateCopy(
                self.path, store=self.copy_prefix, name=self.copy_name, copy=lambda _, target: self._copy_store(target)
            )
            self._reader = self._open(self._copy.path)
        return self._reader

    def writer(self) -> Any:
        if self._writer is None:
            self._writer = self._open(self.path)
        return self._writer

    @property
    def snapshot_dir(self) -> Path | None:
        """The private copy reads go to, while there is one."""
        return self._copy.path if self._copy is not None else None

    def drop_snapshot(self) -> bool:
        """Close and delete the private copy, if there is one (True)."""
        if self._copy is None:
            return False
        if self._reader is not None:
            self._release(self._reader, self._copy.path)
            self._reader = None
        self._copy.drop()
        self._copy = None
        return True

    def close(self) -> None:
        self.drop_snapshot()
        if self._writer is not None:
            self._release(self._writer, self.path)
        self._writer = None


# -- metric names ------------------------------------------------------------------------------------

# Every spelling a store or a user has for a metric, lower case -> vdbguard's name.
_METRIC_NAMES = {
    "cosine": "cosine",
    "l2": "l2",
    "euclidean": "l2",
    "euclid": "l2",
    "l2-squared": "l2",
    "ip": "ip",
    "dot": "ip",
    "dotproduct": "ip",
    "inner_product": "ip",
}


def is_integer(value: str) -> bool:
    """Whether a record id can be a key of a store whose ids are integers (others are simply not stored)."""
    try:
        int(value)
    except ValueError:
        return False
    return True


def metric_name(name: str) -> str | None:
    """vdbguard's name (cosine, l2, ip) for a metric as any store or user spells it; None if it has none."""
    return _METRIC_NAMES.get(name.lower())


def store_metric(metric: str, names: dict[str, str]) -> str | None:
    """A store's name for ``metric`` (any spelling), from ``names``: vdbguard's name -> the store's."""
    canonical = metric_name(metric)
    return names.get(canonical) if canonical is not None else None


# -- options -----------------------------------------------------------------------------------------


def as_bool(value: bool | str, option: str) -> bool:
    """Connector options arrive as strings from the CLI (``--option snapshot=false``)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise VdbguardError(f"option {option}={value!r} is not a boolean", "use true or false")


# -- TLS ---------------------------------------------------------------------------------------------


class Tls:
    """How a server connector checks the server's certificate: ``tls_verify`` is True (the system's CAs),
    a PEM file of a private CA (verification stays on), or False (off: logged as a warning)."""

    def __init__(self, tls_verify: bool | str | Path, location: str) -> None:
        value: bool | str = tls_verify if isinstance(tls_verify, bool) else str(tls_verify)
        if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            value = as_bool(value, "tls_verify")
        self.ca_file: str | None = None
        if isinstance(value, str):
            path = Path(value).expanduser()
            try:
                ssl.create_default_context(cafile=str(path))
            except (OSError, ssl.SSLError) as exc:
                raise VdbguardError(
                    f"tls_verify={value!r} is not a readable PEM file of CA certificates ({type(exc).__name__})",
                    "pass the CA that signed the server's certificate (--ca-cert FILE), or true for the system's CAs",
                ) from exc
            self.ca_file = str(path)
        self.verify = value is not False
        if not self.verify:
            log.warning(
                "TLS certificate verification is OFF for %s: anyone on the network path can read the vectors "
                "and pose as the store; pass --ca-cert FILE instead to trust a private CA",
                location,
            )

    def system_roots_only(self, store: str, why: str) -> None:
        """For clients that can only verify against the system's CAs: refuse anything else, saying why."""
        if self.ca_file or not self.verify:
            raise VdbguardError(
                f"the {store} connector verifies TLS against the system's CAs only ({why})",
                "add your CA to the system's store (update-ca-certificates) and leave out --ca-cert/--insecure",
            )

    def context(self) -> ssl.SSLContext | bool:
        """What httpx-based clients take as ``verify``."""
        if not self.verify:
            return False
        return ssl.create_default_context(cafile=self.ca_file)

    def ca_pem(self) -> bytes | None:
        """The private CA's certificates, for gRPC channels (None: the system's roots)."""
        return Path(self.ca_file).read_bytes() if self.ca_file else None


def certificate_refused(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a failed certificate check: never worth retrying."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError) or "certificate verify failed" in str(current).lower():
            return True
        current = current.__cause__ or current.__context__ or getattr(current, "source", None)
    return False


def tls_hint(exc: BaseException) -> str:
    """An extra hint when a connection failed on the server's certificate."""
    if certificate_refused(exc):
        return "; the server's TLS certificate was not trusted: give the CA that signed it with --ca-cert FILE"
    return ""
