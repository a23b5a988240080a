"""Where vdbguard keeps what it builds once: trained attacks, corpus embeddings, unpacked models."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

T = TypeVar("T")


def private_dir(path: Path) -> Path:
    """``path``, made if missing and owner-only (0700): trained models, calibrations and states describe the
    stores they came from."""
    path.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(PermissionError):  # a folder someone else set up is theirs to protect
        path.chmod(0o700)
    return path


def writable_dir(path: Path, what: str = "--out") -> Path:
    """``path``, made if missing, once a file could be created in it: checked before a scan, not after it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        from vdbguard.errors import VdbguardError

        raise VdbguardError(
            f"cannot write to {what} {path}: {exc.strerror or type(exc).__name__}",
            "pass a folder you can write to (nothing was scanned yet)",
        ) from exc
    return path


def cache_root() -> Path:
    """``$VDBGUARD_CACHE_DIR``, else ``$XDG_CACHE_HOME/vdbguard``, else ``~/.cache/vdbguard``; owner-only."""
    configured = os.environ.get("VDBGUARD_CACHE_DIR")
    base = Path(configured) if configured else Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "vdbguard"
    return private_dir(base.expanduser())


@contextlib.contextmanager
def atomic_write(path: Path, mode: str = "wb") -> Iterator[IO[Any]]:
    """A file to write ``path`` through, so that a reader, or a run killed half-way, sees the old file or the
    new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(mode, dir=path.parent, suffix=".tmp", delete=False) as handle:
        try:
            yield handle
        except BaseException:
            handle.close()
            os.unlink(handle.name)
            raise
    os.replace(handle.name, path)


def write_json_atomic(path: Path, data: Any, **dump_options: Any) -> None:
    with atomic_write(path, "w") as handle:
        json.dump(data, handle, **dump_options)


def cached_json(path: Path, compute: Callable[[], T]) -> T:
    """The JSON value kept at ``path``, or ``compute()`` written there atomically (for the next process). An entry
    of the user's cache that vdbguard ships (``vdbguard.data.FIRST_RUN_CACHE``) is taken from there instead."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        value = _shipped(path)
        if value is None:
            value = compute()
    write_json_atomic(path, value)
    return value


def _shipped(path: Path) -> Any:
    from vdbguard.data import first_run_cache

    root = cache_root()
    return first_run_cache().get(path.relative_to(root).as_posix()) if path.is_relative_to(root) else None


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


# <prefix>-<host tag>-<pid>-<mkdtemp's suffix, which has no hyphen>
_OWNED = re.compile(r"-(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)-[^-]+$")


class ScratchDir:
    """A private folder under the temp dir for what a run copies out of a store (a snapshot, a temporary state).

    It holds user data, so it must not outlive the run. ``drop()`` deletes it, and so do the garbage collector and a
    normal exit. A process killed outright (SIGKILL, the OOM killer) deletes nothing, so every new scratch folder,
    and every scan job as it starts, first deletes those whose owning process on this host is gone. The owner is in
    the folder's name, not in a file in it: a kill between making the folder and writing a file, or halfway through
    deleting it, would leave a folder nobody owns.
    """

    def __init__(self, prefix: str) -> None:
        reap_scratch_dirs()
        self.path = Path(tempfile.mkdtemp(prefix=f"vdbguard-{prefix}-{_host_tag()}-{os.getpid()}-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)

    def drop(self) -> None:
        self._cleanup()


def reap_scratch_dirs() -> None:
    """Delete the scratch folders of processes of this host that are gone. A folder whose name names no owner, or
    names another host or a live process (or a reused pid), is left alone."""
    host = _host_tag()
    for folder in Path(tempfile.gettempdir()).glob("vdbguard-*"):
        owner = _OWNED.search(folder.name)
        if owner and owner["host"] == host and not _alive(int(owner["pid"])):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process, or a platform without signal 0
        pass
    return True
