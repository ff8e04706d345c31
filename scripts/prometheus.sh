#!/usr/bin/env bash
# Prometheus for seatd: install Debian's package when missing, check and
# unit-test the alert rules, or run a private Prometheus scraping seatd.
#
# Usage:
#   scripts/prometheus.sh install        install prometheus + promtool if missing;
#                                        prints the prometheus binary's path
#   scripts/prometheus.sh test-rules     promtool check + test the rules in deploy/prometheus
#   scripts/prometheus.sh run TARGET PORT
#                                        run Prometheus in the foreground on 127.0.0.1:PORT,
#                                        scraping seatd's ops listener at TARGET (host:port),
#                                        with deploy/prometheus/alerts.yml loaded; data in
#                                        .data/prometheus/
#
# The package's own service is never started (we run the binary ourselves,
# on a private port, with data under .data/).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$SCRIPT_DIR/.." && pwd -P)
LOG_TAG=prometheus
# shellcheck source=scripts/lib/common.sh
source "$SCRIPT_DIR/lib/common.sh"

ensure_prometheus() {
	if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
		return 0
	fi
	# Without recommends: the package recommends node-exporter and friends.
	apt_install --no-install-recommends prometheus
	command -v prometheus >/dev/null 2>&1 || die "prometheus installed but not on PATH"
	command -v promtool >/dev/null 2>&1 || die "promtool installed but not on PATH"
}

# config TARGET RULES: the scrape config for one seatd, on stdout.
config() {
	sed -e "s|@TARGET@|$1|g" -e "s|@RULES@|$2|g" "$ROOT/deploy/prometheus/prometheus.yml"
}

case ${1:-} in
install)
	ensure_prometheus
	command -v prometheus
	;;
test-rules)
	ensure_prometheus
	cd "$ROOT/deploy/prometheus"
	promtool check rules alerts.yml >&2
	promtool test rules alerts_test.yml >&2
	;;
run)
	[[ $# -eq 3 ]] || die "usage: scripts/prometheus.sh run TARGET PORT"
	target=$2 port=$3
	ensure_prometheus
	dir=$ROOT/.data/prometheus
	mkdir -p "$dir/tsdb"
	config "$target" "$ROOT/deploy/prometheus/alerts.yml" >"$dir/prometheus.yml"
	promtool check config "$dir/prometheus.yml" >&2
	log "Prometheus on http://127.0.0.1:$port scraping $target (data: .data/prometheus)"
	exec prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
		--web.listen-address="127.0.0.1:$port" --storage.tsdb.retention.time=2d
	;;
*)
	sed -n '2,15p' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac
