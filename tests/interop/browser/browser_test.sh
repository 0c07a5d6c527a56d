#!/usr/bin/env bash
# //tests/interop:browser_test: headless Chromium against our server on
# kernel UDP (127.0.0.1 and [::1]), every check of browser_check.py's "udp"
# mode. Debian's python3-websocket is installed for /usr/bin/python3 only,
# so the driver runs with it whatever python3 comes first on PATH.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 DATAPLANE BROWSER_CHECK_PY" >&2; exit 2; }
[[ -x /usr/bin/python3 ]] || { echo "FAIL: /usr/bin/python3 missing (Debian's python3)"; exit 1; }
command -v chromium >/dev/null || { echo "FAIL: chromium missing: run tools/setup.sh"; exit 1; }
exec /usr/bin/python3 "$2" udp --dataplane="$1"
