package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/testenv"
	"seatd/web/httpx"
)

// orgWrites is what a refused request must leave as it was: the org's
// seats, holds, bookings and users, its audit entries and its users'
// sessions (the session data names the org).
func orgWrites(t testing.TB, a *app.App, org uuid.UUID) string {
	t.Helper()
	var audit, sessions int
	if err := a.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE org_id = $1`, org).Scan(&audit); err != nil {
		t.Fatal(err)
	}
	if err := a.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM sessions WHERE position(convert_to($1::text, 'UTF8') IN data) > 0`, org.String()).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s|audit=%d|sessions=%d", orgState(t, a, org), audit, sessions)
}

// TestHostileText: NUL, other control characters and invalid UTF-8 in a
// JSON field, a form field, a query string, a path segment, the
// Idempotency-Key header or a cookie answer 4xx (422 invalid naming the
// field; 400 for a body that is not UTF-8 at all) and write nothing. The
// NUL cases answered 500 before: Postgres refuses NUL in text.
func TestHostileText(t *testing.T) {
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 6)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	h := coreHold(t, a, tn.Buyers[0], ev.ID, seats[0])[0]

	anon := s.client()
	buyer := s.as(tn.Org, tn.Buyers[0])
	box := s.as(tn.Org, tn.BoxOffice)
	org := s.as(tn.Org, tn.Organizer)

	e := ev.ID.String()
	email := tn.Buyers[0].Email
	// esc writes the JSON escapes of the characters tried.
	esc := func(s string) string {
		return strings.NewReplacer("\x00", `\u0000`, "\x01", `\u0001`, "\x1b", `\u001b`, "\u0085", `\u0085`).Replace(s)
	}
	js := func(body string) raw { return raw{contentType: httpx.MediaJSON, body: []byte(body)} }
	release := func(reason string) raw {
		return formBody(url.Values{"hold_id": {h.ID.String()}, "reason": {reason}})
	}

	cases := []struct {
		name         string
		c            *client
		method, path string
		body         any
		hdr          []string
		status       int
		field        string // the field the 422 names ("" for a page or a 400)
	}{
		// Formerly 500.
		{"login: NUL in org (JSON)", anon, "POST", "/login", js(`{"org":"` + esc(tn.Org.Slug+"\x00") + `","email":"` + email + `","password":"x"}`), nil, 422, "org"},
		{"login: NUL in email (JSON)", anon, "POST", "/login", js(`{"org":"` + tn.Org.Slug + `","email":"` + esc(email+"\x00") + `","password":"x"}`), nil, 422, "email"},
		{"login: NUL in org (form)", anon, "POST", "/login", formBody(url.Values{"org": {"x\x00"}, "email": {email}, "password": {"x"}}), nil, 422, "org"},
		{"login: NUL in email (form)", anon, "POST", "/login", formBody(url.Values{"org": {tn.Org.Slug}, "email": {"\x00" + email}, "password": {"x"}}), nil, 422, "email"},
		{"staff release page: NUL in reason", box, "POST", "/box-office/events/" + e + "/release", release("broken\x00seat"), nil, 422, ""},
		{"staff release API: NUL in reason", box, "DELETE", "/api/v1/holds/" + h.ID.String(), js(`{"reason":"` + esc("broken\x00seat") + `"}`), nil, 422, "reason"},
		{"box office lookup: NUL in query", box, "GET", "/box-office/events/" + e + "?lookup=" + url.QueryEscape(email+"\x00"), nil, nil, 422, ""},
		{"box office lookup: NUL in form", box, "POST", "/box-office/events/" + e + "/lookup", formBody(url.Values{"lookup": {email + "\x00"}}), nil, 422, ""},
		{"signup: NUL in org path", anon, "POST", "/o/" + url.PathEscape(tn.Org.Slug+"\x00") + "/signup", js(`{"email":"n@x.example","password":"long-enough-pw"}`), nil, 422, "path"},
		{"signup page: NUL in org path", anon, "GET", "/o/" + url.PathEscape("x\x00") + "/signup", nil, nil, 422, ""},
		{"audit filter: NUL in email", org, "GET", "/admin/events/" + e + "/audit?email=a%00b", nil, nil, 422, ""},
		{"audit filter: NUL in seat", org, "GET", "/admin/events/" + e + "/audit?seat=A%00", nil, nil, 422, ""},
		// Formerly accepted and stored.
		{"signup: control character in password", anon, "POST", "/o/" + tn.Org.Slug + "/signup", js(`{"email":"ctl@x.example","password":"` + esc("long-enough\x01pw") + `"}`), nil, 422, "password"},
		{"signup: escape in email (form)", anon, "POST", "/o/" + tn.Org.Slug + "/signup", formBody(url.Values{"email": {"esc\x1b[2J@x.example"}, "password": {"long-enough-pw"}}), nil, 422, "email"},
		{"login: C1 control in password", anon, "POST", "/login", js(`{"org":"` + tn.Org.Slug + `","email":"` + email + `","password":"` + esc(testenv.Password+"\u0085") + `"}`), nil, 422, "password"},
		{"staff release page: newline in reason", box, "POST", "/box-office/events/" + e + "/release", release("line one\nline two"), nil, 422, ""},
		{"staff release API: tab in reason", box, "DELETE", "/api/v1/holds/" + h.ID.String(), js(`{"reason":"a\tb"}`), nil, 422, "reason"},
		{"staff block: escape in reason", box, "POST", "/box-office/events/" + e + "/seats/" + seats[1].String() + "/block", formBody(url.Values{"reason": {"\x1b[31mred"}}), nil, 422, ""},
		{"box office lookup: control character", box, "GET", "/box-office/events/" + e + "?lookup=a%07b%40x.example", nil, nil, 422, ""},
		{"holds filter: NUL in holder", box, "GET", "/box-office/events/" + e + "/holds?holder=%00", nil, nil, 422, ""},
		{"hold: NUL in seat id", buyer, "POST", "/api/v1/events/" + e + "/holds", js(`{"seat_id":"` + esc("\x00") + `"}`), nil, 422, "seat_id"},
		{"hold: NUL in a seat id of a list", buyer, "POST", "/api/v1/events/" + e + "/holds", js(`{"seat_ids":["` + seats[2].String() + `","` + esc("\x00") + `"]}`), nil, 422, "seat_ids[1]"},
		{"purchase: hold id with a control character", buyer, "POST", "/api/v1/events/" + e + "/purchase", js(`{"hold_ids":["` + esc(h.ID.String()+"\x01") + `"]}`), []string{"Idempotency-Key", "k-" + uuid.NewString()}, 422, "hold_ids[0]"},
		// Query strings, paths, headers and cookies of any route.
		{"API: invalid UTF-8 in a query value", buyer, "GET", "/api/v1/events?x=%ff", nil, nil, 422, "x"},
		{"API: NUL in a query key", buyer, "GET", "/api/v1/events?a%00=1", nil, nil, 422, `"a\x00"`},
		{"API: malformed query", buyer, "GET", "/api/v1/events?a=%zz", nil, nil, 400, ""},
		{"API: NUL in a path segment", buyer, "POST", "/api/v1/events/" + url.PathEscape("\x00") + "/holds", js(`{"seat_id":"` + seats[2].String() + `"}`), nil, 422, "path"},
		{"API: invalid UTF-8 in a path segment", buyer, "GET", "/api/v1/events/%ff%fe", nil, nil, 422, "path"},
		{"purchase: Idempotency-Key not UTF-8", buyer, "POST", "/api/v1/events/" + e + "/purchase", js(`{"hold_ids":["` + h.ID.String() + `"]}`), []string{"Idempotency-Key", "k\xff"}, 422, "Idempotency-Key"},
		{"purchase: tab in Idempotency-Key", buyer, "POST", "/api/v1/events/" + e + "/purchase", js(`{"hold_ids":["` + h.ID.String() + `"]}`), []string{"Idempotency-Key", "k\tk"}, 422, "Idempotency-Key"},
		{"API: cookie value not UTF-8", anon, "GET", "/api/v1/events", nil, []string{"Cookie", "seatd_session=\xff\xfe"}, 422, "Cookie"},
		{"page: tab in a cookie value", anon, "GET", "/login", nil, []string{"Cookie", "other=a\tb"}, 422, ""},
		{"login page: NUL in org query", anon, "GET", "/login?org=%00", nil, nil, 422, ""},
	}

	before := orgWrites(t, a, tn.Org.ID)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.c.do(tc.method, tc.path, tc.body, tc.hdr...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", r.status, tc.status, r.body)
			}
			if strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
				if tc.field != "" {
					t.Fatalf("a page answered, want JSON naming %q: %.300s", tc.field, r.body)
				}
				return
			}
			e := r.errBody(t)
			if tc.status == 422 && (e.Error != "invalid" || e.Fields[tc.field] == "") {
				t.Fatalf("want invalid naming field %q: %s", tc.field, r.body)
			}
		})
	}
	if after := orgWrites(t, a, tn.Org.ID); after != before {
		t.Fatalf("hostile requests wrote:\nbefore %s\nafter  %s", before, after)
	}
	// The same inputs without the hostile characters are served.
	box.do("POST", "/box-office/events/"+e+"/lookup", formBody(url.Values{"lookup": {email}})).want(t, 200)
	buyer.do("GET", "/api/v1/events?x=caf%C3%A9", nil).want(t, 200)
}
