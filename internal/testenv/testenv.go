// Package testenv gives tests real Postgres, Redis and Mailpit: the ones
// named by DATABASE_URL, REDIS_URL and SEATD_SMTP_URL (make test starts
// private instances), plus throwaway redis-server and Mailpit processes
// for tests that stop them.
package testenv

import (
	"context"
	"errors"
	"fmt"
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
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"seatd/internal/app"
	"seatd/internal/chart"
	"seatd/internal/config"
	"seatd/internal/notify"
	"seatd/internal/store"
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

// App builds and migrates an app; mod may adjust the config first. The
// app's background loops are not started.
func App(t testing.TB, mod func(*config.Config)) *app.App {
	t.Helper()
	cfg := Config(t)
	if mod != nil {
		mod(&cfg)
	}
	ctx := context.Background()
	a, err := app.New(ctx, cfg, Logger(t))
	if err != nil {
		t.Fatalf("app: %v", err)
	}
	t.Cleanup(a.Close)
	// One migration at a time in a test binary: parallel tests on a
	// fresh database otherwise queue for the migrator's locks in Postgres,
	// where lock_timeout ends the wait on a loaded machine.
	migrateMu.Lock()
	err = a.Migrate(ctx)
	migrateMu.Unlock()
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return a
}

var migrateMu sync.Mutex

// Background runs the app's background loops, then extra, until the test
// ends (app.RunBackground).
func Background(t testing.TB, a *app.App, extra ...app.Job) {
	Run(t, app.JobFunc(func(ctx context.Context) { a.RunBackground(ctx, extra...) }))
}

// Run runs job until the test ends: its context is cancelled, and the job
// waited for, in the test's cleanup (before the cleanups registered
// earlier, such as closing the app).
func Run(t testing.TB, job app.Job) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { job.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Notifier runs a notifier of its own on a's database until the test
// ends: the one of another process sharing a's connections, or of a test
// that runs none of a's loops.
func Notifier(t testing.TB, a *app.App) *notify.Notifier {
	n := notify.New(a.Pool.Config().ConnConfig, Logger(t))
	Run(t, n)
	return n
}

// Password is every test user's password.
const Password = "test-password-1"

// Tenant is an organization with one user of each staff role and buyers.
type Tenant struct {
	Org       store.Org
	Organizer store.User
	BoxOffice store.User
	Buyers    []store.User
}

var counter atomic.Int64

// NewTenant creates an organization with a unique slug, an organizer, a
// box-office user and n buyers.
func NewTenant(t testing.TB, a *app.App, buyers int) Tenant {
	t.Helper()
	ctx := context.Background()
	slug := fmt.Sprintf("t%d-%s", counter.Add(1), strings.ReplaceAll(uuid.NewString()[:8], "-", ""))
	org, err := a.Store.Accounts.CreateOrg(ctx, slug, "Test "+slug)
	if err != nil {
		t.Fatalf("create org: %v", err)
	}
	tn := Tenant{Org: org}
	mk := func(local, role string) store.User {
		u, err := a.Accounts.Create(ctx, org.ID, local+"@"+slug+".example", Password, role)
		if err != nil {
			t.Fatalf("create user: %v", err)
		}
		return u
	}
	tn.Organizer = mk("organizer", "organizer")
	tn.BoxOffice = mk("boxoffice", "box_office")
	tn.Buyers = make([]store.User, buyers)
	for i := range buyers {
		tn.Buyers[i] = mk("buyer"+strconv.Itoa(i), "buyer")
	}
	return tn
}

// AddBuyers creates n more buyers quickly (bulk insert with one password
// hash), for tests that need hundreds of distinct users.
func AddBuyers(t testing.TB, a *app.App, org uuid.UUID, n int) []store.User {
	t.Helper()
	ctx := context.Background()
	u0, err := a.Accounts.Create(ctx, org, "bulk-"+uuid.NewString()[:8]+"@x.example", Password, "buyer")
	if err != nil {
		t.Fatalf("create buyer: %v", err)
	}
	users := []store.User{u0}
	rows, err := a.Pool.Query(ctx, `
		INSERT INTO users (org_id, email, role, password_hash, email_verified_at)
		SELECT $1, 'bulk-' || gen_random_uuid() || '@x.example', 'buyer', $2, now() FROM generate_series(1, $3)
		RETURNING id, email`, org, u0.PasswordHash, n-1)
	if err != nil {
		t.Fatalf("bulk buyers: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		u := store.User{OrgID: org, Role: "buyer", PasswordHash: u0.PasswordHash, Verified: true}
		if err := rows.Scan(&u.ID, &u.Email); err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	return users
}

// NewEvent creates an event of org with a grid of sections×rows×perRow.
func NewEvent(t testing.TB, a *app.App, org uuid.UUID, sections, rows, perRow int) store.Event {
	t.Helper()
	var secs []store.NewSection
	for i := range sections {
		label := string(rune('A' + i))
		secs = append(secs, store.GridSection(label, "Section "+label, rows, perRow, i*(perRow+2), 0))
	}
	ev, err := a.Store.Events.Create(context.Background(), org, "Test event", "Test hall", time.Now().Add(24*time.Hour), secs)
	if err != nil {
		t.Fatalf("create event: %v", err)
	}
	return ev
}

// SeatIDs returns an event's seat ids in idx order.
func SeatIDs(t testing.TB, a *app.App, org, event uuid.UUID) []uuid.UUID {
	t.Helper()
	seats, err := a.Store.Events.Seats(context.Background(), org, event)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uuid.UUID, len(seats))
	for i, s := range seats {
		ids[i] = s.ID
	}
	return ids
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
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
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

// NewChart saves a small chart of org: a seated section "S" of rows×perRow
// seats whose first row is category "front" (the rest "back"; the first
// seat is accessible, the second its companion) and a GA section "G" of
// 100 places.
func NewChart(t testing.TB, a *app.App, org uuid.UUID, rows, perRow int) store.ChartVersion {
	t.Helper()
	c := chart.Chart{Name: "Test chart", Categories: []chart.Category{
		{Key: "front", Name: "Front", Color: "#aa0000"}, {Key: "back", Name: "Back", Color: "#0000aa"}}}
	sec := chart.Section{Label: "S", Name: "Stalls", Kind: chart.Seated}
	for r := range rows {
		row := chart.Row{Label: store.RowLabel(r)}
		for n := 1; n <= perRow; n++ {
			cat := "back"
			if r == 0 {
				cat = "front"
			}
			row.Seats = append(row.Seats, chart.Seat{Number: n, X: n - 1, Y: r, Category: cat,
				Accessible: r == 0 && n == 1, Companion: r == 0 && n == 2})
		}
		sec.Rows = append(sec.Rows, row)
	}
	c.Sections = []chart.Section{sec, {Label: "G", Name: "Standing", Kind: chart.GA, Capacity: 100, Category: "back"}}
	v, err := a.Store.Charts.Save(context.Background(), org, uuid.Nil, c)
	if err != nil {
		t.Fatalf("save chart: %v", err)
	}
	return v
}
