package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/testenv"
	"seatd/web/api"
)

// TestEventDelete: an organizer deletes a draft nobody acted on (API and
// page): it is gone from every read, its chart can then be deleted too,
// and the audit log keeps event.deleted. A published event, and a draft
// whose seat was held (even if released since), are refused with 409 and
// stay as they were; another organization's event is not found and a
// buyer is forbidden, both changing nothing. A delete racing a staff hold
// on the same draft ends one way or the other, never both, never a 500.
func TestEventDelete(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn, other := testenv.NewTenant(t, a, 1), testenv.NewTenant(t, a, 1)
	org := s.as(tn.Org, tn.Organizer)
	now := time.Now().UTC()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	draft := func(chartID uuid.UUID) api.EventJSON {
		var e api.EventJSON
		org.do("POST", "/api/v1/events", map[string]any{"name": "Matinee", "venue": "Hall", "starts_at": at(72 * time.Hour),
			"time_zone": "Europe/Paris", "on_sale_at": at(-time.Minute), "sales_end_at": at(48 * time.Hour),
			"chart_id": chartID.String(), "prices": []map[string]any{
				{"category": "front", "price_minor": 4000, "currency": "USD"}, {"category": "back", "price_minor": 1500, "currency": "USD"}}}).
			want(t, http.StatusCreated).json(t, &e)
		if e.Status != "draft" {
			t.Fatalf("a new event is %s", e.Status)
		}
		return e
	}
	staffHold := func(id uuid.UUID, seat string) response {
		return org.do("POST", "/api/v1/events/"+id.String()+"/holds", map[string]any{"seat_ids": []string{seat},
			"customer": map[string]string{"name": "Ada Lovelace", "email": "ada@example.com"}, "held_until": now.Add(24 * time.Hour)})
	}
	seatsOf := func(id uuid.UUID) string {
		var st string
		if err := a.Pool.QueryRow(t.Context(), `
			SELECT string_agg(status || ':' || version, ',' ORDER BY idx) FROM seats WHERE org_id = $1 AND event_id = $2`,
			tn.Org.ID, id).Scan(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	firstSeat := func(id uuid.UUID) string {
		var seats struct {
			Seats []api.SeatJSON `json:"seats"`
		}
		org.do("GET", "/api/v1/events/"+id.String()+"/seats", nil).want(t, http.StatusOK).json(t, &seats)
		return seats.Seats[0].ID.String()
	}

	// Unused: refused to others, then gone for everyone.
	c := testenv.NewChart(t, a, tn.Org.ID, 2, 4)
	e := draft(c.ChartID)
	path := "/api/v1/events/" + e.ID.String()
	before := seatsOf(e.ID)
	s.as(other.Org, other.Organizer).do("DELETE", path, nil).wantErr(t, http.StatusNotFound, "not_found")
	s.as(tn.Org, tn.Buyers[0]).do("DELETE", path, nil).want(t, http.StatusForbidden)
	org.do("DELETE", "/api/v1/events/not-a-uuid", nil).wantErr(t, http.StatusNotFound, "not_found")
	org.do("GET", path, nil).want(t, http.StatusOK)
	if after := seatsOf(e.ID); after != before {
		t.Fatalf("refused deletes changed the seats: %s, then %s", before, after)
	}
	org.do("DELETE", path, nil).want(t, http.StatusNoContent)
	org.do("GET", path, nil).wantErr(t, http.StatusNotFound, "not_found")
	org.do("GET", path+"/seats", nil).wantErr(t, http.StatusNotFound, "not_found")
	org.do("PATCH", path, map[string]any{"status": "on_sale"}).wantErr(t, http.StatusNotFound, "not_found")
	org.do("DELETE", path, nil).wantErr(t, http.StatusNotFound, "not_found")
	org.do("GET", "/admin/events/"+e.ID.String(), nil).want(t, http.StatusNotFound)
	if list := org.do("GET", "/api/v1/events", nil); strings.Contains(string(list.body), e.ID.String()) {
		t.Fatalf("the events list still has the deleted draft: %s", list.body)
	}
	var audited int
	if err := a.Pool.QueryRow(t.Context(), `
		SELECT count(*) FROM audit_log WHERE org_id = $1 AND event_id = $2 AND action = 'event.deleted' AND actor_id = $3
		  AND data->>'name' = 'Matinee'`, tn.Org.ID, e.ID, tn.Organizer.ID).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	if audited != 1 {
		t.Fatalf("%d event.deleted audit rows", audited)
	}
	org.do("DELETE", "/api/v1/charts/"+c.ChartID.String(), nil).want(t, http.StatusNoContent)

	// Published: refused, and it stays on sale.
	pub := draft(testenv.NewChart(t, a, tn.Org.ID, 1, 4).ChartID)
	org.do("PATCH", "/api/v1/events/"+pub.ID.String(), map[string]any{"status": "on_sale"}).want(t, http.StatusOK)
	before = seatsOf(pub.ID)
	if e := org.do("DELETE", "/api/v1/events/"+pub.ID.String(), nil).wantErr(t, http.StatusConflict, "conflict"); !strings.Contains(e.Message, "only a draft") {
		t.Fatalf("refusal: %+v", e)
	}
	var got api.EventJSON
	org.do("GET", "/api/v1/events/"+pub.ID.String(), nil).want(t, http.StatusOK).json(t, &got)
	if got.Status != "on_sale" || seatsOf(pub.ID) != before {
		t.Fatalf("after a refused delete: %s, seats %s (were %s)", got.Status, seatsOf(pub.ID), before)
	}

	// A draft whose seat staff held and released: refused, seats untouched.
	used := draft(testenv.NewChart(t, a, tn.Org.ID, 1, 4).ChartID)
	var held map[string][]holdOf
	staffHold(used.ID, firstSeat(used.ID)).want(t, http.StatusCreated).json(t, &held)
	org.do("DELETE", "/api/v1/holds/"+held["holds"][0].ID.String(), map[string]string{"reason": "changed plans"}).want(t, http.StatusNoContent)
	before = seatsOf(used.ID)
	if e := org.do("DELETE", "/api/v1/events/"+used.ID.String(), nil).wantErr(t, http.StatusConflict, "conflict"); !strings.Contains(e.Message, "close it instead") {
		t.Fatalf("refusal: %+v", e)
	}
	if after := seatsOf(used.ID); after != before {
		t.Fatalf("a refused delete changed the seats: %s, then %s", before, after)
	}

	// The page: a refusal is said on the events list; a delete goes through.
	if list := org.do("GET", "/admin/events", nil); !strings.Contains(string(list.body), `aria-label="Delete draft Matinee"`) {
		t.Fatalf("the events list offers no delete for drafts: %s", list.body)
	}
	org.do("POST", "/admin/events/"+used.ID.String()+"/delete", formBody(url.Values{})).want(t, http.StatusSeeOther)
	if page := org.do("GET", "/admin/events", nil); !strings.Contains(string(page.body), "close it instead") {
		t.Fatalf("the events list after a refused delete: %s", page.body)
	}
	spare := draft(testenv.NewChart(t, a, tn.Org.ID, 1, 2).ChartID)
	org.do("POST", "/admin/events/"+spare.ID.String()+"/delete", formBody(url.Values{})).want(t, http.StatusSeeOther)
	if page := org.do("GET", "/admin/events", nil); !strings.Contains(string(page.body), "Draft deleted.") {
		t.Fatalf("the events list after a delete: %s", page.body)
	}
	org.do("GET", "/api/v1/events/"+spare.ID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")

	// Racing: a staff hold and the delete of the same draft at once.
	rc := testenv.NewChart(t, a, tn.Org.ID, 1, 2)
	outcomes := map[string]int{}
	for range 20 {
		d := draft(rc.ChartID)
		seat := firstSeat(d.ID)
		var del, h response
		var wg sync.WaitGroup
		wg.Go(func() { del = org.do("DELETE", "/api/v1/events/"+d.ID.String(), nil) })
		wg.Go(func() { h = staffHold(d.ID, seat) })
		wg.Wait()
		key := fmt.Sprintf("delete %d, hold %d", del.status, h.status)
		outcomes[key]++
		switch key {
		case "delete 204, hold 404", "delete 204, hold 409", "delete 409, hold 201":
		default:
			t.Fatalf("%s: %s / %s", key, del.body, h.body)
		}
		var holds int
		var status string
		if err := a.Pool.QueryRow(t.Context(), `
			SELECT (SELECT count(*) FROM seat_holds WHERE org_id = $1 AND event_id = $2), status FROM events WHERE org_id = $1 AND id = $2`,
			tn.Org.ID, d.ID).Scan(&holds, &status); err != nil {
			t.Fatal(err)
		}
		if (del.status == http.StatusNoContent) != (status == "deleted") || (status == "deleted") != (holds == 0) {
			t.Fatalf("%s, and the event is %s with %d holds", key, status, holds)
		}
	}
	t.Logf("racing delete and staff hold: %v", outcomes)
}
