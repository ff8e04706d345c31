package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/testenv"
)

// TestTenancy: a session of org B gets 404 for every object of org A,
// exactly like for a missing one, and org A does not change; org ids
// smuggled into path, query, body or headers change nothing.
func TestTenancy(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	ta, tb := testenv.NewTenant(t, a, 1), testenv.NewTenant(t, a, 1)
	evA := testenv.NewEvent(t, a, ta.Org.ID, 1, 2, 5)
	evB := testenv.NewEvent(t, a, tb.Org.ID, 1, 2, 5)
	seatsA := testenv.SeatIDs(t, a, ta.Org.ID, evA.ID)
	seatsB := testenv.SeatIDs(t, a, tb.Org.ID, evB.ID)
	holdA := coreHold(t, a, ta.Buyers[0], evA.ID, seatsA[0])[0]

	before := orgState(t, a, ta.Org.ID)
	clients := map[string]*client{
		"buyer":      s.as(tb.Org, tb.Buyers[0]),
		"box_office": s.as(tb.Org, tb.BoxOffice),
		"organizer":  s.as(tb.Org, tb.Organizer),
	}
	// The same, with API keys of org B instead of sessions.
	for _, role := range []string{"buyer", "box_office", "organizer"} {
		_, secret := keyOf(t, clients["organizer"], role)
		clients["key:"+role] = s.withKey(secret)
	}
	keyA, _ := keyOf(t, s.as(ta.Org, ta.Organizer), "buyer")
	hookA, err := s.srv.hooks.Create(t.Context(), ta.Org.ID, "http://127.0.0.1:9/", []string{"seat.blocked"})
	if err != nil {
		t.Fatal(err)
	}
	hk := hookA.ID.String()

	ea, sa, ha := evA.ID.String(), seatsA[1].String(), holdA.ID.String()
	missing := uuid.NewString()
	cases := []struct {
		name         string
		roles        []string
		method, path string
		body         any
		hdr          []string
	}{
		{"event", []string{"buyer", "box_office", "organizer"}, "GET", "/api/v1/events/" + ea, nil, nil},
		{"seats", []string{"buyer", "box_office", "organizer"}, "GET", "/api/v1/events/" + ea + "/seats", nil, nil},
		{"hold on A's event", []string{"buyer"}, "POST", "/api/v1/events/" + ea + "/holds", map[string]any{"seat_id": sa}, nil},
		{"hold A's seat on B's event", []string{"buyer"}, "POST", "/api/v1/events/" + evB.ID.String() + "/holds", map[string]any{"seat_id": sa}, nil},
		{"hold A's seats as a list", []string{"buyer"}, "POST", "/api/v1/events/" + ea + "/holds", map[string]any{"seat_ids": []string{sa, seatsA[2].String()}}, nil},
		{"my holds", []string{"buyer"}, "GET", "/api/v1/events/" + ea + "/holds/mine", nil, nil},
		{"release A's hold", []string{"buyer"}, "DELETE", "/api/v1/holds/" + ha, nil, nil},
		{"release A's hold with reason", []string{"box_office", "organizer"}, "DELETE", "/api/v1/holds/" + ha, map[string]any{"reason": "x"}, nil},
		{"checkout", []string{"buyer"}, "POST", "/api/v1/events/" + ea + "/checkout", nil, nil},
		{"purchase A's hold", []string{"buyer"}, "POST", "/api/v1/events/" + ea + "/purchase", map[string]any{"hold_ids": []string{ha}}, []string{"Idempotency-Key", "k-" + uuid.NewString()}},
		{"purchase A's hold on B's event", []string{"buyer"}, "POST", "/api/v1/events/" + evB.ID.String() + "/purchase", map[string]any{"hold_ids": []string{ha}}, []string{"Idempotency-Key", "k-" + uuid.NewString()}},
		{"event holds", []string{"box_office", "organizer"}, "GET", "/api/v1/events/" + ea + "/holds", nil, nil},
		{"occupancy", []string{"box_office", "organizer"}, "GET", "/api/v1/events/" + ea + "/occupancy", nil, nil},
		{"block", []string{"organizer"}, "POST", "/api/v1/events/" + ea + "/seats/" + sa + "/block", nil, nil},
		{"block A's seat on B's event", []string{"organizer"}, "POST", "/api/v1/events/" + evB.ID.String() + "/seats/" + sa + "/block", nil, nil},
		{"unblock", []string{"organizer"}, "POST", "/api/v1/events/" + ea + "/seats/" + sa + "/unblock", nil, nil},
		{"registry", []string{"organizer"}, "GET", "/api/v1/events/" + ea + "/registry", nil, nil},
		{"reconcile", []string{"organizer"}, "POST", "/api/v1/events/" + ea + "/registry/reconcile", nil, nil},
		{"revoke A's API key", []string{"organizer"}, "DELETE", "/api/v1/api-keys/" + keyA.String(), nil, nil},
		{"delete A's webhook", []string{"organizer"}, "DELETE", "/api/v1/webhooks/" + hk, nil, nil},
		{"A's deliveries", []string{"organizer"}, "GET", "/api/v1/webhooks/" + hk + "/deliveries", nil, nil},
		{"send A's delivery again", []string{"organizer"}, "POST", "/api/v1/webhooks/" + hk + "/deliveries/" + missing + "/redeliver", nil, nil},
	}
	n := 0
	for _, tc := range cases {
		for _, role := range append(tc.roles, prefixed("key:", tc.roles)...) {
			t.Run(tc.name+"/"+role, func(t *testing.T) {
				c := clients[role]
				r := c.do(tc.method, tc.path, tc.body, tc.hdr...)
				e := r.wantErr(t, http.StatusNotFound, "not_found")
				// Identical to an object that does not exist at all.
				m := c.do(tc.method, strings.NewReplacer(ea, missing, ha, missing, keyA.String(), missing, hk, missing).Replace(tc.path), tc.body, tc.hdr...)
				if m.status != r.status || m.errBody(t).Error != e.Error {
					t.Fatalf("other org's object: %d %s; missing object: %d %s", r.status, r.body, m.status, m.body)
				}
				n++
			})
		}
	}
	if after := orgState(t, a, ta.Org.ID); after != before {
		t.Fatalf("org A changed:\nbefore %s\nafter  %s", before, after)
	}
	var revoked int
	if err := a.Pool.QueryRow(t.Context(), `SELECT count(*) FROM api_keys WHERE org_id = $1 AND revoked_at IS NOT NULL`, ta.Org.ID).Scan(&revoked); err != nil || revoked != 0 {
		t.Fatalf("org A's API keys revoked by org B: %d (%v)", revoked, err)
	}
	t.Logf("%d cross-tenant requests from org B (sessions and API keys): all 404 not_found, org A's seats, holds, bookings and users unchanged", n)

	t.Run("smuggled org ids", func(t *testing.T) {
		c := clients["buyer"]
		orgA := ta.Org.ID.String()
		smuggle := []string{"X-Org-ID", orgA, "X-Org", ta.Org.Slug, "X-Tenant-ID", orgA, "Org", orgA}

		// Query and headers: still B's events only.
		var list struct {
			Events []struct{ ID uuid.UUID } `json:"events"`
		}
		c.do("GET", "/api/v1/events?org="+orgA+"&org_id="+orgA+"&org_slug="+ta.Org.Slug, nil, smuggle...).
			want(t, http.StatusOK).json(t, &list)
		if len(list.Events) != 1 || list.Events[0].ID != evB.ID {
			t.Fatalf("events with smuggled org: %+v, want only B's %s", list.Events, evB.ID)
		}
		// A's event with smuggled headers and query: still 404.
		c.do("GET", "/api/v1/events/"+ea+"/seats?org_id="+orgA, nil, smuggle...).wantErr(t, http.StatusNotFound, "not_found")
		// A body field naming an org is refused, not obeyed.
		c.do("POST", "/api/v1/events/"+evB.ID.String()+"/holds", map[string]any{"seat_id": seatsB[0].String(), "org_id": orgA}).
			wantErr(t, http.StatusUnprocessableEntity, "invalid")
		// A path naming an org is no route.
		c.do("GET", "/api/v1/orgs/"+orgA+"/events", nil).wantErr(t, http.StatusNotFound, "not_found")
		// A hold with everything smuggled lands in B, the session's org.
		var h holdOf
		c.do("POST", "/api/v1/events/"+evB.ID.String()+"/holds?org_id="+orgA, map[string]any{"seat_id": seatsB[0].String()}, smuggle...).
			want(t, http.StatusCreated).json(t, &h)
		var org uuid.UUID
		if err := a.Pool.QueryRow(t.Context(), `SELECT org_id FROM seat_holds WHERE id = $1`, h.ID).Scan(&org); err != nil {
			t.Fatal(err)
		}
		if org != tb.Org.ID {
			t.Fatalf("hold landed in org %s, want B %s", org, tb.Org.ID)
		}
		if after := orgState(t, a, ta.Org.ID); after != before {
			t.Fatal("org A changed after smuggling attempts")
		}
		t.Logf("smuggled org ids in query, 4 headers, body and path: ignored or refused; the hold landed in org B")
	})
}

func prefixed(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}
