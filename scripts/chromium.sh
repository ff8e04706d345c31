#!/usr/bin/env bash
# Print the path of a Chromium binary for browser tests, installing Debian's
# `chromium` package first if it is missing.
#
# Usage: SEATD_CHROMIUM="$(scripts/chromium.sh)"
# Only the path goes to stdout; progress goes to stderr.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
LOG_TAG=chromium
# shellcheck source=scripts/lib/common.sh
source "$SCRIPT_DIR/lib/common.sh"

CHROMIUM=/usr/bin/chromium

if [[ ! -x $CHROMIUM ]]; then
	apt_install chromium
	[[ -x $CHROMIUM ]] || die "chromium installed but $CHROMIUM is missing"
fi
echo "$CHROMIUM"
