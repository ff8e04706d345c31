#!/usr/bin/env bash
# A throwaway 3-master Redis Cluster on loopback, for `make test-cluster`.
#
# Usage: scripts/cluster.sh up|down|status
#
#   up      start three cluster-enabled redis-servers (ports 27001-27003,
#           override with SEATD_CLUSTER_PORTS="a b c"; each node's cluster
#           bus listens 10000 below its port, as port+10000 would not fit),
#           join them into one
#           cluster with no replicas, wait until every node reports
#           cluster_state:ok, then print `export REDIS_URL=...` (the
#           comma-separated host:port list seatd takes for a cluster)
#   down    stop the servers (by the PIDs in their pidfiles) and delete
#           their state, so the next `up` builds a fresh cluster
#   status  report each node; exits 0 only if all run and the cluster is ok
#
# Only the export line goes to stdout (eval "$(scripts/cluster.sh up)");
# progress goes to stderr. State lives in .data/cluster/<port>/.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$SCRIPT_DIR/.." && pwd -P)
LOG_TAG=cluster
# shellcheck source=scripts/lib/common.sh
source "$SCRIPT_DIR/lib/common.sh"

CMD=${1:-}
read -r -a PORTS <<<"${SEATD_CLUSTER_PORTS:-27001 27002 27003}"
DIR=$ROOT/.data/cluster

usage() { echo "usage: scripts/cluster.sh up|down|status" >&2; }

for p in "${PORTS[@]}"; do
	if ! [[ $p =~ ^[0-9]+$ ]] || ((p <= 10000 || p > 65535)); then
		die "SEATD_CLUSTER_PORTS must be ports above 10000, got '$p'"
	fi
done
((${#PORTS[@]} >= 3)) || die "a cluster needs at least 3 masters"

addrs() {
	local p out=()
	for p in "${PORTS[@]}"; do out+=("127.0.0.1:$p"); done
	local IFS=,
	echo "${out[*]}"
}

# PID of our redis-server on port $1: from its pidfile, and only if that
# process is a redis-server whose working directory is ours (guards against
# a recycled PID).
node_pid() {
	local pidfile=$DIR/$1/redis.pid pid
	[[ -s $pidfile ]] || return 1
	pid=$(<"$pidfile")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == redis-server ]] || return 1
	[[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$DIR/$1" ]] || return 1
	echo "$pid"
}

cli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }

cluster_ok() {
	local p
	for p in "${PORTS[@]}"; do
		cli "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
	done
}

up() {
	if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
		apt_install redis-server redis-tools
	fi
	local p i fresh=0
	for p in "${PORTS[@]}"; do
		mkdir -p "$DIR/$p"
		if node_pid "$p" >/dev/null; then
			log "node $p already running"
			continue
		fi
		fresh=1
		rm -f "$DIR/$p/nodes.conf" "$DIR/$p/redis.pid"
		log "starting node 127.0.0.1:$p (log: .data/cluster/$p/redis.log)"
		(cd "$DIR/$p" && redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
			--cluster-config-file nodes.conf --cluster-port "$((p - 10000))" --cluster-node-timeout 2000 \
			--save '' --appendonly no --dir "$DIR/$p" --pidfile "$DIR/$p/redis.pid" \
			--logfile "$DIR/$p/redis.log" --daemonize yes 9>&- >&2)
		for ((i = 0; i < 100; i++)); do
			node_pid "$p" >/dev/null && [[ $(cli "$p" ping 2>/dev/null) == PONG ]] && break
			sleep 0.1
		done
		((i < 100)) || die "node $p did not answer PING within 10s (see $DIR/$p/redis.log)"
	done
	if ((fresh)) && ! cluster_ok; then
		if [[ $(cli "${PORTS[0]}" cluster info | sed -n 's/^cluster_known_nodes:\([0-9]*\).*/\1/p') != "${#PORTS[@]}" ]]; then
			log "creating the cluster ($(addrs))"
			local hosts=()
			for p in "${PORTS[@]}"; do hosts+=("127.0.0.1:$p"); done
			redis-cli --cluster create "${hosts[@]}" --cluster-replicas 0 --cluster-yes >&2
		fi
	fi
	for ((i = 0; i < 100; i++)); do
		cluster_ok && break
		sleep 0.1
	done
	((i < 100)) || die "cluster not ok after 10s; run 'scripts/cluster.sh down' and retry"
	log "cluster ok on $(addrs)"
	printf "export REDIS_URL='%s'\n" "$(addrs)"
}

down() {
	local p pid i
	for p in "${PORTS[@]}"; do
		if pid=$(node_pid "$p"); then
			log "stopping node $p (pid $pid)"
			kill -TERM "$pid"
			for ((i = 0; i < 100; i++)); do
				[[ -e /proc/$pid ]] || break
				sleep 0.1
			done
			if node_pid "$p" >/dev/null; then
				log "node $p did not exit on SIGTERM; sending SIGKILL to $pid"
				kill -KILL "$pid"
			fi
		fi
		rm -rf "${DIR:?}/$p"
	done
	rmdir "$DIR" 2>/dev/null || true
}

status() {
	local p pid rc=0
	for p in "${PORTS[@]}"; do
		if pid=$(node_pid "$p"); then
			echo "node 127.0.0.1:$p: running (pid $pid)"
		else
			echo "node 127.0.0.1:$p: stopped"
			rc=1
		fi
	done
	if ((rc == 0)) && cluster_ok; then echo "cluster: ok"; else
		echo "cluster: not ok"
		rc=1
	fi
	return $rc
}

case $CMD in
up) up ;;
down) down ;;
status) status ;;
-h | --help | help) usage ;;
*)
	usage
	exit 2
	;;
esac
