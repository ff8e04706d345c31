// Package testenv builds apps for tests, on the services of
// internal/testsvc, and the fixtures they need: tenants, events, charts.
package testenv

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/chart"
	"seatd/internal/config"
	"seatd/internal/notify"
	"seatd/internal/store"
	"seatd/internal/testsvc"
)

// App builds and migrates an app; mod may adjust the config first. The
// app's background loops are not started.
func App(t testing.TB, mod func(*config.Config)) *app.App {
	t.Helper()
	cfg := testsvc.Config(t)
	if mod != nil {
		mod(&cfg)
	}
	ctx := context.Background()
	a, err := app.New(ctx, cfg, testsvc.Logger(t))
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
	n := notify.New(a.Pool.Config().ConnConfig, testsvc.Logger(t))
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
