#!/usr/bin/env bash
# Print the path of haproxy, installing Debian's `haproxy` package first if
# it is missing (make run-cluster and the bench's multi-process phase).
#
# Usage: HAPROXY="$(scripts/haproxy.sh)"
# Only the path goes to stdout; progress goes to stderr.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
LOG_TAG=haproxy
# shellcheck source=scripts/lib/common.sh
source "$SCRIPT_DIR/lib/common.sh"

command -v haproxy >/dev/null || apt_install haproxy
command -v haproxy
