#!/usr/bin/env bash
# Nightly vdbguard scan, for cron (see crontab in this folder).
#
# Runs `vdbguard scan --config "$VDBGUARD_CONFIG"`, appends everything it prints to a dated log file
# and exits with the scan's own code, so cron (and whatever watches it) sees the result:
#   0  clean
#   1  a finding at least as severe as the job's fail_on ("high" in examples/vdbguard.toml)
#   2  a usage, configuration or connection error
#   75 another run still holds the lock (nothing scanned)
#   143 stopped by SIGTERM (e.g. `timeout`): the state keeps every committed batch and the next run resumes
# Cron mails whatever a job prints (MAILTO): this script prints nothing on success and one line on failure.
#
# Settings, all overridable from the environment (defaults: this checkout, so it runs as it is):
#   VDBGUARD_CONFIG    the job file                       (default: examples/vdbguard.toml)
#   VDBGUARD_VENV      virtual environment with vdbguard  (default: .venv at the repository root)
#   VDBGUARD_LOG_DIR   where scan-YYYY-MM-DD.log goes     (default: the job file's folder/logs)
#   VDBGUARD_ENV_FILE  optional KEY=value file, e.g. QDRANT_API_KEY=..., sourced before the scan;
#                      keep it chmod 600 and out of the crontab, which other tools may read
# Progress is printed as a plain line every 10 s when the output is not a terminal, as here;
# VDBGUARD_LOG_FORMAT=json makes it (and the log records) JSON lines for a log collector.
set -euo pipefail

examples="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
config="${VDBGUARD_CONFIG:-$examples/vdbguard.toml}"
venv="${VDBGUARD_VENV:-$(dirname "$examples")/.venv}"
log_dir="${VDBGUARD_LOG_DIR:-$(dirname "$config")/logs}"

if [[ ! -f "$venv/bin/activate" ]]; then
    echo "nightly-scan: no virtual environment at $venv (set VDBGUARD_VENV)" >&2
    exit 2
fi
# shellcheck disable=SC1091
source "$venv/bin/activate"

if [[ -n "${VDBGUARD_ENV_FILE:-}" ]]; then
    set -a  # export every variable the file sets
    # shellcheck disable=SC1090
    source "$VDBGUARD_ENV_FILE"
    set +a
fi

mkdir -p "$log_dir"
log="$log_dir/scan-$(date +%F).log"

# One scan at a time: a slow run must not overlap the next night's (like concurrencyPolicy: Forbid).
exec 9>"$log_dir/.nightly-scan.lock"
if command -v flock >/dev/null && ! flock -n 9; then
    echo "nightly-scan: a previous scan is still running; skipped" >&2
    exit 75
fi

status=0
{
    echo "=== $(date "+%Y-%m-%dT%H:%M:%S%z") vdbguard scan --config $config"
    vdbguard scan --config "$config" || status=$?  # `|| status=$?`: set -e must not swallow the code
    echo "=== $(date "+%Y-%m-%dT%H:%M:%S%z") exit $status"
} >>"$log" 2>&1

if [[ $status -ne 0 ]]; then
    echo "nightly-scan: vdbguard scan exited $status (1: findings at or above fail_on; 2: error); see $log" >&2
fi
# Logs older than 30 days go.
find "$log_dir" -maxdepth 1 -name 'scan-*.log' -mtime +30 -delete || true
exit "$status"
