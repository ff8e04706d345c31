package web

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/web/api"
)

// TestAPIEndToEnd drives the JSON API as two buyers would: sign up on the
// storefront, race for one seat, check out, buy (and retry the purchase).
func TestAPIEndToEnd(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, ownQueues(t))
	testenv.Background(t, s.app)
	a := s.app
	tn := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 2, 3, 4)

	// Sign up two buyers on the org's storefront, each following the
	// link mailed to them.
	mp := testsvc.MailpitFromEnv(t)
	buyers := make([]*client, 2)
	for i := range buyers {
		buyers[i] = signUp(t, s, mp, tn.Org.Slug, "Buyer"+uuid.NewString()[:6]+"@Example.com")
		var acc api.AccountJSON
		buyers[i].do("GET", "/api/v1/me", nil).want(t, http.StatusOK).json(t, &acc)
		if acc.User.Role != "buyer" || acc.Org.ID != tn.Org.ID || acc.Org.Slug != tn.Org.Slug {
			t.Fatalf("signed-up account %+v", acc)
		}
	}
	// Both see the org's event and its seats.
	var events struct {
		Events []api.EventJSON `json:"events"`
	}
	buyers[0].do("GET", "/api/v1/events", nil).want(t, http.StatusOK).json(t, &events)
	if len(events.Events) != 1 || events.Events[0].ID != ev.ID || events.Events[0].Seats != 24 {
		t.Fatalf("events %+v", events.Events)
	}
	var seats struct {
		Seats []api.SeatJSON `json:"seats"`
	}
	e := "/api/v1/events/" + ev.ID.String()
	buyers[1].do("GET", e+"/seats", nil).want(t, http.StatusOK).json(t, &seats)
	if len(seats.Seats) != 24 || seats.Seats[0].Section != "A" || seats.Seats[0].Row != "A" || seats.Seats[0].Number != 1 ||
		seats.Seats[0].Status != "available" || seats.Seats[0].Version < 1 {
		t.Fatalf("seats: %d, first %+v", len(seats.Seats), seats.Seats[0])
	}
	seat := seats.Seats[5].ID

	// Both hold the same seat at once: exactly one wins.
	results := make([]response, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, c := range buyers {
		wg.Go(func() {
			<-start
			results[i] = c.do("POST", e+"/holds", map[string]string{"seat_id": seat.String()})
		})
	}
	close(start)
	wg.Wait()
	statuses := map[int]int{}
	winner, loser := -1, -1
	for i, r := range results {
		statuses[r.status]++
		switch r.status {
		case http.StatusCreated:
			winner = i
		case http.StatusConflict:
			loser = i
			if e := r.errBody(t); e.Error != "seat_taken" || len(e.Seats) != 1 || e.Seats[0] != seat.String() {
				t.Fatalf("loser's error %s", r.body)
			}
		}
	}
	if winner < 0 || loser < 0 {
		t.Fatalf("concurrent holds on one seat: %v, want one 201 and one 409", statuses)
	}
	t.Logf("two buyers, one seat, concurrently: statuses %v", statuses)
	w := buyers[winner]
	var h holdOf
	results[winner].json(t, &h)
	if h.SeatID != seat || h.EventID != ev.ID || h.Status != "active" {
		t.Fatalf("hold %+v", h)
	}
	heldUntil := parseTime(t, h.HeldUntil)
	if d := time.Until(heldUntil); d < a.Cfg.HoldTTL-time.Minute || d > a.Cfg.HoldTTL+time.Second {
		t.Fatalf("held_until %s is %s away, want about %s", h.HeldUntil, d, a.Cfg.HoldTTL)
	}
	// Holding it again is idempotent: 200, same hold.
	var again holdOf
	w.do("POST", e+"/holds", map[string]string{"seat_id": seat.String()}).want(t, http.StatusOK).json(t, &again)
	if again.ID != h.ID {
		t.Fatalf("second hold %s, first %s", again.ID, h.ID)
	}
	// A second seat, as a list.
	var list map[string][]holdOf
	w.do("POST", e+"/holds", map[string]any{"seat_ids": []string{seats.Seats[6].ID.String()}}).
		want(t, http.StatusCreated).json(t, &list)
	second := list["holds"][0]

	// Checkout extends every hold once.
	var co map[string][]holdOf
	w.do("POST", e+"/checkout", nil).want(t, http.StatusOK).json(t, &co)
	byID := map[uuid.UUID]holdOf{}
	for _, x := range co["holds"] {
		byID[x.ID] = x
	}
	extended := parseTime(t, byID[h.ID].HeldUntil)
	if got := extended.Sub(heldUntil); got != a.Cfg.HoldExtension {
		t.Fatalf("checkout moved held_until by %s, want %s", got, a.Cfg.HoldExtension)
	}
	w.do("POST", e+"/checkout", nil).want(t, http.StatusOK).json(t, &co)
	for _, x := range co["holds"] {
		if x.ID == h.ID && parseTime(t, x.HeldUntil) != extended {
			t.Fatalf("second checkout moved held_until again: %s → %s", extended, x.HeldUntil)
		}
	}
	t.Logf("checkout: held_until +%s; second checkout: unchanged", extended.Sub(heldUntil))

	// Purchase, retried with the same key: the same booking.
	key := "order-" + uuid.NewString()
	body := map[string]any{"hold_ids": []string{h.ID.String()}}
	var b1, b2 api.BookingJSON
	w.do("POST", e+"/purchase", body, "Idempotency-Key", key).want(t, http.StatusCreated).json(t, &b1)
	w.do("POST", e+"/purchase", body, "Idempotency-Key", key).want(t, http.StatusOK).json(t, &b2)
	if b1.ID != b2.ID || b1.Status != "confirmed" || len(b1.Tickets) != 1 || b1.Tickets[0].SeatID != seat ||
		len(b2.Tickets) != 1 || b2.Tickets[0].ID != b1.Tickets[0].ID {
		t.Fatalf("purchase %+v, replay %+v", b1, b2)
	}
	// The same key with another payload is refused.
	w.do("POST", e+"/purchase", map[string]any{"hold_ids": []string{second.ID.String()}}, "Idempotency-Key", key).
		wantErr(t, http.StatusUnprocessableEntity, "idempotency_mismatch")
	// The sold seat is sold for everybody; the loser cannot hold it.
	buyers[loser].do("GET", e+"/seats", nil).want(t, http.StatusOK).json(t, &seats)
	for _, st := range seats.Seats {
		if st.ID == seat && st.Status != "sold" {
			t.Fatalf("bought seat is %s", st.Status)
		}
	}
	buyers[loser].do("POST", e+"/holds", map[string]string{"seat_id": seat.String()}).wantErr(t, http.StatusConflict, "seat_taken")
	// The winner releases the other hold; staff see no active hold left.
	w.do("DELETE", "/api/v1/holds/"+second.ID.String(), nil).want(t, http.StatusNoContent)
	w.do("DELETE", "/api/v1/holds/"+second.ID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")
	staffC := s.as(tn.Org, tn.BoxOffice)
	var active map[string][]holdOf
	staffC.do("GET", e+"/holds", nil).want(t, http.StatusOK).json(t, &active)
	if len(active["holds"]) != 0 {
		t.Fatalf("active holds left: %+v", active["holds"])
	}
	var occ api.OccupancyJSON
	staffC.do("GET", e+"/occupancy", nil).want(t, http.StatusOK).json(t, &occ)
	if occ.Sold != 1 || occ.Held != 0 || occ.Total != 24 || occ.Available != 23 || len(occ.Sections) != 2 ||
		occ.PercentSold != 4.17 || occ.PercentAvailable != 95.83 {
		t.Fatalf("occupancy %+v", occ)
	}
	t.Logf("purchase: 201 then 200 replay with booking %s, 422 for the key with another payload; occupancy sold=%d available=%d (%.2f%%)",
		b1.ID, occ.Sold, occ.Available, occ.PercentAvailable)
}

// TestStaffAPI: box office sees holders and releases with a reason; an
// organizer blocks, unblocks and reads the registry; conflicts are 409.
func TestStaffAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 5)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	e := "/api/v1/events/" + ev.ID.String()
	h := coreHold(t, a, tn.Buyers[0], ev.ID, seats[0])[0]

	// Another buyer cannot release it: 403.
	s.as(tn.Org, tn.Buyers[1]).do("DELETE", "/api/v1/holds/"+h.ID.String(), nil).wantErr(t, http.StatusForbidden, "forbidden")

	box := s.as(tn.Org, tn.BoxOffice)
	var list map[string][]holdOf
	box.do("GET", e+"/holds", nil).want(t, http.StatusOK).json(t, &list)
	if len(list["holds"]) != 1 || list["holds"][0].UserID == nil || *list["holds"][0].UserID != tn.Buyers[0].ID {
		t.Fatalf("staff hold list %+v", list)
	}
	box.do("DELETE", "/api/v1/holds/"+h.ID.String(), map[string]string{"reason": "customer called"}).want(t, http.StatusNoContent)
	var reason string
	if err := a.Pool.QueryRow(t.Context(), `SELECT release_reason FROM seat_holds WHERE id = $1`, h.ID).Scan(&reason); err != nil || reason != "customer called" {
		t.Fatalf("release reason %q, %v", reason, err)
	}

	org := s.as(tn.Org, tn.Organizer)
	var blk api.BlockJSON
	org.do("POST", e+"/seats/"+seats[1].String()+"/block", map[string]string{"reason": "camera"}).want(t, http.StatusOK).json(t, &blk)
	if blk.SeatID != seats[1] || blk.Status != "blocked" || blk.Version < 2 {
		t.Fatalf("block %+v", blk)
	}
	org.do("POST", e+"/seats/"+seats[1].String()+"/block", nil).wantErr(t, http.StatusConflict, "conflict")
	org.do("POST", e+"/seats/"+seats[2].String()+"/unblock", nil).wantErr(t, http.StatusConflict, "conflict")
	org.do("POST", e+"/seats/"+seats[1].String()+"/unblock", nil).want(t, http.StatusOK).json(t, &blk)
	if blk.Status != "available" {
		t.Fatalf("unblock %+v", blk)
	}
	org.do("POST", e+"/seats/"+uuid.NewString()+"/block", nil).wantErr(t, http.StatusNotFound, "not_found")

	var reg struct {
		HotCache   int  `json:"hot_cache"`
		Redis      int  `json:"redis"`
		Postgres   int  `json:"postgres"`
		Consistent bool `json:"consistent"`
	}
	coreHold(t, a, tn.Buyers[1], ev.ID, seats[3])
	org.do("GET", e+"/registry", nil).want(t, http.StatusOK).json(t, &reg)
	if !reg.Consistent || reg.Postgres != 1 || reg.Redis != 1 || reg.HotCache != 1 {
		t.Fatalf("registry %+v", reg)
	}
	org.do("POST", e+"/registry/reconcile", nil).want(t, http.StatusOK).json(t, &reg)
	t.Logf("staff: release with reason 204, block/unblock 200, conflicts 409, registry consistent=%v (pg=%d)", reg.Consistent, reg.Postgres)
}

func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	if ts.Location() != time.UTC {
		t.Fatalf("time %q is not UTC", s)
	}
	return ts
}
