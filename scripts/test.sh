#!/usr/bin/env bash
# Full test run, as used by `make test` and CI:
#   0. prepare: the Go builds the services and the source checks need
#      (Mailpit, stripe-mock, templ, the project's modules) run in the
#      background while the system packages (Postgres, Redis, Chromium,
#      Prometheus) and npm's install, which wait on the network and dpkg
#      more than on the CPU; on a machine that has them all this takes a
#      second
#   1. start the test-profile Postgres, Redis and Mailpit (scripts/services.sh up test)
#   2. make lint-source (generated files current, gofmt), and promtool
#      checks and unit-tests the alert rules (deploy/prometheus)
#   3. compile every package and test package with -race, once
#   4. go test -race over all packages but internal/chaos, then the short
#      chaos run alone (see below), with DATABASE_URL, REDIS_URL,
#      SEATD_SMTP_URL, SEATD_MAILPIT_URL, SEATD_CHROMIUM and SEATD_PROMETHEUS exported (Prometheus is installed
#      when missing: the alert test starts one). Beside it, at the lowest
#      CPU priority: make lint-analyse (go vet, staticcheck and gosec,
#      building the last two first) and the fuzzing test binaries of
#      step 5, taking only the CPU go test leaves.
#   5. a short fuzz run for each entry of FUZZ_TARGETS ("pkg/path:FuzzName ..."),
#      from one instrumented test binary per package
# The test services are stopped on exit, whether the run passed or not.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"
LOG_TAG="test"
# shellcheck source=scripts/lib/common.sh
source scripts/lib/common.sh

MAKE=${MAKE:-make}
FUZZ_TARGETS=${FUZZ_TARGETS:-}
# A count of executions, not a duration: with a duration, an input still
# running through the real handlers when the time is up fails the run with
# "context deadline exceeded" (the fuzz engine's, not the target's).
FUZZ_TIME=${FUZZ_TIME:-1000x}

# The fuzzing test binaries (step 5) are built here and removed on exit.
FUZZ_BIN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/seatd-fuzz.XXXXXX")
# The trap runs in this shell, whose environment we never modify below: if we
# exported the URLs printed by `up` here, `down` would take them as "external
# service, hands off" and leave the test instances running.
builds=
# phase NAME: a phase begins now. On exit, whether the run passed or not,
# the seconds of each phase are printed last, where a log's tail shows them.
PHASES=$FUZZ_BIN_DIR/phases
phase() { echo "$EPOCHSECONDS $1" >>"$PHASES"; log "$1"; }
phase_times() {
	[[ -s $PHASES ]] || return 0
	echo "$EPOCHSECONDS end" >>"$PHASES"
	local line
	line=$(awk 'NR > 1 { printf "%s%s %ds", sep, name, $1 - t; sep = ", " } { t = $1; name = $2 }' "$PHASES")
	log "time by phase: $line (total $((EPOCHSECONDS - SEATD_LOG_T0))s)"
}
trap '[[ -z $builds ]] || kill "$builds" 2>/dev/null || true; [[ ! -s $PHASES ]] || echo "$EPOCHSECONDS stop-services" >>"$PHASES"; scripts/services.sh down test || true; phase_times; rm -rf "$FUZZ_BIN_DIR"' EXIT
# Turn Ctrl-C / SIGTERM into a normal exit so the EXIT trap runs.
trap 'exit 130' INT
trap 'exit 143' TERM
# Every log line of this run and of the scripts it calls says the seconds
# since here.
SEATD_LOG_T0=$EPOCHSECONDS
export SEATD_LOG_T0

phase prepare
log "Go builds in the background; system packages and npm meanwhile"
builds_log=$FUZZ_BIN_DIR/builds.log
(go mod download && "$MAKE" --no-print-directory -j2 mailpit stripe-mock templ) >"$builds_log" 2>&1 &
builds=$!
scripts/services.sh install test
# Separate assignments so a failing script stops the run (export would mask it).
SEATD_CHROMIUM=${SEATD_CHROMIUM:-$(scripts/chromium.sh)}
SEATD_PROMETHEUS=${SEATD_PROMETHEUS:-$(scripts/prometheus.sh install)}
# haproxy for the balancer configuration's test (cmd/seatbench).
scripts/haproxy.sh >/dev/null
export SEATD_CHROMIUM SEATD_PROMETHEUS
"$MAKE" --no-print-directory node_modules/.package-lock.json
if ! wait "$builds"; then
	builds=
	cat "$builds_log" >&2
	die "the Go builds failed (Mailpit, stripe-mock, templ; output above)"
fi
builds=
log "prepared"

phase services
svc_env=$(scripts/services.sh up test)

(
	eval "$svc_env"

	phase lint-source
	"$MAKE" --no-print-directory lint-source

	phase alert-rules
	scripts/prometheus.sh test-rules

	# Every package and test package, compiled with -race once, before go
	# test and lint-analyse read it (see the Makefile).
	phase race-build
	"$MAKE" --no-print-directory race-build

	# Beside go test, at the lowest CPU priority, so they take only the
	# CPU go test leaves (while browser tests wait on Chromium, others on
	# timers) and do not slow it: make lint-analyse (it builds staticcheck
	# and gosec first), then the fuzzing test binaries, one per fuzzed
	# package, each running all of that package's targets (`go test -fuzz`
	# would build and link one anew per target).
	#
	# The fuzzing binaries are built with -race, on the build go test
	# uses, and with coverage instrumentation (-d=libfuzzer, the compiler
	# flag `go test -fuzz` adds to every package it builds) for seatd's own
	# packages only: the fuzzer is guided by coverage of the code under
	# test, and no dependency is compiled a second time. `go test -fuzz`
	# instruments every package, which compiled web's whole dependency tree
	# once more (about 320 CPU-seconds, against about 60). The fuzzing tag
	# leaves out web's browser tests, and its test clients pass answers
	# through without the OpenAPI check (web/openapi_fuzzing_test.go): the
	# fuzz targets check their own invariants.
	mod=$(go list -m)
	declare -A fuzz_names=()
	pkgs=()
	for target in $FUZZ_TARGETS; do
		pkg=${target%%:*}
		name=${target#*:}
		[[ $pkg != "$target" && -n $pkg && -n $name ]] || die "bad FUZZ_TARGETS entry '$target' (want pkg/path:FuzzName)"
		pkg=${pkg#./}
		[[ -n ${fuzz_names[$pkg]:-} ]] || pkgs+=("$pkg")
		fuzz_names[$pkg]+=" $name"
	done
	fuzz_bin() { echo "$FUZZ_BIN_DIR/$(tr / _ <<<"$1").fuzz.test"; }
	fuzz_builds_log=$FUZZ_BIN_DIR/fuzz-builds.log
	(
		nice -n 19 "$MAKE" --no-print-directory -j2 lint-analyse || { echo "make lint-analyse failed"; exit 1; }
		for pkg in "${pkgs[@]}"; do
			nice -n 19 go test -c -race -tags fuzzing -gcflags="$mod/...=-d=libfuzzer" -o "$(fuzz_bin "$pkg")" "./$pkg" || exit
		done
	) >"$fuzz_builds_log" 2>&1 &
	fuzz_builds=$!
	# A failing go test ends this subshell: the background work goes with
	# it, every process it started.
	kill_tree() {
		local child
		for child in $(pgrep -P "$1"); do kill_tree "$child"; done
		kill "$1" 2>/dev/null || true
	}
	trap 'kill_tree "$fuzz_builds"' EXIT

	phase go-test
	log "go test (DATABASE_URL=$DATABASE_URL REDIS_URL=$REDIS_URL)"
	# The short chaos run goes last and alone: it measures convergence
	# (maps within 1 s, registries within 2 s) with three seatd processes,
	# proxies and its load on the machine's cores, as make chaos does.
	# Beside the browser tests of another package, CPU starvation made the
	# caches lag Postgres for expiries beyond those bounds.
	# go test starts the packages in the order given, at most -p (the
	# cores) at once. The two longest (web with its browser tests, then
	# the hold engine's expiry tests) go first, so the many short packages
	# fill the other core beside them instead of all running before them.
	first=("$mod/web" "$mod/internal/hold")
	go test -race -count=1 -timeout 12m "${first[@]}" \
		$(go list ./... | grep -v -x -e "$mod/internal/chaos" -e "${first[0]}" -e "${first[1]}")
	phase lint-analyse-and-fuzz-build-wait
	if ! wait "$fuzz_builds"; then
		cat "$fuzz_builds_log" >&2
		die "make lint-analyse or building the fuzzing test binaries failed (output above)"
	fi
	cat "$fuzz_builds_log" >&2
	trap - EXIT
	phase short-chaos
	# The short run's seatd processes are built with -race: go test has
	# just compiled every package they need that way, so this only links,
	# where a build without it would compile them all once more. (make
	# chaos, the full run, builds them without -race.)
	go build -race -o "$FUZZ_BIN_DIR/seatd" ./cmd/seatd
	SEATD_CHAOS_BIN=$FUZZ_BIN_DIR/seatd go test -race -count=1 -timeout 8m ./internal/chaos/

	# Each binary runs in its package's folder (seed corpora in
	# testdata/fuzz) with the cache folder `go test -fuzz` uses, so what one
	# run finds is where the next one (either way) looks.
	# The coverage instrumentation comes from a compiler flag the go
	# command passes itself (see the build above): were it ever to stop
	# working, the fuzzer would say so and run unguided, so that warning
	# fails the run.
	fuzz_cache=$(go env GOCACHE)/fuzz/$mod
	fuzz_log=$FUZZ_BIN_DIR/fuzz.log
	phase fuzz
	for pkg in "${pkgs[@]}"; do
		read -ra names <<<"${fuzz_names[$pkg]}"
		for name in "${names[@]}"; do
			log "fuzz $name in ./$pkg: $FUZZ_TIME"
			(cd "$pkg" && "$(fuzz_bin "$pkg")" -test.run='^$' -test.fuzz="^${name}\$" -test.fuzztime="$FUZZ_TIME" \
				-test.fuzzcachedir="$fuzz_cache/$pkg" -test.paniconexit0) 2>&1 | tee "$fuzz_log"
			if grep -q 'not built with coverage instrumentation' "$fuzz_log"; then
				die "$name ran without coverage guidance: the fuzzing binary of ./$pkg is not instrumented"
			fi
		done
	done
	log "passed"
)
