# seatd developer entry points. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
# Each recipe runs in a single shell, so `eval`ed env vars carry across lines.
.ONESHELL:
.DEFAULT_GOAL := help

# ---------------------------------------------------------------------------
# Pinned Go tools, installed into ./.bin. templ, staticcheck and gosec are
# pinned in scripts/tools/go.mod, a module of their own that builds them
# together: they share golang.org/x/tools, compiled once. Mailpit and
# stripe-mock, services of the test profile (scripts/services.sh), are
# installed by version, each with a stamp per pinned version, so bumping a
# pin reinstalls it. Go keeps the compiled packages in its build cache,
# which every clone on the machine shares, so only a machine's first run
# compiles them and a fresh clone only links them.
#
# Mailpit, the mail server of dev and tests (scripts/services.sh); the
# module proxy serves v1.33.1.
MAILPIT_VERSION := v1.33.1
# stripe-mock: Stripe's API server, answering from Stripe's API description
# (no state, no webhooks, any sk_test_ key). scripts/services.sh runs it for
# the test and bench profiles, so every Stripe call seatd makes is checked.
STRIPE_MOCK_VERSION := v0.203.0

BIN_DIR := $(CURDIR)/.bin
TEMPL := $(BIN_DIR)/templ
STATICCHECK := $(BIN_DIR)/staticcheck
GOSEC := $(BIN_DIR)/gosec
TOOLS_MOD := scripts/tools/go.mod scripts/tools/go.sum
# GOFLAGS is cleared for the tools' own builds: lint-analyse runs the
# analysers with GOFLAGS=-race, which must not apply to building them.
$(TEMPL): $(TOOLS_MOD)
	cd scripts/tools && GOFLAGS= go build -o $@ github.com/a-h/templ/cmd/templ
$(STATICCHECK): $(TOOLS_MOD)
	cd scripts/tools && GOFLAGS= go build -o $@ honnef.co/go/tools/cmd/staticcheck
$(GOSEC): $(TOOLS_MOD) scripts/tools/gosec/main.go
	cd scripts/tools && GOFLAGS= go build -o $@ ./gosec
# go-tool NAME,PACKAGE,VERSION: the rule installing PACKAGE@VERSION as
# $(BIN_DIR)/NAME, and the stamp variable NAME_STAMP naming its target.
define go-tool
$(1)_STAMP := $(BIN_DIR)/.$(1)-$(3)
$(BIN_DIR)/.$(1)-$(3):
	GOBIN=$(BIN_DIR) go install $(2)@$(3)
	touch $$@
endef
$(eval $(call go-tool,mailpit,github.com/axllent/mailpit,$(MAILPIT_VERSION)))
$(eval $(call go-tool,stripe-mock,github.com/stripe/stripe-mock,$(STRIPE_MOCK_VERSION)))

# Short fuzz runs done by `make test`, as pkg/path:FuzzName, space separated,
# e.g. internal/hold:FuzzDelta. Each runs for FUZZ_TIME (default 1000x: 1 000 executions).
FUZZ_TARGETS := internal/chart:FuzzChart internal/ticket:FuzzVerify web/api:FuzzDecode web:FuzzLogin web:FuzzSignup web:FuzzHold web:FuzzPurchase web:FuzzStaffRelease web:FuzzStaffLookups web:FuzzInvitations

.PHONY: help tools templ mailpit stripe-mock generate templates css services-up services-down \
	services-up-test services-down-test build run run-cluster run-observe test-rules lint lint-source lint-analyse race-build test vendor-js

help:
	@cat <<-'EOF'
	make tools              build templ, staticcheck and gosec into ./.bin (pinned in scripts/tools/go.mod)
	make mailpit            install the pinned Mailpit into ./.bin (services.sh does when needed)
	make stripe-mock        install the pinned stripe-mock into ./.bin (services.sh does when needed)
	make generate           templ generate (views/) + css
	make css                build static/css/app.css with Tailwind
	make build              go build -o bin/seatd ./cmd/seatd
	make run                dev services (Postgres, Redis, Mailpit) + migrate + seed demo + serve on :8080
	make run-cluster        haproxy on :8080 in front of three seatd processes (dev services)
	make run-observe        make run + Prometheus on 127.0.0.1:29090 scraping seatd, alerts loaded
	make test-rules         promtool check + unit tests of deploy/prometheus/alerts.yml
	make lint               gofmt, go vet, staticcheck, gosec, generated files current
	make bench              the load generator (bench-quick: every phase, smaller)
	make perf-doc           docs/performance.md from bench/results/latest.json
	make bench-compare      two result files side by side: A=... B=... (baseline, latest)
	make test               test services + lint + go test -race (+ fuzz), services stopped after
	make services-up        start dev Postgres/Redis/Mailpit   (services-down to stop)
	make services-up-test   start test Postgres/Redis/Mailpit  (services-down-test to stop)
	EOF

# ---------------------------------------------------------------------------
# Tools

# templ first, then the analysers, which reuse the golang.org/x/tools it
# compiled. Where they are current this takes a second.
tools: templ
	$(MAKE) --no-print-directory -j2 $(STATICCHECK) $(GOSEC)

templ: $(TEMPL)

# Built on demand by scripts/services.sh (test and bench profiles).
stripe-mock: $(stripe-mock_STAMP)

mailpit: $(mailpit_STAMP)

# ---------------------------------------------------------------------------
# Code generation

# Templates first: Tailwind scans the generated *_templ.go files for classes too.
generate: templates
	$(MAKE) --no-print-directory css

# Compiles views/**/*.templ into *_templ.go next to each template.
templates: $(TEMPL)
	if [[ -d views ]]; then
		$(TEMPL) generate -path views
	fi

# Reinstall node_modules only when package.json / package-lock.json change
# (npm writes node_modules/.package-lock.json on every install).
node_modules/.package-lock.json: package.json $(wildcard package-lock.json)
	if [[ -f package-lock.json ]]; then
		npm ci --no-audit --no-fund
	else
		npm install --no-audit --no-fund
	fi
	touch $@

# The locally installed binary (what `npx tailwindcss` would run), called
# directly so nothing is ever fetched at build time.
# BROWSERSLIST_IGNORE_OLD_DATA silences a "caniuse-lite is outdated" nag.
css: node_modules/.package-lock.json
	BROWSERSLIST_IGNORE_OLD_DATA=1 ./node_modules/.bin/tailwindcss \
		-c tailwind.config.js -i static/css/input.css -o static/css/app.css --minify

# Browser libraries are vendored into static/js under their versions, from
# the exact npm packages pinned in package.json (committed; no CDN).
HTMX_VERSION := 2.0.11
HTMX_WS_VERSION := 2.0.4
vendor-js: node_modules/.package-lock.json
	cp node_modules/htmx.org/dist/htmx.min.js static/js/htmx-$(HTMX_VERSION).min.js
	cp node_modules/htmx-ext-ws/dist/ws.min.js static/js/htmx-ext-ws-$(HTMX_WS_VERSION).min.js

# ---------------------------------------------------------------------------
# Services (see scripts/services.sh; data in .data/<profile>/)

services-up:
	scripts/services.sh up dev

services-down:
	scripts/services.sh down dev

services-up-test:
	scripts/services.sh up test

services-down-test:
	scripts/services.sh down test

# ---------------------------------------------------------------------------
# Build and run

build:
	go build -o bin/seatd ./cmd/seatd

# SEATD_ADDR may be overridden from the environment.
# (Assign first, then eval: `eval "$$(cmd)"` would hide a failing cmd.)
run: build
	svc_env=$$(scripts/services.sh up dev)
	eval "$$svc_env"
	bin/seatd migrate
	bin/seatd seed demo
	if [[ -n $${SEATD_MAILPIT_URL:-} ]]; then
		echo "mail: $${SEATD_MAILPIT_URL/127.0.0.1/localhost} (every message seatd sends, for any address)"
	fi
	export SEATD_ADDR="$${SEATD_ADDR:-:8080}"
	exec bin/seatd serve

# make run with a private Prometheus (scripts/prometheus.sh, Debian's
# package, installed when missing): seatd's ops listener on
# 127.0.0.1:$(OBSERVE_OPS_PORT), Prometheus on 127.0.0.1:$(OBSERVE_PROM_PORT)
# scraping it with deploy/prometheus/alerts.yml loaded, data in
# .data/prometheus. Both are stopped by PID when either exits or on Ctrl-C.
OBSERVE_OPS_PORT ?= 29091
OBSERVE_PROM_PORT ?= 29090
run-observe: build
	svc_env=$$(scripts/services.sh up dev)
	eval "$$svc_env"
	scripts/prometheus.sh install >/dev/null
	bin/seatd migrate
	bin/seatd seed demo
	export SEATD_ADDR="$${SEATD_ADDR:-:8080}"
	export SEATD_OPS_ADDR=127.0.0.1:$(OBSERVE_OPS_PORT)
	pids=()
	trap 'kill "$${pids[@]}" 2>/dev/null || true; wait' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	bin/seatd serve &
	pids+=($$!)
	scripts/prometheus.sh run "$$SEATD_OPS_ADDR" $(OBSERVE_PROM_PORT) &
	pids+=($$!)
	echo "seatd on $$SEATD_ADDR, ops on $$SEATD_OPS_ADDR, Prometheus on http://127.0.0.1:$(OBSERVE_PROM_PORT) (alerts: /alerts)" >&2
	wait -n "$${pids[@]}"

test-rules:
	scripts/prometheus.sh test-rules

# haproxy (Debian package, installed when missing) in front of three
# `seatd serve` processes on the dev services; see scripts/run-cluster.sh.
run-cluster:
	scripts/run-cluster.sh

# ---------------------------------------------------------------------------
# Lint

# Go files to gofmt-check: everything except generated code (the standard
# "// Code generated ... DO NOT EDIT." header, which templ output carries).
GO_FILES_CMD := find . \( -path ./.git -o -path ./node_modules -o -path ./.data -o -path ./.bin \) -prune \
	-o -type f -name '*.go' ! -name '*_templ.go' -print \
	| xargs -r grep -L '^// Code generated .* DO NOT EDIT\.$$'

# Checksums of everything `make generate` writes.
GENERATED_SUMS_CMD := find . \( -path ./.git -o -path ./node_modules -o -path ./.data -o -path ./.bin \) -prune \
	-o -type f \( -name '*_templ.go' -o -path ./static/css/app.css \) -print0 \
	| sort -z | xargs -0r sha256sum

# Every package and test package compiled with -race, by one go command:
# go test and the analysers of lint-analyse (run with GOFLAGS=-race) read
# this build, and several go commands building the same packages at once
# would each compile them. Where it is current this takes seconds.
race-build:
	GOFLAGS="-race $${GOFLAGS:-}" go list -export -deps -test ./... >/dev/null

# make lint is lint-source (generated files current, gofmt) then
# lint-analyse (go vet, staticcheck, gosec). make test runs them apart: the
# source checks before go test, the analysers beside it (scripts/test.sh).
lint: lint-source
	$(MAKE) --no-print-directory lint-analyse

# Generated files are checked first: stale or missing ones would otherwise
# surface as confusing vet/compile errors. The check regenerates and compares
# checksums rather than running `git diff`, so it also catches generated files
# missing from git entirely and doesn't trip over current-but-unstaged edits.
# (`@` on the first line silences the whole script under .ONESHELL.)
lint-source:
	@echo "lint: templ's generator and runtime are one version" >&2
	runtime=$$(go list -m -f '{{.Version}}' github.com/a-h/templ)
	generator=$$(cd scripts/tools && go list -m -f '{{.Version}}' github.com/a-h/templ)
	if [[ $$runtime != "$$generator" ]]; then
		echo "lint: github.com/a-h/templ is $$runtime in go.mod but $$generator in scripts/tools/go.mod" >&2
		exit 1
	fi
	echo "lint: generated files are current" >&2
	before=$$($(GENERATED_SUMS_CMD))
	$(MAKE) --no-print-directory generate >&2
	after=$$($(GENERATED_SUMS_CMD))
	if [[ $$before != "$$after" ]]; then
		echo "lint: generated files were out of date (changed by 'make generate'):" >&2
		diff <(echo "$$before") <(echo "$$after") >&2 || true
		echo "lint: run 'make generate' and commit *_templ.go and static/css/app.css" >&2
		exit 1
	fi
	echo "lint: gofmt" >&2
	files=$$($(GO_FILES_CMD) || true)
	if [[ -n $$files ]]; then
		unformatted=$$(gofmt -l $$files)
		if [[ -n $$unformatted ]]; then
			echo "lint: these files need gofmt -w:" >&2
			echo "$$unformatted" >&2
			exit 1
		fi
	fi

# The three analysers run at once: each loads and type-checks the whole
# module with long single-threaded stretches, so together they take
# little longer than staticcheck alone. Their output is shown per tool.
# They read the dependencies' export data, which go builds for them
# (staticcheck and gosec through `go list -export`): with -race that is
# the same build `go test -race` uses, so on a fresh machine the
# dependency tree is compiled once rather than twice.
lint-analyse: $(STATICCHECK) $(GOSEC) race-build
	@echo "lint: go vet, staticcheck and gosec" >&2
	out=$$(mktemp -d)
	trap 'rm -rf "$$out"' EXIT
	export GOFLAGS="-race $${GOFLAGS:-}"
	go vet ./... >"$$out/vet" 2>&1 &
	vet=$$!
	$(STATICCHECK) ./... >"$$out/staticcheck" 2>&1 &
	staticcheck=$$!
	# cmd/seatbench is the load generator: starting the project's own
	# processes and reading its own result files is its job, which is what
	# gosec's subprocess and file rules flag. It never ships in seatd.
	$(GOSEC) -exclude-dir=cmd/seatbench ./... >"$$out/gosec" 2>&1 &
	gosec=$$!
	failed=
	for tool in vet staticcheck gosec; do
		if ! wait "$${!tool}"; then
			echo "lint: $$tool found problems:" >&2
			cat "$$out/$$tool" >&2
			failed=1
		fi
	done
	[[ -z $$failed ]]
	echo "lint: ok" >&2

# ---------------------------------------------------------------------------
# Test

test:
	FUZZ_TARGETS="$(FUZZ_TARGETS)" scripts/test.sh

# ---------------------------------------------------------------------------
# Benchmarks (cmd/seatbench; see bench/README.md). Each run brings up the
# bench Postgres/Redis (scripts/services.sh up bench), builds and starts its
# own seatd processes, stops them by PID and stops the services at the end.
# Results: one table on stdout, bench/results/latest.json and its table in
# latest.txt (a run replaces both; git keeps the earlier ones). Extra seatbench
# flags go in BENCH_FLAGS, e.g. make bench BENCH_FLAGS="-only holds -levels 200".

.PHONY: bench bench-quick perf-doc bench-compare

bench:
	go run ./cmd/seatbench $(BENCH_FLAGS)

bench-quick:
	go run ./cmd/seatbench -quick $(BENCH_FLAGS)

# docs/performance.md is generated: bench/performance.md.tmpl (the
# hand-written text) around the table of bench/results/latest.json. It is
# committed, and a test of cmd/seatbench (TestPerformanceDocCurrent)
# checks that it is current.
perf-doc:
	go run ./cmd/seatbench perf-doc -results bench/results/latest.json \
		-template bench/performance.md.tmpl -out docs/performance.md

# Two result files side by side, every numeric figure they share with B/A:
#   make bench-compare A=bench/results/baseline.json B=bench/results/latest.json
# (those two are the defaults; COMPARE_FLAGS=-all lists figures only one has).
A ?= bench/results/baseline.json
B ?= bench/results/latest.json
bench-compare:
	go run ./cmd/seatbench compare $(COMPARE_FLAGS) $(A) $(B)

# ---------------------------------------------------------------------------
# Chaos (internal/chaos; see its doc.go). Both targets bring up the test
# Postgres/Redis (or use DATABASE_URL / REDIS_URL when set) and stop what
# they started, whatever the outcome; the tests build and start their own
# seatd processes, proxies and private Redis and stop them by PID.

.PHONY: chaos test-cluster

# The full fault suite (-chaos.full: longer faults, all of them, Postgres
# restarted on a private instance, known engine bugs fail), plus the bug
# demonstrations, process restart and graceful shutdown tests.
chaos:
	trap 'scripts/services.sh down test || true' EXIT
	svc_env=$$(scripts/services.sh up test)
	(
		eval "$$svc_env"
		go test -count=1 -v -timeout 20m ./internal/chaos/ -args -chaos.full
	)

# The hold core's concurrency tests and the chaos cluster tests (live
# updates across two processes, the chaos load) on a 3-master Redis Cluster
# started by scripts/cluster.sh and stopped afterwards.
test-cluster:
	trap 'scripts/cluster.sh down || true; scripts/services.sh down test || true' EXIT
	svc_env=$$(scripts/services.sh up test)
	cluster_env=$$(scripts/cluster.sh up)
	(
		eval "$$svc_env"
		eval "$$cluster_env"
		go test -race -count=1 -timeout 10m ./internal/hold/ -run 'Thousand|TwoCores|Overlapping|Idempotent'
		SEATD_CHAOS_CLUSTER=1 go test -count=1 -v -timeout 10m ./internal/chaos/ -run 'TestCluster'
	)
