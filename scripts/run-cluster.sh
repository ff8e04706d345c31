#!/usr/bin/env bash
# make run-cluster: haproxy in front of three `seatd serve` processes on the
# private dev Postgres and Redis (scripts/services.sh up dev). Holds, pages
# and WebSockets go through haproxy; any process serves any request
# (sessions live in Postgres, live changes travel over Redis), and writes
# to one event go to one process (scripts/haproxy-config.sh).
#
#   haproxy           SEATD_ADDR (default 127.0.0.1:8080)
#   seatd 1..3        127.0.0.1:18081..18083, ops listeners 127.0.0.1:19091..19093
#   haproxy stats     http://127.0.0.1:8404/stats
#
# haproxy (Debian package) is installed when missing, as services.sh does
# for Postgres. Ctrl-C (or any process exiting) stops the four processes by
# their PIDs. Logs and the haproxy config: .data/cluster-run/.
# SEATD_CLUSTER_PROCS changes the number of seatd processes,
# SEATD_CLUSTER_PORT the first seatd port (its ops port is 1010 above,
# haproxy's stats port 8404 unless SEATD_CLUSTER_STATS_PORT).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$SCRIPT_DIR/.." && pwd -P)
LOG_TAG=run-cluster
# shellcheck source=scripts/lib/common.sh
source "$SCRIPT_DIR/lib/common.sh"

ADDR=${SEATD_ADDR:-127.0.0.1:8080}
[[ $ADDR == :* ]] && ADDR=0.0.0.0$ADDR
PROCS=${SEATD_CLUSTER_PROCS:-3}
BASE=${SEATD_CLUSTER_PORT:-18081}
STATS=${SEATD_CLUSTER_STATS_PORT:-8404}
[[ $BASE =~ ^[0-9]+$ && $STATS =~ ^[0-9]+$ ]] || die "SEATD_CLUSTER_PORT and SEATD_CLUSTER_STATS_PORT must be numbers"
[[ $PROCS =~ ^[1-9]$ ]] || die "SEATD_CLUSTER_PROCS must be 1-9, got '$PROCS'"
DIR=$ROOT/.data/cluster-run
mkdir -p "$DIR"

HAPROXY=$("$SCRIPT_DIR/haproxy.sh")

svc_env=$("$SCRIPT_DIR/services.sh" up dev)
eval "$svc_env"
(cd "$ROOT" && go build -o bin/seatd ./cmd/seatd)
"$ROOT/bin/seatd" migrate >&2
"$ROOT/bin/seatd" seed demo >&2 || log "demo already seeded"

pids=()
stop() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

addrs=()
for i in $(seq 1 "$PROCS"); do
	port=$((BASE + i - 1))
	SEATD_ADDR=127.0.0.1:$port SEATD_OPS_ADDR=127.0.0.1:$((port + 1010)) \
		"$ROOT/bin/seatd" serve >"$DIR/seatd-$i.log" 2>&1 &
	pids+=($!)
	log "seatd $i pid $! on 127.0.0.1:$port (log: .data/cluster-run/seatd-$i.log)"
	addrs+=("127.0.0.1:$port")
done

# Writes to one event go to one process, everything else round robin:
# scripts/haproxy-config.sh says why.
"$SCRIPT_DIR/haproxy-config.sh" "$ADDR" "127.0.0.1:$STATS" "${addrs[@]}" >"$DIR/haproxy.cfg"
"$HAPROXY" -c -q -f "$DIR/haproxy.cfg"
"$HAPROXY" -db -f "$DIR/haproxy.cfg" 2>"$DIR/haproxy.log" &
pids+=($!)
log "haproxy pid $! on $ADDR in front of $PROCS seatd processes (stats: http://127.0.0.1:$STATS/stats)"
wait -n "${pids[@]}"
log "a process exited; stopping the others"
