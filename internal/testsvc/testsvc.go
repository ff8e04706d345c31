// Package testsvc gives tests the real services they run against:
// Postgres, Redis and Mailpit named by DATABASE_URL, REDIS_URL and
// SEATD_SMTP_URL (make test starts private instances), throwaway
// redis-server and Mailpit processes for tests that stop them, and waits
// on conditions. Of seatd it needs only the configuration and the Redis
// client (internal/redisconn), so the tests of the packages app is built
// from use it without rebuilding app for their test binaries;
// internal/testenv builds apps and their fixtures on top of it.
package testsvc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"seatd/internal/config"
	"seatd/internal/redisconn"
)

// Config returns a test configuration on the environment's databases.
// Each test package (test binary) gets a database of its own on that
// Postgres: packages run in parallel, and a reaper of one package must not
// expire another package's holds and announce it on a Redis the other
// package never hears.
func Config(t testing.TB) config.Config {
	t.Helper()
	// Webhook receivers in tests listen on loopback.
	env := map[string]string{"SEATD_ENV": "test", "SEATD_LOG_LEVEL": "warn", "SEATD_WEBHOOK_ALLOW_PRIVATE": "true",
		// Buyers purchase directly in every test but the payments' own.
		"SEATD_PAYMENTS": "off",
		// The fixtures' accounts are made just before they hold: they hold
		// as established accounts do, unless a test sets an age.
		"SEATD_NEW_ACCOUNT_AGE": "0"}
	for _, k := range []string{"DATABASE_URL", "REDIS_URL"} {
		v := os.Getenv(k)
		if v == "" {
			t.Fatalf("%s is not set: run the tests with make test, which starts Postgres and Redis", k)
		}
		env[k] = v
	}
	// With a mail server, apps' background loops send the outbox to it.
	env["SEATD_SMTP_URL"] = os.Getenv("SEATD_SMTP_URL")
	pkgDB.once.Do(func() { pkgDB.url, pkgDB.err = packageDatabase(env["DATABASE_URL"]) })
	if pkgDB.err != nil {
		t.Fatalf("package database: %v", pkgDB.err)
	}
	env["DATABASE_URL"] = pkgDB.url
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("test config: %v", err)
	}
	return cfg
}

var pkgDB struct {
	once sync.Once
	url  string
	err  error
}

// packageDatabase creates (if missing) the database of this test binary,
// seatd_test_<package>, next to the one base names, and returns its URL.
func packageDatabase(base string) (string, error) {
	return createDatabase(base, dbName(strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")))
}

// dbName is seatd_test_<name>, with anything but [a-z0-9] as '_'.
func dbName(name string) string {
	return "seatd_test_" + strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, strings.ToLower(name))
}

// OwnDatabase gives a test a fresh, empty database of its own,
// seatd_test_<name>, next to the package's (dropped first if a failed
// run left it, and dropped again when the test ends), and returns its URL
// for config.Config.DatabaseURL. For tests whose data must be the whole
// database, or would slow the package's other tests down.
func OwnDatabase(t testing.TB, name string) string {
	t.Helper()
	base := Config(t).DatabaseURL
	name = dbName(name)
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		return err
	}
	if err := drop(); err != nil {
		t.Fatalf("drop database %s: %v", name, err)
	}
	u, err := createDatabase(base, name)
	if err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() { _ = drop() })
	return u
}

// createDatabase creates (if missing) the database name next to the one
// base names, and returns its URL.
func createDatabase(base, name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	for attempt := 0; ; attempt++ {
		_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
		var pgErr *pgconn.PgError
		if err == nil || (errors.As(err, &pgErr) && pgErr.Code == "42P04") { // exists already
			break
		}
		// Two packages creating databases at once may collide on the
		// template; try again shortly.
		if attempt == 10 {
			return "", err
		}
		time.Sleep(200 * time.Millisecond)
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// Logger returns a logger that writes to the test log when -v is set.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Redis is a private redis-server process a test can stop and restart.
type Redis struct {
	t    testing.TB
	port int
	dir  string
	cmd  *exec.Cmd
}

// StartRedis starts a redis-server on a free loopback port; it is stopped
// when the test ends.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	r := &Redis{t: t, port: port, dir: t.TempDir()}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// URL is the redis:// URL of the server.
func (r *Redis) URL() string { return "redis://127.0.0.1:" + strconv.Itoa(r.port) + "/0" }

// Addr is host:port of the server.
func (r *Redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// Start (re)starts the server on its port with an empty dataset, and waits
// until it answers.
func (r *Redis) Start() {
	r.t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		r.t.Fatalf("redis-server not installed: %v", err)
	}
	r.cmd = exec.Command(bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--logfile", filepath.Join(r.dir, "redis.log")) // #nosec G204 -- fixed binary, test-only
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("start redis: %v", err)
	}
	c, err := redisconn.Open(config.Config{RedisURL: r.URL()})
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	for i := 0; ; i++ {
		if c.Ping(context.Background()).Err() == nil {
			return
		}
		if i > 100 {
			r.t.Fatalf("redis did not start on %d", r.port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL, like a crash) and waits for it to exit.
func (r *Redis) Stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// Eventually waits up to timeout for cond to hold, checking every 10 ms,
// and fails the test with what was awaited if it never does.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("after %s: not yet %s", timeout, what)
	}
}

// Poll waits up to timeout for cond to hold, checking every 10 ms, and
// says whether it did: for a test that reports the failure itself, with
// what cond saw at its last check.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond) // the poll interval
	}
	return true
}
