#!/usr/bin/env bash
# Print the haproxy configuration for seatd processes: make run-cluster
# (scripts/run-cluster.sh) and the bench's multi-process phase both use it,
# so the bench measures what an operator runs.
#
# Usage: scripts/haproxy-config.sh LISTEN STATS|- SERVER...
#   LISTEN  address haproxy serves on, e.g. 127.0.0.1:8080
#   STATS   address of haproxy's stats page, or - for none
#   SERVER  host:port of each `seatd serve` process
#
# Writes to one event (POST, PUT, PATCH, DELETE under /api/v1/events/ID/,
# /e/ID/ and /box-office/events/ID/) go to one process chosen by a
# consistent hash of the event's ID: that process's hold batcher then
# carries the event's holds together, fewer and fuller statements, and no
# two processes race for the same rows (docs/operating.md, "Several
# processes"). Everything else, pages and live sockets included, goes round
# robin, so one popular event's readers still spread over every process.
# Placement is only for speed: any process serves any request correctly,
# and when a process leaves the rotation its events move to the others.
set -euo pipefail

[[ $# -ge 3 ]] || { echo "usage: $0 LISTEN STATS|- SERVER..." >&2; exit 2; }
listen=$1 stats=$2
shift 2

servers="" tracked="" i=0
for addr in "$@"; do
	i=$((i + 1))
	servers+="    server seatd$i $addr check
"
	tracked+="    server seatd$i $addr track seatd/seatd$i
"
done

cat <<CFG
global
    # Each connection takes two descriptors (client and server side).
    maxconn 9000
    log stderr format short local0 warning

defaults
    mode http
    log global
    option httplog
    option http-keep-alive
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout http-request 10s
    timeout tunnel 1h
    timeout client-fin 5s

frontend seatd
    bind $listen
    option forwardfor
    acl write method POST PUT PATCH DELETE
    http-request set-var(txn.event) path,field(5,/) if write { path_reg ^/api/v1/events/[^/]+/ }
    http-request set-var(txn.event) path,field(3,/) if write { path_reg ^/e/[^/]+/ }
    http-request set-var(txn.event) path,field(4,/) if write { path_reg ^/box-office/events/[^/]+/ }
    use_backend seatd_by_event if { var(txn.event) -m found }
    default_backend seatd

# Round robin, /readyz health checks: a process whose Postgres is gone
# leaves the rotation (Redis down only degrades it). A WebSocket is a
# tunnel once upgraded; the browser reconnects to any process when it
# closes.
backend seatd
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 1s fall 2 rise 2
$servers
# The same processes, chosen by the event's ID; their health is the
# round-robin backend's.
backend seatd_by_event
    balance hash var(txn.event)
    hash-type consistent
$tracked
CFG

if [[ $stats != - ]]; then
	cat <<CFG
listen stats
    bind $stats
    stats enable
    stats uri /stats
CFG
fi
