#!/usr/bin/env bash
# Installs Debian's chromium, which the web console's browser test
# (internal/console) drives, when no Chromium or Chrome is on the PATH.
# .ci/run calls it; CI runs as root on Debian. Elsewhere it says what to
# do and leaves the test to skip.
set -euo pipefail
for b in chromium chromium-browser google-chrome google-chrome-stable; do
	if command -v "$b" >/dev/null 2>&1; then
		echo "browser for the console test: $(command -v "$b")"
		exit 0
	fi
done
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "no Chromium found and cannot install it here (needs root and apt-get): the console's browser test will skip; install chromium to run it"
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "installed $(command -v chromium)"
