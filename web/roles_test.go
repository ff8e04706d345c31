package web

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestRoleMatrix: every route × every role (anonymous, buyer, box office,
// organizer) answers the expected status. Each cell gets fresh objects
// (holds, seats) so a success is a real success.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 2, 10, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	holder := tn.Buyers[0]
	e := ev.ID.String()

	var next atomic.Int64 // hands out seats so no two cells touch the same one
	seat := func() uuid.UUID { return seats[next.Add(1)] }
	users := map[string]store.User{"buyer": holder, "box_office": tn.BoxOffice, "organizer": tn.Organizer}

	// A request, built per cell (so it can create what it needs).
	type req struct {
		method, path string
		body         any
		hdr          []string
	}
	simple := func(method, path string) func(t *testing.T) req {
		return func(*testing.T) req { return req{method: method, path: path} }
	}
	heldSeat := func(t *testing.T) store.Hold { return coreHold(t, a, holder, ev.ID, seat())[0] }
	ch, err := a.Store.Charts.Save(t.Context(), tn.Org.ID, uuid.Nil, testChart())
	if err != nil {
		t.Fatal(err)
	}
	chartPath := "/api/v1/charts/" + ch.ChartID.String()
	customerHeld := func(t *testing.T) store.Hold { return customerHold(t, a, tn.BoxOffice, ev.ID, seat())[0] }
	sold := func(t *testing.T) store.Booking { return sale(t, a, tn.BoxOffice, ev.ID, seat()) }
	blocked := func(t *testing.T) []string {
		var ids []string
		for range 2 {
			st := seat()
			if _, err := a.Holds.SetBlocked(t.Context(), actor(tn.Organizer), ev.ID, st, true, "house"); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, st.String())
		}
		return ids
	}

	const (
		anon = "anonymous"
	)
	roles := []string{anon, "buyer", "box_office", "organizer"}
	cases := []struct {
		name string
		req  func(t *testing.T) req
		want map[string]int
	}{
		{"GET /healthz", simple("GET", "/healthz"), all(200)},
		{"GET /readyz", simple("GET", "/readyz"), all(200)},
		{"POST /login", func(*testing.T) req {
			return req{method: "POST", path: "/login", body: map[string]string{"org": tn.Org.Slug, "email": holder.Email, "password": testenv.Password}}
		}, all(200)},
		{"POST /o/{org}/signup", func(*testing.T) req {
			return req{method: "POST", path: "/o/" + tn.Org.Slug + "/signup",
				body: map[string]string{"email": "new-" + uuid.NewString()[:8] + "@x.example", "password": testenv.Password}}
		}, all(202)},
		{"POST /password-reset", func(*testing.T) req {
			return req{method: "POST", path: "/password-reset",
				body: map[string]string{"org": tn.Org.Slug, "email": "nobody-" + uuid.NewString()[:8] + "@x.example"}}
		}, all(202)},
		{"POST /verify-email/resend", simple("POST", "/verify-email/resend"), signedIn(202)},
		{"GET /api/v1/me/sessions", simple("GET", "/api/v1/me/sessions"), signedIn(200)},
		{"POST /api/v1/me/sessions/revoke-others", simple("POST", "/api/v1/me/sessions/revoke-others"), signedIn(200)},
		{"GET /api/v1/org", simple("GET", "/api/v1/org"), only(200, "organizer")},
		{"PATCH /api/v1/org", func(*testing.T) req {
			return req{method: "PATCH", path: "/api/v1/org", body: map[string]string{"signup_policy": "open"}}
		}, only(200, "organizer")},
		{"POST /api/v1/invitations", func(*testing.T) req {
			return req{method: "POST", path: "/api/v1/invitations", body: map[string]string{"email": "inv-" + uuid.NewString()[:8] + "@x.example"}}
		}, only(201, "organizer")},
		{"GET /api/v1/invitations", simple("GET", "/api/v1/invitations"), only(200, "organizer")},
		{"DELETE /api/v1/invitations/{invitation}", func(t *testing.T) req {
			inv, err := a.Accounts.Invite(t.Context(), tn.Org, tn.Organizer.ID, "rev-"+uuid.NewString()[:8]+"@x.example")
			if err != nil {
				t.Fatal(err)
			}
			return req{method: "DELETE", path: "/api/v1/invitations/" + inv.ID.String()}
		}, only(204, "organizer")},
		{"POST /invitations/accept", func(*testing.T) req {
			return req{method: "POST", path: "/invitations/accept", body: map[string]string{"token": "no-such-token", "password": testenv.Password}}
		}, all(404)},
		{"POST /logout", simple("POST", "/logout"), all(204)},
		{"GET /api/v1/me", simple("GET", "/api/v1/me"), signedIn(200)},
		{"GET /api/v1/events", simple("GET", "/api/v1/events"), signedIn(200)},
		{"GET /api/v1/events/{event}", simple("GET", "/api/v1/events/"+e), signedIn(200)},
		{"GET /api/v1/events/{event}/seats", simple("GET", "/api/v1/events/"+e+"/seats"), signedIn(200)},
		{"POST /api/v1/events/{event}/holds", func(*testing.T) req {
			return req{method: "POST", path: "/api/v1/events/" + e + "/holds", body: map[string]string{"seat_id": seat().String()}}
		}, only(201, "buyer")},
		{"GET /api/v1/events/{event}/holds/mine", simple("GET", "/api/v1/events/"+e+"/holds/mine"), only(200, "buyer")},
		{"DELETE /api/v1/holds/{hold}", func(t *testing.T) req {
			return req{method: "DELETE", path: "/api/v1/holds/" + heldSeat(t).ID.String(), body: map[string]string{"reason": "roles test"}}
		}, signedIn(204)},
		{"POST /api/v1/events/{event}/checkout", simple("POST", "/api/v1/events/"+e+"/checkout"), only(200, "buyer")},
		{"POST /api/v1/events/{event}/purchase", func(t *testing.T) req {
			return req{method: "POST", path: "/api/v1/events/" + e + "/purchase",
				body: map[string]any{"hold_ids": []string{heldSeat(t).ID.String()}}, hdr: []string{"Idempotency-Key", uuid.NewString()}}
		}, only(201, "buyer")},
		{"GET /api/v1/events/{event}/holds", simple("GET", "/api/v1/events/"+e+"/holds"), only(200, "box_office", "organizer")},
		{"GET /api/v1/events/{event}/occupancy", simple("GET", "/api/v1/events/"+e+"/occupancy"), only(200, "box_office", "organizer")},
		{"POST /api/v1/events/{event}/seats/{seat}/block", func(*testing.T) req {
			return req{method: "POST", path: "/api/v1/events/" + e + "/seats/" + seat().String() + "/block"}
		}, only(200, "box_office", "organizer")},
		{"POST /api/v1/events/{event}/seats/{seat}/unblock", func(t *testing.T) req {
			st := seat()
			if _, err := a.Holds.SetBlocked(t.Context(), actor(tn.Organizer), ev.ID, st, true, "test"); err != nil {
				t.Fatal(err)
			}
			return req{method: "POST", path: "/api/v1/events/" + e + "/seats/" + st.String() + "/unblock"}
		}, only(200, "box_office", "organizer")},
		{"POST /api/v1/charts", func(*testing.T) req { return req{method: "POST", path: "/api/v1/charts", body: testChart()} },
			only(201, "organizer")},
		{"GET /api/v1/charts", simple("GET", "/api/v1/charts"), only(200, "organizer")},
		{"GET /api/v1/charts/{chart}", simple("GET", chartPath), only(200, "organizer")},
		{"PUT /api/v1/charts/{chart}", func(*testing.T) req { return req{method: "PUT", path: chartPath, body: testChart()} },
			only(200, "organizer")},
		{"POST /api/v1/events/{event}/holds (customer)", func(*testing.T) req {
			return req{method: "POST", path: "/api/v1/events/" + e + "/holds", body: map[string]any{"seat_ids": []string{seat().String()},
				"customer": map[string]string{"name": "Ada", "email": "ada@example.com"}, "held_until": time.Now().Add(48 * time.Hour)}}
		}, only(201, "box_office", "organizer")},
		{"POST /api/v1/events/{event}/sales", func(t *testing.T) req {
			return req{method: "POST", path: "/api/v1/events/" + e + "/sales",
				body: map[string]any{"hold_ids": []string{customerHeld(t).ID.String()}, "payment_method": "cash"},
				hdr:  []string{"Idempotency-Key", uuid.NewString()}}
		}, only(201, "box_office", "organizer")},
		{"GET /api/v1/bookings/{booking}", func(t *testing.T) req {
			return req{method: "GET", path: "/api/v1/bookings/" + sold(t).ID.String()}
		}, map[string]int{"anonymous": 401, "buyer": 404, "box_office": 200, "organizer": 200}},
		{"POST /api/v1/bookings/{booking}/cancel", func(t *testing.T) req {
			return req{method: "POST", path: "/api/v1/bookings/" + sold(t).ID.String() + "/cancel", body: map[string]string{"reason": "roles"}}
		}, only(200, "box_office", "organizer")},
		{"GET /api/v1/events/{event}/house-seats", simple("GET", "/api/v1/events/"+e+"/house-seats"), only(200, "box_office", "organizer")},
		{"POST /api/v1/events/{event}/house-seats", func(t *testing.T) req {
			return req{method: "POST", path: "/api/v1/events/" + e + "/house-seats", body: map[string]any{"name": "Press", "seat_ids": blocked(t)}}
		}, only(201, "box_office", "organizer")},
		{"POST /api/v1/house-seats/{allocation}/release", func(t *testing.T) req {
			var ids []uuid.UUID
			for _, id := range blocked(t) {
				ids = append(ids, uuid.MustParse(id))
			}
			h, err := a.BoxOffice.CreateHouseSeats(t.Context(), actor(tn.Organizer), ev.ID, "Sponsor", ids)
			if err != nil {
				t.Fatal(err)
			}
			return req{method: "POST", path: "/api/v1/house-seats/" + h.ID.String() + "/release"}
		}, only(200, "box_office", "organizer")},
		{"GET /api/v1/events/{event}/registry", simple("GET", "/api/v1/events/"+e+"/registry"), only(200, "organizer")},
		{"POST /api/v1/events/{event}/registry/reconcile", simple("POST", "/api/v1/events/"+e+"/registry/reconcile"), only(200, "organizer")},
	}

	counts := map[int]int{}
	for _, tc := range cases {
		for _, role := range roles {
			want := tc.want[role]
			t.Run(tc.name+"/"+role, func(t *testing.T) {
				c := s.client()
				if role != anon {
					c.login(tn.Org.Slug, users[role].Email, testenv.Password)
				}
				rq := tc.req(t)
				r := c.do(rq.method, rq.path, rq.body, rq.hdr...)
				if r.status != want {
					t.Fatalf("%s as %s: %d, want %d: %s", tc.name, role, r.status, want, r.body)
				}
				if r.status >= 400 {
					r.errBody(t)
				}
				counts[r.status]++
			})
		}
	}
	t.Logf("%d routes × %d roles: statuses %v", len(cases), len(roles), counts)
}

// all expects status for every role.
func all(status int) map[string]int {
	return map[string]int{"anonymous": status, "buyer": status, "box_office": status, "organizer": status}
}

// signedIn expects status for every role and 401 anonymous.
func signedIn(status int) map[string]int {
	m := all(status)
	m["anonymous"] = http.StatusUnauthorized
	return m
}

// only expects status for the listed roles, 403 for the other roles and
// 401 anonymous.
func only(status int, roles ...string) map[string]int {
	m := signedIn(http.StatusForbidden)
	for _, r := range roles {
		if _, ok := m[r]; !ok {
			panic(fmt.Sprintf("unknown role %q", r))
		}
		m[r] = status
	}
	return m
}
