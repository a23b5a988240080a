#!/usr/bin/env bash
# A real PostgreSQL + pgvector for tests: install it from Debian's packages, run throwaway clusters.
#
#   scripts/pgvector-server.sh install          # idempotent; a no-op (milliseconds) once installed
#   scripts/pgvector-server.sh start DIR PORT   # initdb DIR/data if needed, start on 127.0.0.1:PORT
#   scripts/pgvector-server.sh stop DIR         # stop the cluster in DIR (no error if it is not running)
#
# install: apt-installs postgresql-$PG_MAJOR (default: the newest installed major, else 15) and its
# postgresql-server-dev package (pinned to the installed server's version, so the server is never
# upgraded under a running cluster), then builds pgvector from Debian's own source package when the
# `vector` extension is not installed yet. Debian bookworm ships no pgvector for PostgreSQL 15, so the
# source comes from a newer suite (PGVECTOR_SUITE, default trixie) through a private apt state
# directory: the system's sources lists and package lists are left untouched. Needs root (or sudo).
#
# start: the cluster is for tests only: superuser $PGVECTOR_USER (default vdbguard) with password
# $PGVECTOR_PASSWORD (default vdbguard), scram-sha-256 over TCP on 127.0.0.1 only, the Unix socket in
# DIR, database vdbguard with the vector extension; fsync, autovacuum and WAL for replication are off
# (nothing in the background writes, so tests can watch the engine for writes). Run as root, the
# server runs as the `postgres` user, which must be able to reach DIR (use a directory under /tmp).
set -euo pipefail

PGVECTOR_SUITE=${PGVECTOR_SUITE:-trixie}
PGVECTOR_USER=${PGVECTOR_USER:-vdbguard}
PGVECTOR_PASSWORD=${PGVECTOR_PASSWORD:-vdbguard}
PGVECTOR_DB=${PGVECTOR_DB:-vdbguard}

die() { echo "pgvector-server: $*" >&2; exit 1; }

pg_major() {
    if [[ -n "${PG_MAJOR:-}" ]]; then echo "$PG_MAJOR"; return; fi
    local newest
    newest=$(find /usr/lib/postgresql -mindepth 3 -maxdepth 3 -path '*/bin/postgres' 2>/dev/null \
        | sed -E 's#^/usr/lib/postgresql/([0-9]+)/.*#\1#' | sort -n | tail -1)
    echo "${newest:-15}"
}

MAJOR=$(pg_major)
PGBIN=/usr/lib/postgresql/$MAJOR/bin

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"
    elif command -v sudo >/dev/null; then sudo -n "$@"
    else die "installing packages needs root: run '$0 install' as root"; fi
}

# The server refuses to run as root: run cluster commands as `postgres` when we are root.
as_owner() {
    if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

extension_installed() {
    local sharedir pkglibdir
    [[ -x $PGBIN/postgres && -x $PGBIN/pg_config ]] || return 1
    sharedir=$("$PGBIN/pg_config" --sharedir) && pkglibdir=$("$PGBIN/pg_config" --pkglibdir) || return 1
    [[ -f $sharedir/extension/vector.control && -f $pkglibdir/vector.so ]]
}

apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    if ! as_root apt-get install -y -q --no-install-recommends "$@"; then
        as_root apt-get update -q
        as_root apt-get install -y -q --no-install-recommends "$@"
    fi
}

install_packages() {
    local dev=postgresql-server-dev-$MAJOR version
    if [[ -x $PGBIN/postgres && -f $("$PGBIN/pg_config" --includedir-server 2>/dev/null || echo /none)/postgres.h ]]
    then
        return
    fi
    version=$(dpkg-query -W -f='${Version}' "postgresql-$MAJOR" 2>/dev/null || true)
    if [[ -n $version ]] && apt_install "$dev=$version"; then
        return
    fi
    apt_install "postgresql-$MAJOR" "$dev"
}

build_pgvector() {
    local work lists src tarball
    work=$(mktemp -d /tmp/vdbguard-pgvector-build.XXXXXX)
    BUILD_DIR=$work
    trap 'rm -rf "$BUILD_DIR"' EXIT
    chmod 755 "$work"
    lists=$work/apt
    mkdir -p "$lists/lists/partial" "$lists/cache/archives/partial" "$work/src"
    chown -R _apt "$lists/lists/partial" "$work/src" 2>/dev/null || true
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian" \
        "$PGVECTOR_SUITE main" >"$lists/sources.list"
    local opts=(-q -o "Dir::Etc::SourceList=$lists/sources.list" -o Dir::Etc::SourceParts=/nonexistent
        -o "Dir::State::Lists=$lists/lists" -o "Dir::Cache=$lists/cache")
    # apt checks the suite's signed Release file and the source files' hashes against it.
    as_root apt-get "${opts[@]}" update
    (cd "$work/src" && as_root apt-get "${opts[@]}" source --download-only pgvector)
    tarball=$(find "$work/src" -maxdepth 1 -name 'pgvector_*.orig.tar.*' | head -1)
    [[ -n $tarball ]] || die "no pgvector source package found in Debian $PGVECTOR_SUITE"
    tar -xf "$tarball" -C "$work"
    src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -1)
    [[ -n $src ]] || die "unexpected layout of $tarball"
    # Portable code (no -march=native) and no LLVM bitcode: JIT inlining is not needed for tests.
    make -C "$src" -s -j"$(nproc)" PG_CONFIG="$PGBIN/pg_config" OPTFLAGS="" with_llvm=no
    as_root make -C "$src" -s PG_CONFIG="$PGBIN/pg_config" OPTFLAGS="" with_llvm=no install
}

cmd_install() {
    if extension_installed; then
        echo "pgvector-server: PostgreSQL $MAJOR with pgvector already installed"
        return
    fi
    exec 9>/tmp/vdbguard-pgvector-install.lock
    flock 9
    extension_installed && return
    install_packages
    MAJOR=$(pg_major)
    PGBIN=/usr/lib/postgresql/$MAJOR/bin
    extension_installed || build_pgvector
    extension_installed || die "pgvector did not install into PostgreSQL $MAJOR"
    echo "pgvector-server: installed PostgreSQL $MAJOR with pgvector"
}

cmd_start() {
    local dir=${1:-} port=${2:-}
    [[ -n $dir && $port =~ ^[0-9]+$ ]] || die "usage: $0 start DIR PORT"
    [[ -x $PGBIN/pg_ctl ]] || die "PostgreSQL $MAJOR is not installed: run '$0 install' first"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    local data=$dir/data
    if [[ $(id -u) -eq 0 ]]; then
        id -u postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
        chown postgres "$dir"
        chmod 700 "$dir"
        runuser -u postgres -- test -w "$dir" \
            || die "user postgres cannot reach $dir (a parent directory is private): use a directory under /tmp"
    fi
    if [[ ! -f $data/PG_VERSION ]]; then
        local pwfile=$dir/.pw
        (umask 077 && printf '%s\n' "$PGVECTOR_PASSWORD" >"$pwfile")
        if [[ $(id -u) -eq 0 ]]; then chown postgres "$pwfile"; fi
        as_owner "$PGBIN/initdb" -D "$data" -U "$PGVECTOR_USER" --pwfile="$pwfile" -E UTF8 --locale=C \
            --auth-local=trust --auth-host=scram-sha-256 --no-sync --no-instructions >"$dir/initdb.log" 2>&1 \
            || { rm -f "$pwfile"; cat "$dir/initdb.log" >&2; die "initdb failed"; }
        rm -f "$pwfile"
        as_owner tee -a "$data/postgresql.conf" >/dev/null <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
autovacuum = off
wal_level = minimal
max_wal_senders = 0
max_connections = 50
shared_buffers = 32MB
EOF
    fi
    as_owner "$PGBIN/pg_ctl" -D "$data" -l "$dir/server.log" -o "-p $port" -w -t 60 start >/dev/null \
        || { tail -20 "$dir/server.log" >&2; die "PostgreSQL did not start on 127.0.0.1:$port"; }
    local psql=(env PGOPTIONS="-c client_min_messages=warning"
        "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U "$PGVECTOR_USER")
    if [[ -z $(as_owner "${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$PGVECTOR_DB'") ]]
    then
        as_owner "${psql[@]}" -d postgres -c "CREATE DATABASE \"$PGVECTOR_DB\""
    fi
    as_owner "${psql[@]}" -d "$PGVECTOR_DB" -c "CREATE EXTENSION IF NOT EXISTS vector"
    echo "postgresql://$PGVECTOR_USER@127.0.0.1:$port/$PGVECTOR_DB"
}

cmd_stop() {
    local dir=${1:-}
    [[ -n $dir ]] || die "usage: $0 stop DIR"
    [[ -f $dir/data/postmaster.pid ]] || return 0
    as_owner "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null \
        || as_owner "$PGBIN/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null
}

case ${1:-} in
    install) cmd_install ;;
    start) shift; cmd_start "$@" ;;
    stop) shift; cmd_stop "$@" ;;
    *) die "usage: $0 install | start DIR PORT | stop DIR" ;;
esac
