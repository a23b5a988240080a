#!/usr/bin/env bash
# Headless Chromium for the HTML report test (tests/reports/test_html.py).
#   bash scripts/chromium.sh install   # idempotent: a no-op when `chromium` is already on PATH
set -euo pipefail

usage() { echo "usage: $0 install" >&2; exit 2; }

install() {
    if command -v chromium >/dev/null 2>&1; then
        echo "chromium already installed: $(chromium --version 2>/dev/null || echo unknown version)"
        return 0
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || { echo "not root and no sudo: install chromium as root" >&2; exit 1; }
        sudo=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    # Update the lists only when apt does not know the package yet (a fresh image has none).
    if ! apt-cache show chromium >/dev/null 2>&1; then
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
    chromium --version
}

case "${1:-}" in
    install) install ;;
    *) usage ;;
esac
