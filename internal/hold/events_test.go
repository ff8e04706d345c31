package hold_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

func ptr[T any](v T) *T { return &v }

func rfc(t time.Time) *string { return ptr(t.UTC().Format(time.RFC3339)) }

// chartEvent creates a draft event of the tenant from a fresh chart
// (2×10 seats, a GA section) through the core, priced front 5000 and back
// 2500 EUR.
func chartEvent(t *testing.T, a *app.App, tn testenv.Tenant, mod func(*hold.EventInput)) store.Event {
	t.Helper()
	v := testenv.NewChart(t, a, tn.Org.ID, 2, 10)
	now := time.Now()
	in := hold.EventInput{Name: ptr("Chart show"), Venue: ptr("Hall"), StartsAt: rfc(now.Add(48 * time.Hour)),
		TimeZone: ptr("Europe/Paris"), ChartID: ptr(v.ChartID.String()),
		OnSaleAt: rfc(now.Add(-time.Hour)), SalesEndAt: rfc(now.Add(24 * time.Hour)),
		Prices: []store.Price{{Category: "front", PriceMinor: 5000, Currency: "EUR"}, {Category: "back", PriceMinor: 2500, Currency: "EUR"}}}
	if mod != nil {
		mod(&in)
	}
	e, err := a.Events.Create(context.Background(), organizer(tn), in)
	if err != nil {
		t.Fatalf("create event: %v", err)
	}
	return e
}

func organizer(tn testenv.Tenant) hold.Actor {
	return hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
}

func setStatus(t *testing.T, a *app.App, tn testenv.Tenant, event uuid.UUID, status string) error {
	t.Helper()
	_, err := a.Events.Update(context.Background(), organizer(tn), event, hold.EventInput{Status: &status})
	return err
}

// TestEventFromChart: the event copies the chart version's seats,
// categories, flags and GA capacity, and a later chart version changes
// nothing of it.
func TestEventFromChart(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	e := chartEvent(t, a, tn, nil)
	// 20 seats and the GA section's 100 places (stored as place rows).
	if e.Status != store.EventDraft || e.Seats != 120 {
		t.Fatalf("event %+v: want a draft with 20 seats and 100 places", e)
	}
	ctx := context.Background()
	if n := count(t, a, `SELECT count(*) FROM seats WHERE event_id = $1 AND category = 'front'`, e.ID); n != 10 {
		t.Errorf("front seats %d, want 10", n)
	}
	if n := count(t, a, `SELECT count(*) FROM seats WHERE event_id = $1 AND accessible`, e.ID); n != 1 {
		t.Errorf("accessible seats %d, want 1", n)
	}
	if n := count(t, a, `SELECT capacity FROM sections WHERE event_id = $1 AND kind = 'ga'`, e.ID); n != 100 {
		t.Errorf("GA capacity %d, want 100", n)
	}
	if n := count(t, a, `SELECT count(*) FROM seats s JOIN sections c ON c.id = s.section_id
		WHERE s.event_id = $1 AND c.kind = 'ga' AND s.category = 'back' AND s.status = 'available'`, e.ID); n != 100 {
		t.Errorf("GA places %d, want 100 available places of category back", n)
	}
	// A new version of the chart (one row more) leaves the event alone.
	v, err := a.Store.Charts.VersionByID(ctx, tn.Org.ID, e.ChartVersionID)
	if err != nil {
		t.Fatal(err)
	}
	v.Layout.Sections[0].Rows = append(v.Layout.Sections[0].Rows, v.Layout.Sections[0].Rows[1])
	v.Layout.Sections[0].Rows[2].Label = "C"
	if _, err := a.Store.Charts.Save(ctx, tn.Org.ID, v.ChartID, v.Layout); err != nil {
		t.Fatal(err)
	}
	got, err := a.Store.Events.Event(ctx, tn.Org.ID, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Seats != 120 || got.ChartVersionID != e.ChartVersionID || len(got.Categories) != 2 {
		t.Errorf("event after a chart edit: %d seats, version %v, %d categories", got.Seats, got.ChartVersionID, len(got.Categories))
	}
}

// TestEventLifecycle: draft → on sale → closed and draft → closed are
// allowed; every other change of status is a conflict that writes nothing.
func TestEventLifecycle(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	for _, tc := range []struct {
		name  string
		steps []string
		want  []apperr.Code // "" for allowed
	}{
		{"publish then close", []string{"on_sale", "closed"}, []apperr.Code{"", ""}},
		{"close a draft", []string{"closed"}, []apperr.Code{""}},
		{"back to draft", []string{"on_sale", "draft"}, []apperr.Code{"", apperr.Conflict}},
		{"reopen", []string{"on_sale", "closed", "on_sale"}, []apperr.Code{"", "", apperr.Conflict}},
		{"closed to draft", []string{"closed", "draft"}, []apperr.Code{"", apperr.Conflict}},
		{"unknown status", []string{"sold_out"}, []apperr.Code{apperr.Invalid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := chartEvent(t, a, tn, nil)
			status := string(store.EventDraft)
			for i, step := range tc.steps {
				err := setStatus(t, a, tn, e.ID, step)
				if got := codeOrEmpty(err); got != tc.want[i] {
					t.Fatalf("step %d (%s → %s): %v, want %q", i, status, step, err, tc.want[i])
				}
				if err == nil {
					status = step
				}
				got, err := a.Store.Events.Event(context.Background(), tn.Org.ID, e.ID)
				if err != nil {
					t.Fatal(err)
				}
				if string(got.Status) != status {
					t.Fatalf("after step %d the event is %s, want %s", i, got.Status, status)
				}
			}
		})
	}
}

func codeOrEmpty(err error) apperr.Code {
	if err == nil {
		return ""
	}
	return apperr.CodeOf(err)
}

// TestSaleWindow: on the fast path and on the Postgres-only path, a
// buyer's hold is refused with not_on_sale while the event is a draft,
// before its on-sale time, after its sales end and once closed; staff
// hold outside the window until it is closed. A process whose cache still
// says "on sale" after the event row changed is refused by the hold
// statement itself.
func TestSaleWindow(t *testing.T) {
	for _, postgres := range []bool{false, true} {
		name := "fast path"
		if postgres {
			name = "postgres only"
		}
		t.Run(name, func(t *testing.T) {
			mod := func(c *config.Config) {
				if postgres {
					c.RedisURL = "redis://127.0.0.1:1/0" // nothing listens: Redis is down
				}
			}
			a := testenv.App(t, mod)
			other := testenv.App(t, mod).Holds // a second process, whose follower does not run
			tn := testenv.NewTenant(t, a, 1)
			ctx := context.Background()
			u, box := buyer(tn.Buyers[0]), staff(tn.BoxOffice)
			e := chartEvent(t, a, tn, nil)
			seats := testenv.SeatIDs(t, a, tn.Org.ID, e.ID)
			hold1 := func(p *hold.Holds, who hold.Actor, seat uuid.UUID) apperr.Code {
				t.Helper()
				_, err := p.Hold(ctx, who, hold.Request{Event: e.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
				return codeOrEmpty(err)
			}

			if got := hold1(a.Holds, u, seats[0]); got != apperr.NotOnSale {
				t.Fatalf("buyer on a draft: %q, want not_on_sale", got)
			}
			if a.Engine.FastPath() == postgres {
				t.Fatalf("fast path %v, want %v", a.Engine.FastPath(), !postgres)
			}
			if got := hold1(a.Holds, box, seats[1]); got != "" {
				t.Fatalf("box office on a draft: %q, want a hold", got)
			}
			if err := setStatus(t, a, tn, e.ID, "on_sale"); err != nil {
				t.Fatal(err)
			}
			if got := hold1(a.Holds, u, seats[2]); got != "" {
				t.Fatalf("buyer on sale: %q, want a hold", got)
			}
			// The other process caches the event while it is on sale.
			if got := hold1(other, u, seats[3]); got != "" {
				t.Fatalf("buyer on sale (other process): %q, want a hold", got)
			}

			// Before the window, after it: moved through the core.
			for _, tc := range []struct {
				name             string
				onSale, salesEnd time.Time
			}{
				{"before on_sale_at", time.Now().Add(time.Hour), time.Now().Add(2 * time.Hour)},
				{"after sales_end_at", time.Now().Add(-2 * time.Hour), time.Now().Add(-time.Hour)},
			} {
				if _, err := a.Events.Update(ctx, organizer(tn), e.ID, hold.EventInput{OnSaleAt: rfc(tc.onSale), SalesEndAt: rfc(tc.salesEnd)}); err != nil {
					t.Fatal(err)
				}
				if got := hold1(a.Holds, u, seats[4]); got != apperr.NotOnSale {
					t.Fatalf("%s: %q, want not_on_sale", tc.name, got)
				}
				if got := hold1(a.Holds, box, seats[5]); got != "" {
					t.Fatalf("%s, box office: %q, want a hold", tc.name, got)
				}
				if _, err := a.Holds.Release(ctx, box, activeHoldOn(t, a, tn, e.ID, seats[5]), "test"); err != nil {
					t.Fatal(err)
				}
			}

			// Closed behind the other process's back (straight in SQL, no
			// message): its cache says on sale, Postgres refuses.
			if _, err := a.Pool.Exec(ctx, `UPDATE events SET status = 'closed' WHERE id = $1`, e.ID); err != nil {
				t.Fatal(err)
			}
			if got := hold1(other, u, seats[6]); got != apperr.NotOnSale {
				t.Fatalf("stale cache, closed event: %q, want not_on_sale", got)
			}
			if got := hold1(other, box, seats[7]); got != apperr.NotOnSale {
				t.Fatalf("stale cache, closed event, box office: %q, want not_on_sale", got)
			}
			if got := hold1(a.Holds, box, seats[8]); got != apperr.NotOnSale {
				t.Fatalf("closed event, box office: %q, want not_on_sale", got)
			}
			if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND seat_id = ANY($2::uuid[])`,
				e.ID, []uuid.UUID{seats[0], seats[4], seats[6], seats[7], seats[8]}); n != 0 {
				t.Errorf("%d holds written for refused requests", n)
			}
			assertSeatInvariants(t, a, e.ID)
			// Redis let the stale process's lock through; it must not stay.
			if !postgres {
				testsvc.Eventually(t, 10*time.Second, "the refused seat free again in every tier", func() bool {
					reg, err := a.Monitor.RegistryStatus(ctx, organizer(tn), e.ID)
					return err == nil && reg.Redis == reg.Postgres
				})
			}
		})
	}
}

func activeHoldOn(t *testing.T, a *app.App, tn testenv.Tenant, event, seat uuid.UUID) uuid.UUID {
	t.Helper()
	h, err := a.Store.Holds.Active(context.Background(), tn.Org.ID, event, seat)
	if err != nil {
		t.Fatal(err)
	}
	return h.ID
}

// TestEventHoldSettings: an event's own hold TTL, buyer cap and checkout
// extension replace the global ones on both paths, and a cap lowered
// behind a process's back is enforced by the hold statement.
func TestEventHoldSettings(t *testing.T) {
	for _, postgres := range []bool{false, true} {
		name := "fast path"
		if postgres {
			name = "postgres only"
		}
		t.Run(name, func(t *testing.T) {
			mod := func(c *config.Config) {
				c.HoldTTL = 10 * time.Minute
				c.MaxHoldsPerBuyer = 10
				if postgres {
					c.RedisURL = "redis://127.0.0.1:1/0"
				}
			}
			a := testenv.App(t, mod)
			tn := testenv.NewTenant(t, a, 1)
			ctx := context.Background()
			u := buyer(tn.Buyers[0])
			e := chartEvent(t, a, tn, func(in *hold.EventInput) {
				in.HoldTTLSeconds, in.MaxHoldsPerBuyer, in.HoldExtensionSeconds = ptr(90), ptr(3), ptr(120)
			})
			if err := setStatus(t, a, tn, e.ID, "on_sale"); err != nil {
				t.Fatal(err)
			}
			seats := testenv.SeatIDs(t, a, tn.Org.ID, e.ID)
			before := time.Now()
			res, err := a.Holds.Hold(ctx, u, hold.Request{Event: e.ID, Seats: seats[:2], Source: hold.SourceAPI})
			if err != nil {
				t.Fatal(err)
			}
			if ttl := res.Holds[0].HeldUntil.Sub(before); ttl < 85*time.Second || ttl > 95*time.Second {
				t.Errorf("hold TTL %v, want the event's 90 s", ttl)
			}
			// Checkout adds the event's 120 s, not the default's 5 min.
			out, err := a.Holds.Checkout(ctx, u, e.ID)
			if err != nil || len(out) != 2 {
				t.Fatalf("checkout: %d holds, %v", len(out), err)
			}
			for _, h := range out {
				if got := h.HeldUntil.Sub(res.Holds[0].HeldUntil); got < 119*time.Second || got > 121*time.Second {
					t.Errorf("checkout extended a hold by %v, want the event's 120 s", got)
				}
			}
			if ext, err := a.Holds.Extension(ctx, u, e.ID); err != nil || ext != 120*time.Second {
				t.Errorf("extension %v (%v), want 120 s", ext, err)
			}
			if _, err := a.Holds.Hold(ctx, u, hold.Request{Event: e.ID, Seats: seats[2:4],
				Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.HoldLimit {
				t.Fatalf("over the event's cap of 3: %v, want hold_limit", err)
			}
			// Lowered to 2 in SQL only: the cache and Redis still say 3, the
			// hold statement says no.
			if _, err := a.Pool.Exec(ctx, `UPDATE events SET max_holds_per_buyer = 2 WHERE id = $1`, e.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Holds.Hold(ctx, u, hold.Request{Event: e.ID, Seats: seats[2:3],
				Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.HoldLimit {
				t.Fatalf("over the cap lowered in Postgres: %v, want hold_limit", err)
			}
			if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND user_id = $2`, e.ID, u.User); n != 2 {
				t.Errorf("%d holds written, want 2", n)
			}
			// Raised through the core: this process follows at once.
			if _, err := a.Events.Update(ctx, organizer(tn), e.ID, hold.EventInput{MaxHoldsPerBuyer: ptr(5)}); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Holds.Hold(ctx, u, hold.Request{Event: e.ID, Seats: seats[2:5], Source: hold.SourceAPI}); err != nil {
				t.Fatalf("within the raised cap: %v", err)
			}
			assertSeatInvariants(t, a, e.ID)
		})
	}
}

// TestCreateEventLeavesOtherEventsAlone: creating and publishing an event
// touches no hold of another event.
func TestCreateEventLeavesOtherEventsAlone(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	ctx := context.Background()
	old := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 5)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, old.ID)
	if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: old.ID, Seats: seats[:3], Source: hold.SourceAPI}); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var s string
		err := a.Pool.QueryRow(ctx, `SELECT coalesce(string_agg(id::text || status || held_until::text || fence::text, ',' ORDER BY id), '')
			FROM seat_holds WHERE event_id = $1`, old.ID).Scan(&s)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := snapshot()
	e := chartEvent(t, a, tn, nil)
	if err := setStatus(t, a, tn, e.ID, "on_sale"); err != nil {
		t.Fatal(err)
	}
	if err := setStatus(t, a, tn, e.ID, "closed"); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(); after != before {
		t.Errorf("holds of another event changed:\n%s\n%s", before, after)
	}
}

// TestEventValidation: every problem of a new event is named at once, and
// nothing is written.
func TestEventValidation(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	other := testenv.NewTenant(t, a, 0)
	ctx := context.Background()
	v := testenv.NewChart(t, a, tn.Org.ID, 2, 10)
	foreign := testenv.NewChart(t, a, other.Org.ID, 2, 10)
	now := time.Now()
	good := func() hold.EventInput {
		return hold.EventInput{Name: ptr("Show"), StartsAt: rfc(now.Add(48 * time.Hour)), TimeZone: ptr("Europe/Paris"),
			ChartID: ptr(v.ChartID.String()), OnSaleAt: rfc(now), SalesEndAt: rfc(now.Add(time.Hour)),
			Prices: []store.Price{{Category: "front", PriceMinor: 5000, Currency: "EUR"}, {Category: "back", PriceMinor: 2500, Currency: "EUR"}}}
	}
	for _, tc := range []struct {
		name   string
		mod    func(*hold.EventInput)
		code   apperr.Code
		fields []string
	}{
		{"no name", func(in *hold.EventInput) { in.Name = ptr(" ") }, apperr.Invalid, []string{"name"}},
		{"bad time zone", func(in *hold.EventInput) { in.TimeZone = ptr("Mars/Olympus") }, apperr.Invalid, []string{"time_zone"}},
		{"bad start", func(in *hold.EventInput) { in.StartsAt = ptr("tomorrow") }, apperr.Invalid, []string{"starts_at"}},
		{"sales end first", func(in *hold.EventInput) { in.SalesEndAt = rfc(now.Add(-time.Hour)) }, apperr.Invalid, []string{"sales_end_at"}},
		{"no window", func(in *hold.EventInput) { in.OnSaleAt, in.SalesEndAt = nil, nil }, apperr.Invalid, []string{"on_sale_at", "sales_end_at"}},
		{"missing price", func(in *hold.EventInput) { in.Prices = in.Prices[:1] }, apperr.Invalid, []string{"prices"}},
		{"unknown category", func(in *hold.EventInput) {
			in.Prices = append(in.Prices, store.Price{Category: "vip", PriceMinor: 1, Currency: "EUR"})
		}, apperr.Invalid, []string{"prices[2].category"}},
		{"bad currency and negative price", func(in *hold.EventInput) {
			in.Prices[0].Currency, in.Prices[1].PriceMinor = "euro", -1
		}, apperr.Invalid, []string{"prices[0].currency", "prices[1].price_minor"}},
		{"priced twice, the other unpriced", func(in *hold.EventInput) { in.Prices[1].Category = "front" }, apperr.Invalid, []string{"prices[1].category", "prices"}},
		{"bad ttl and cap and rule", func(in *hold.EventInput) {
			in.HoldTTLSeconds, in.MaxHoldsPerBuyer, in.OrphanRule = ptr(-1), ptr(-5), ptr("loose")
		}, apperr.Invalid, []string{"hold_ttl", "max_holds_per_buyer", "orphan_rule"}},
		{"negative extension", func(in *hold.EventInput) { in.HoldExtensionSeconds = ptr(-1) }, apperr.Invalid, []string{"hold_extension"}},
		{"extension over an hour", func(in *hold.EventInput) { in.HoldExtensionSeconds = ptr(3601) }, apperr.Invalid, []string{"hold_extension"}},
		{"status on create", func(in *hold.EventInput) { in.Status = ptr("on_sale") }, apperr.Invalid, []string{"status"}},
		{"no chart", func(in *hold.EventInput) { in.ChartID = nil }, apperr.Invalid, []string{"chart_id"}},
		{"unknown chart", func(in *hold.EventInput) { in.ChartID = ptr(uuid.NewString()) }, apperr.NotFound, nil},
		{"another org's chart", func(in *hold.EventInput) { in.ChartID = ptr(foreign.ChartID.String()) }, apperr.NotFound, nil},
		{"another org's chart and a bad zone", func(in *hold.EventInput) {
			in.ChartID, in.TimeZone = ptr(foreign.ChartID.String()), ptr("UTC+2")
		}, apperr.Invalid, []string{"chart_id", "time_zone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := good()
			tc.mod(&in)
			_, err := a.Events.Create(ctx, organizer(tn), in)
			e, ok := apperr.As(err)
			if !ok || e.Code != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
			for _, f := range tc.fields {
				if e.Fields[f] == "" {
					t.Errorf("no message for %s in %v", f, e.Fields)
				}
			}
			if len(e.Fields) != len(tc.fields) {
				t.Errorf("fields %v, want exactly %v", e.Fields, tc.fields)
			}
		})
	}
	if n := count(t, a, `SELECT count(*) FROM events WHERE org_id = $1`, tn.Org.ID); n != 0 {
		t.Errorf("%d events written by refused requests", n)
	}
	if _, err := a.Events.Create(ctx, hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleBuyer}, good()); apperr.CodeOf(err) != apperr.Forbidden {
		t.Errorf("a buyer creating an event: %v, want forbidden", err)
	}
	if _, err := a.Events.Create(ctx, organizer(tn), good()); err != nil {
		t.Errorf("the good input: %v", err)
	}
}

// TestCloseDuringHolds: buyers hold seats on two processes, one after
// another, while the organizer closes the event. Every hold answered
// "created" exists, every refusal is not_on_sale and wrote nothing, no
// seat is held twice, and once the close has returned no process grants
// another hold, whatever its cache says. On the fast path Redis ends up
// agreeing with Postgres.
func TestCloseDuringHolds(t *testing.T) {
	for _, postgres := range []bool{false, true} {
		name := "fast path"
		if postgres {
			name = "postgres only"
		}
		t.Run(name, func(t *testing.T) {
			mod := func(c *config.Config) {
				if postgres {
					c.RedisURL = "redis://127.0.0.1:1/0"
				}
			}
			a, b := testenv.App(t, mod), testenv.App(t, mod)
			testenv.Background(t, a)
			testenv.Background(t, b)
			tn := testenv.NewTenant(t, a, 1)
			const perBuyer = 3
			buyers := testenv.AddBuyers(t, a, tn.Org.ID, 19)
			ctx := context.Background()
			v := testenv.NewChart(t, a, tn.Org.ID, 6, 10)
			e := chartEvent(t, a, tn, func(in *hold.EventInput) { in.ChartID = ptr(v.ChartID.String()) })
			if err := setStatus(t, a, tn, e.ID, "on_sale"); err != nil {
				t.Fatal(err)
			}
			seats := testenv.SeatIDs(t, a, tn.Org.ID, e.ID)
			free := seats[len(seats)-1] // nobody else asks for it
			procs := []*app.App{a, b}
			for _, p := range procs { // both cache the event while it is on sale
				if _, _, err := p.Events.Seats(ctx, buyer(buyers[0]), e.ID); err != nil {
					t.Fatal(err)
				}
			}

			var wg sync.WaitGroup
			var mu sync.Mutex
			granted := map[uuid.UUID]uuid.UUID{} // hold -> seat
			refusals := map[apperr.Code]int{}
			for i, u := range buyers {
				p := procs[i%2]
				wg.Go(func() {
					for _, seat := range seats[i*perBuyer : (i+1)*perBuyer] {
						res, err := p.Holds.Hold(ctx, buyer(u), hold.Request{Event: e.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
						mu.Lock()
						if err != nil {
							refusals[apperr.CodeOf(err)]++
						} else {
							granted[res.Holds[0].ID] = seat
						}
						mu.Unlock()
					}
				})
			}
			testsvc.Eventually(t, 10*time.Second, "some holds before the close", func() bool {
				return count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, e.ID) >= len(buyers)/2
			})
			if err := setStatus(t, a, tn, e.ID, "closed"); err != nil {
				t.Fatal(err)
			}
			// The close has returned: no process grants a hold any more.
			for i, p := range procs {
				if _, err := p.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: e.ID, Seats: []uuid.UUID{free},
					Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.NotOnSale {
					t.Errorf("process %d after the close: %v, want not_on_sale", i, err)
				}
			}
			wg.Wait()

			t.Logf("granted %d, refusals %v", len(granted), refusals)
			for code := range refusals {
				if code != apperr.NotOnSale {
					t.Errorf("refusal %q, want not_on_sale", code)
				}
			}
			if len(granted)+refusals[apperr.NotOnSale] != len(buyers)*perBuyer {
				t.Errorf("%d granted and %v refused of %d", len(granted), refusals, len(buyers)*perBuyer)
			}
			if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, e.ID); n != len(granted) {
				t.Errorf("%d holds written, %d granted", n, len(granted))
			}
			for h, seat := range granted {
				if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE id = $1 AND seat_id = $2 AND status = 'active'`, h, seat); n != 1 {
					t.Errorf("granted hold %v on %v is not active in Postgres", h, seat)
				}
			}
			assertSeatInvariants(t, a, e.ID)
			if !postgres {
				testsvc.Eventually(t, 10*time.Second, "Redis agrees with Postgres", func() bool {
					reg, err := a.Monitor.RegistryStatus(ctx, organizer(tn), e.ID)
					return err == nil && reg.Redis == reg.Postgres && reg.Postgres == len(granted)
				})
			}
		})
	}
}

// TestPaidRevenueUnderConcurrency: twenty buyers buy two seats each, in
// two concurrent halves, the second racing a change of one category's
// price and currency, and half of the bookings of both halves are
// cancelled at once by the box office; the sold revenue PaidOccupancy
// answers is then exactly what the live tickets were paid, by category
// and currency, and no sale or cancellation failed on the counters.
func TestPaidRevenueUnderConcurrency(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 20)
	e := chartEvent(t, a, tn, nil)
	if err := setStatus(t, a, tn, e.ID, "on_sale"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	seats := testenv.SeatIDs(t, a, tn.Org.ID, e.ID) // the 20 seated ones first, then the standing places
	bookings := make([]uuid.UUID, len(tn.Buyers))
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(tn.Buyers))
	// Buyer i takes seat i (front for the first ten, back for the
	// others) and a standing place.
	buy := func(parity int) {
		for i := parity; i < len(tn.Buyers); i += 2 {
			u := tn.Buyers[i]
			wg.Go(func() {
				res, err := a.Holds.Hold(ctx, buyer(u), hold.Request{Event: e.ID, Seats: []uuid.UUID{seats[i], seats[20+i]}, Source: hold.SourceAPI})
				if err != nil {
					errs <- err
					return
				}
				b, err := a.Holds.Purchase(ctx, buyer(u), e.ID, "k-"+u.ID.String(), []uuid.UUID{res.Holds[0].ID, res.Holds[1].ID})
				if err != nil {
					errs <- err
					return
				}
				bookings[i] = b.ID
			})
		}
	}
	// Half buy, then front's price and currency change while the other
	// half buy.
	buy(0)
	wg.Wait()
	buy(1)
	wg.Go(func() {
		_, err := a.Events.Update(ctx, organizer(tn), e.ID, hold.EventInput{
			Prices: []store.Price{{Category: "front", PriceMinor: 6000, Currency: "USD"}, {Category: "back", PriceMinor: 2500, Currency: "EUR"}}})
		if err != nil {
			errs <- err
		}
	})
	wg.Wait()
	for i := range bookings {
		if i%4 != 0 && i%4 != 3 {
			continue
		}
		wg.Go(func() {
			if _, err := a.BoxOffice.Cancel(ctx, staff(tn.BoxOffice), bookings[i], nil, "refund"); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	rows, err := a.Pool.Query(ctx, `
		SELECT s.category, t.currency, sum(t.price_minor)::bigint FROM tickets t JOIN seats s ON s.id = t.seat_id
		WHERE t.org_id = $1 AND t.event_id = $2 AND t.cancelled_at IS NULL GROUP BY 1, 2`, tn.Org.ID, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	var cat, cur string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&cat, &cur, &n}, func() error { want[cat+" "+cur] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	o, err := a.Monitor.PaidOccupancy(ctx, organizer(tn), e.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, c := range o.Categories {
		if c.RevenueSold != 0 {
			got[c.Key+" "+c.Currency] = c.RevenueSold
		}
		for cur, n := range c.RevenueSoldOther {
			got[c.Key+" "+cur] = n
		}
	}
	if len(want) == 0 || !maps.Equal(got, want) {
		t.Fatalf("paid revenue %v; the live tickets were paid %v", got, want)
	}
	t.Logf("10 of 20 bookings live, price changed mid-sale: revenue by category and currency %v", got)
}

// TestConcurrentSalesDoNotWaitOnRevenue: seventeen sales of one category,
// each a transaction of its own on its own backend and all still open,
// write their tickets without waiting for one another. A sale adds its
// revenue to its backend's slot, so none queues on another's uncommitted
// slot; with sixteen slots by transaction, two of seventeen always shared
// one, and the later waited for the earlier's commit.
func TestConcurrentSalesDoNotWaitOnRevenue(t *testing.T) {
	t.Parallel()
	const sales = 17
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, sales)
	e := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 10)
	if err := setStatus(t, a, tn, e.ID, "on_sale"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.Pool.Exec(ctx, `INSERT INTO event_categories (org_id, event_id, key, name, price_minor, currency)
		VALUES ($1, $2, 'std', 'Standard', 4500, 'EUR')`, tn.Org.ID, e.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, `UPDATE seats SET category = 'std' WHERE org_id = $1 AND event_id = $2`, tn.Org.ID, e.ID); err != nil {
		t.Fatal(err)
	}
	seats := testenv.SeatIDs(t, a, tn.Org.ID, e.ID)
	holds := make([]uuid.UUID, sales)
	for i, u := range tn.Buyers {
		res, err := a.Holds.Hold(ctx, buyer(u), hold.Request{Event: e.ID, Seats: []uuid.UUID{seats[i]}, Source: hold.SourceAPI})
		if err != nil {
			t.Fatal(err)
		}
		holds[i] = res.Holds[0].ID
	}

	// One connection a sale, on backends whose slots differ.
	slots := map[int]bool{}
	var txs []pgx.Tx
	for len(txs) < sales {
		conn, err := pgx.Connect(ctx, a.Cfg.DatabaseURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		var pid int
		if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		if slots[pid%256] {
			continue
		}
		slots[pid%256] = true
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		txs = append(txs, tx)
	}
	for i, tx := range txs {
		u := tn.Buyers[i]
		var booking uuid.UUID
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, `INSERT INTO bookings (org_id, event_id, user_id, idempotency_key, request_hash)
			VALUES ($1, $2, $3, $4, 'test') RETURNING id`, tn.Org.ID, e.ID, u.ID, "sale-"+u.ID.String()).Scan(&booking); err != nil {
			t.Fatal(err)
		}
		// Every earlier sale is still open: a shared slot waits here
		// until the lock timeout.
		if _, err := tx.Exec(ctx, `INSERT INTO tickets (org_id, event_id, booking_id, seat_id, seat_idx, hold_id, price_minor, currency)
			SELECT $1, $2, $3, s.id, s.idx, $5, 4500, 'EUR' FROM seats s WHERE s.org_id = $1 AND s.id = $4`,
			tn.Org.ID, e.ID, booking, seats[i], holds[i]); err != nil {
			t.Fatalf("sale %d of %d waited for another sale's revenue: %v", i+1, sales, err)
		}
	}
	for _, tx := range txs {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var paid int64
	if err := a.Pool.QueryRow(ctx, `SELECT sum(paid_minor) FROM event_revenue WHERE org_id = $1 AND event_id = $2`,
		tn.Org.ID, e.ID).Scan(&paid); err != nil || paid != sales*4500 {
		t.Fatalf("revenue %d (%v), want %d", paid, err, sales*4500)
	}
}
