// Package chaos is seatd's fault-injection suite. It has no code of its
// own outside its tests: they start several real `seatd serve` processes
// (built from cmd/seatd without the race detector) against one Postgres and
// one Redis reached through in-process toxiproxy proxies, drive buyers over
// the JSON API and watchers over the live sockets, break things one at a
// time — Redis killed, slow, black-holed, reset or flushed, a seatd process
// killed, Postgres connections reset or Postgres restarted — and then check
// in SQL and against the recorded histories that nothing a buyer was told
// turned out false.
//
// `go test ./internal/chaos/` runs a short version (a few seconds per
// fault); `make chaos` runs the full one (-chaos.full). The Redis Cluster
// check runs under `make test-cluster`, which sets SEATD_CHAOS_CLUSTER.
package chaos
