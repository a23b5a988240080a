"""pgvector: a real PostgreSQL server (Debian's) with the pgvector extension, via scripts/pgvector-server.sh."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from tests.connectors.contract.harness import Backend
from tests.helpers import free_port

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "pgvector-server.sh"
USER = "vdbguard"
LOCK_TIMEOUT_MS = 300  # set for the connector through the URL, so that failing() makes reads time out


class PgvectorServer(Backend):
    id = "pgvector"
    connector_name = "pgvector"
    named_vectors = True
    credentials = True
    transient_errors = True
    metric = "cosine"

    def start(self) -> None:
        installed = subprocess.run(["bash", str(SCRIPT), "install"], capture_output=True, text=True, timeout=900)
        if installed.returncode != 0:
            output = installed.stdout[-2000:] + installed.stderr[-3000:]
            raise RuntimeError(f"pgvector-server.sh install failed:\n{output}")
        self.password = secrets.token_hex(12)
        # Not under the pytest workdir: its parents are private to root and the server runs as `postgres`.
        self.dir = Path(tempfile.mkdtemp(prefix="vdbguard-pg-"))
        env = {"PGVECTOR_USER": USER, "PGVECTOR_PASSWORD": self.password}
        self._guard()
        for _ in range(3):  # the free port can be taken between free_port() and the server binding it
            self.port = free_port()
            started = subprocess.run(
                ["bash", str(SCRIPT), "start", str(self.dir), str(self.port)],
                capture_output=True,
                text=True,
                timeout=120,
                env={**os.environ, **env},
            )
            if started.returncode == 0:
                return
        self.stop()
        raise RuntimeError(f"pgvector-server.sh start failed:\n{started.stdout[-2000:]}{started.stderr[-3000:]}")

    def _guard(self) -> None:
        """pg_ctl detaches the server into its own session, so a test run killed before stop() would leave
        it running: a watchdog in a session of its own stops it once this process is gone."""
        watch = 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; bash "$2" stop "$3"; rm -rf "$3"'
        self.guard = subprocess.Popen(
            ["bash", "-c", watch, "pgvector-guard", str(os.getpid()), str(SCRIPT), str(self.dir)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def stop(self) -> None:
        guard = getattr(self, "guard", None)
        if guard is not None:
            os.killpg(guard.pid, signal.SIGTERM)  # the watchdog's own session: bash and its sleep
            guard.wait(timeout=10)
        subprocess.run(["bash", str(SCRIPT), "stop", str(self.dir)], capture_output=True, timeout=120)
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, password: str | None = None) -> str:
        options = f"?options=-c%20lock_timeout%3D{LOCK_TIMEOUT_MS}"
        return f"postgresql://{USER}:{password or self.password}@127.0.0.1:{self.port}/vdbguard{options}"

    def connector_kwargs(self, collection: str) -> dict[str, Any]:
        return {"collection": collection, "url": self.url()}

    def unreachable_kwargs(self, collection: str) -> dict[str, Any]:
        return {"url": f"postgresql://{USER}:{self.password}@127.0.0.1:{free_port()}/vdbguard"}

    def bad_credentials_kwargs(self, collection: str) -> dict[str, Any]:
        return {"url": self.url(password=f"wrong-{secrets.token_hex(8)}")}

    def _admin(self) -> psycopg.Connection:
        return psycopg.connect(self.url(), autocommit=True, application_name="contract-admin")

    def write_marker(self) -> Any:
        """The next transaction id (any write, DDL included, takes one), the WAL insert position and the
        tuple counters of every user table. The throwaway cluster runs no autovacuum and no replication
        WAL, so nothing else moves them. Statistics reach the shared counters when a session ends, so
        this waits for the other sessions to go and for two identical readings in a row. (Reading pages
        that hold updated or deleted rows lets PostgreSQL prune them, which moves the WAL position: the
        suite scans insert-only tables, where that cannot happen.)"""
        with self._admin() as conn:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                others = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                    "AND pid <> pg_backend_pid()"
                ).fetchone()
                if others is not None and others[0] == 0:
                    break
                time.sleep(0.05)
            previous = None
            while time.monotonic() < deadline:
                conn.execute("SELECT pg_stat_clear_snapshot()")
                marker = conn.execute(
                    "SELECT pg_snapshot_xmax(pg_current_snapshot())::text, pg_current_wal_insert_lsn()::text, "
                    "(SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables)::bigint"
                ).fetchone()
                if marker == previous:
                    break
                previous = marker
                time.sleep(0.1)
            return marker

    @contextmanager
    def failing(self, times: int) -> Iterator[None]:
        """Hold ACCESS EXCLUSIVE locks on every table until ``times`` reads have given up waiting for them
        (the connector's URL sets lock_timeout, so each one fails with SQLSTATE 55P03 lock_not_available)."""
        holder = self._admin()
        holder.autocommit = False
        tables = holder.execute("SELECT format('%I.%I', schemaname, relname) FROM pg_stat_user_tables").fetchall()
        if tables:
            holder.execute(f"LOCK TABLE {', '.join(t[0] for t in tables)} IN ACCESS EXCLUSIVE MODE")
        holder_pid = holder.info.backend_pid
        done = threading.Event()

        def watch() -> None:
            seen: set[tuple[int, Any]] = set()
            with self._admin() as conn:
                while not done.is_set():
                    waiting = set(
                        conn.execute(
                            "SELECT a.pid, a.xact_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                            "WHERE NOT l.granted AND l.locktype = 'relation' AND a.pid <> %s",
                            (holder_pid,),
                        ).fetchall()
                    )
                    seen |= waiting
                    if len(seen) >= times and not waiting:
                        break  # the last of them has timed out: let the next attempt through
                    time.sleep(0.01)
            holder.rollback()

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join(timeout=10)
            holder.close()
