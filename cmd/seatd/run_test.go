package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"seatd/internal/testsvc"
)

// getenv serves env, then the test databases' URLs.
func getenvOf(t *testing.T, env map[string]string) func(string) string {
	t.Helper()
	cfg := testsvc.Config(t)
	all := map[string]string{"DATABASE_URL": cfg.DatabaseURL, "REDIS_URL": cfg.RedisURL, "SEATD_LOG_LEVEL": "warn"}
	for k, v := range env {
		all[k] = v
	}
	return func(k string) string { return all[k] }
}

// unreachable is configuration whose databases do not answer: a command
// that gets to connect fails with a connection error instead of the
// refusal under test.
func unreachable(env map[string]string) func(string) string {
	all := map[string]string{"DATABASE_URL": "postgres://seatd@127.0.0.1:1/none", "REDIS_URL": "redis://127.0.0.1:1/0"}
	for k, v := range env {
		all[k] = v
	}
	return func(k string) string { return all[k] }
}

// TestServeRefusesProductionWithoutSecureCookies: `seatd serve` with
// SEATD_ENV=production and no COOKIE_SECURE=true stops before connecting
// to anything.
func TestServeRefusesProductionWithoutSecureCookies(t *testing.T) {
	t.Parallel()
	for _, secure := range []string{"", "false"} {
		err := run(t.Context(), []string{"serve"}, unreachable(map[string]string{"SEATD_ENV": "production", "COOKIE_SECURE": secure}),
			strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "COOKIE_SECURE=true") {
			t.Fatalf("COOKIE_SECURE=%q: %v, want a refusal naming COOKIE_SECURE", secure, err)
		}
	}
}

// TestServeRefusesProductionWithoutSMTP: `seatd serve` with
// SEATD_ENV=production and no SEATD_SMTP_URL stops before connecting: its
// mail would never leave the outbox.
func TestServeRefusesProductionWithoutSMTP(t *testing.T) {
	t.Parallel()
	err := run(t.Context(), []string{"serve"}, unreachable(map[string]string{"SEATD_ENV": "production", "COOKIE_SECURE": "true"}),
		strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "SEATD_SMTP_URL") {
		t.Fatalf("%v, want a refusal naming SEATD_SMTP_URL", err)
	}
}

// TestSeedDemoOnlyInDevelopmentAndTest: `seatd seed demo` is refused in
// production before connecting, and runs in test.
func TestSeedDemoOnlyInDevelopmentAndTest(t *testing.T) {
	t.Parallel()
	err := run(t.Context(), []string{"seed", "demo"}, unreachable(map[string]string{"SEATD_ENV": "production", "COOKIE_SECURE": "true"}),
		strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "refusing to seed") {
		t.Fatalf("production: %v, want a refusal", err)
	}
	var out strings.Builder
	if err := run(t.Context(), []string{"seed", "demo"}, getenvOf(t, map[string]string{"SEATD_ENV": "test"}),
		strings.NewReader(""), &out, io.Discard); err != nil {
		t.Fatalf("test: %v", err)
	}
	if !strings.Contains(out.String(), "demo logins") {
		t.Fatalf("seed output: %q", out.String())
	}
}

// TestServeOpsListener: `seatd serve` answers /metrics on the ops address
// only; the public port keeps /healthz. With SEATD_OPS_ADDR=off there is
// no ops listener, and an ops address taken by someone else is an error.
func TestServeOpsListener(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, getenvOf(t, map[string]string{"SEATD_ENV": "test", "SEATD_ADDR": "127.0.0.1:0",
			"SEATD_OPS_ADDR": "127.0.0.1:0"}), strings.NewReader(""), pw, io.Discard)
		_ = pw.Close()
	}()
	var public, ops string
	sc := bufio.NewScanner(pr)
	for (public == "" || ops == "") && sc.Scan() {
		line := sc.Text()
		if u, ok := strings.CutPrefix(line, "seatd is running at "); ok {
			public = u
		}
		if u, ok := strings.CutPrefix(line, "seatd ops (metrics, pprof) at "); ok {
			ops = u
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if public == "" || ops == "" {
		cancel()
		t.Fatalf("serve did not print both addresses (public %q, ops %q): %v", public, ops, <-done)
	}
	get := func(url string) int {
		t.Helper()
		c := &http.Client{Timeout: 5 * time.Second}
		res, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		return res.StatusCode
	}
	if st := get(public + "/metrics"); st != http.StatusNotFound {
		t.Errorf("public /metrics: %d, want 404", st)
	}
	if st := get(public + "/healthz"); st != http.StatusOK {
		t.Errorf("public /healthz: %d", st)
	}
	if st := get(ops + "/metrics"); st != http.StatusOK {
		t.Errorf("ops /metrics: %d", st)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}

	// An ops address set explicitly must be free.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = run(t.Context(), []string{"serve"}, getenvOf(t, map[string]string{"SEATD_ENV": "test", "SEATD_ADDR": "127.0.0.1:0",
		"SEATD_OPS_ADDR": ln.Addr().String()}), strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "SEATD_OPS_ADDR") {
		t.Fatalf("taken ops address: %v, want an error", err)
	}
	t.Logf("public %s: /metrics 404, /healthz 200; ops %s: /metrics 200; a taken ops address stops serve", public, ops)
}
