#!/usr/bin/env bash
# Installs what the tests need beyond Go: Mosquitto, which the tests of
# dss attach start as the broker dss attaches to. Debian's package; run as
# root (CI) or with sudo. Does nothing when it is installed already.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }

if have mosquitto; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-test-deps: no apt-get here; install Mosquitto 2 by hand (the tests of dss attach skip without it)" >&2
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo="sudo"
fi
echo "== installing mosquitto (tests of dss attach)"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends mosquitto >/dev/null
# The package starts a system broker on port 1883; the tests start their
# own on free ports and need none.
if command -v systemctl >/dev/null 2>&1; then
	$sudo systemctl disable --now mosquitto >/dev/null 2>&1 || true
fi
