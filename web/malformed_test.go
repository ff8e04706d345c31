package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/testenv"
)

// TestMalformedInput: bad input to login, signup, hold, purchase and
// release is always a 4xx with a JSON error (error and message), never a
// 5xx, and changes nothing.
func TestMalformedInput(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	a := s.app
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 10)
	other := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	otherSeat := testenv.SeatIDs(t, a, tn.Org.ID, other.ID)[0]
	h := coreHold(t, a, tn.Buyers[0], ev.ID, seats[0])[0]

	buyer := s.as(tn.Org, tn.Buyers[0])
	anon := s.client()

	const (
		js   = "application/json"
		frm  = "application/x-www-form-urlencoded"
		text = "text/plain"
	)
	e := ev.ID.String()
	s1, s2 := seats[1].String(), seats[2].String()
	holdsPath := "/api/v1/events/" + e + "/holds"
	buyPath := "/api/v1/events/" + e + "/purchase"
	login := func(org, email, password string) string {
		b, _ := json.Marshal(map[string]string{"org": org, "email": email, "password": password})
		return string(b)
	}
	key := []string{"Idempotency-Key", "key-" + uuid.NewString()}
	huge := `{"seat_id":"` + strings.Repeat("a", 20<<10) + `"}`
	many := make([]string, 101)
	for i := range many {
		many[i] = uuid.NewString()
	}
	manyJSON, _ := json.Marshal(map[string]any{"seat_ids": many})

	cases := []struct {
		name         string
		c            *client
		method, path string
		ct, body     string
		hdr          []string
		status       int
		code         string
	}{
		// login
		{"login: bad JSON", anon, "POST", "/login", js, `{"org":`, nil, 400, "bad_request"},
		{"login: wrong type", anon, "POST", "/login", js, `{"org":1,"email":"a@b.c","password":"x"}`, nil, 422, "invalid"},
		{"login: unknown field", anon, "POST", "/login", js, `{"org":"x","email":"a@b.c","password":"x","admin":true}`, nil, 422, "invalid"},
		{"login: trailing data", anon, "POST", "/login", js, login(tn.Org.Slug, tn.Buyers[0].Email, testenv.Password) + `{}`, nil, 400, "bad_request"},
		{"login: wrong content type", anon, "POST", "/login", text, login(tn.Org.Slug, tn.Buyers[0].Email, testenv.Password), nil, 415, "unsupported_media_type"},
		{"login: no content type", anon, "POST", "/login", "", login(tn.Org.Slug, tn.Buyers[0].Email, testenv.Password), nil, 415, "unsupported_media_type"},
		{"login: huge body", anon, "POST", "/login", js, `{"org":"` + strings.Repeat("x", 20<<10) + `"}`, nil, 413, "too_large"},
		{"login: invalid UTF-8", anon, "POST", "/login", js, "{\"org\":\"\xff\xfe\",\"email\":\"a@b.c\",\"password\":\"x\"}", nil, 400, "bad_request"},
		{"login: missing fields", anon, "POST", "/login", js, `{}`, nil, 422, "invalid"},
		{"login: empty body", anon, "POST", "/login", js, ``, nil, 400, "bad_request"},
		{"login: form with invalid UTF-8", anon, "POST", "/login", frm, "org=%ff&email=a%40b.c&password=x", nil, 400, "bad_request"},
		{"login: bad form encoding", anon, "POST", "/login", frm, "org=%zz", nil, 400, "bad_request"},
		{"login: wrong password", anon, "POST", "/login", js, login(tn.Org.Slug, tn.Buyers[0].Email, "wrong-password"), nil, 401, "unauthorized"},
		// signup
		{"signup: unknown org", anon, "POST", "/o/no-such-org-" + uuid.NewString()[:8] + "/signup", js, `{"email":"n@x.example","password":"long-enough-pw"}`, nil, 404, "not_found"},
		{"signup: short password", anon, "POST", "/o/" + tn.Org.Slug + "/signup", js, `{"email":"n@x.example","password":"short"}`, nil, 422, "invalid"},
		{"signup: bad email", anon, "POST", "/o/" + tn.Org.Slug + "/signup", js, `{"email":"not an email","password":"long-enough-pw"}`, nil, 422, "invalid"},
		{"signup: array body", anon, "POST", "/o/" + tn.Org.Slug + "/signup", js, `[]`, nil, 422, "invalid"},
		{"signup: null body", anon, "POST", "/o/" + tn.Org.Slug + "/signup", js, `null`, nil, 422, "invalid"},
		{"signup: role field", anon, "POST", "/o/" + tn.Org.Slug + "/signup", js, `{"email":"n@x.example","password":"long-enough-pw","role":"organizer"}`, nil, 422, "invalid"},
		{"signup: huge form", anon, "POST", "/o/" + tn.Org.Slug + "/signup", frm, "email=" + strings.Repeat("a", 20<<10), nil, 413, "too_large"},
		// hold
		{"hold: bad event id in path", buyer, "POST", "/api/v1/events/not-a-uuid/holds", js, `{"seat_id":"` + s1 + `"}`, nil, 404, "not_found"},
		{"hold: bad seat id in body", buyer, "POST", holdsPath, js, `{"seat_id":"not-a-uuid"}`, nil, 422, "invalid"},
		{"hold: seat id is a number", buyer, "POST", holdsPath, js, `{"seat_id":42}`, nil, 422, "invalid"},
		{"hold: seat_ids is a string", buyer, "POST", holdsPath, js, `{"seat_ids":"` + s1 + `"}`, nil, 422, "invalid"},
		{"hold: empty seat_ids", buyer, "POST", holdsPath, js, `{"seat_ids":[]}`, nil, 422, "invalid"},
		{"hold: duplicate seat ids", buyer, "POST", holdsPath, js, `{"seat_ids":["` + s1 + `","` + s1 + `"]}`, nil, 422, "invalid"},
		{"hold: duplicate seat ids in other case", buyer, "POST", holdsPath, js, `{"seat_ids":["` + s1 + `","` + strings.ToUpper(s1) + `"]}`, nil, 422, "invalid"},
		{"hold: seat_id and seat_ids", buyer, "POST", holdsPath, js, `{"seat_id":"` + s1 + `","seat_ids":["` + s2 + `"]}`, nil, 422, "invalid"},
		{"hold: no seat", buyer, "POST", holdsPath, js, `{}`, nil, 422, "invalid"},
		{"hold: null in seat_ids", buyer, "POST", holdsPath, js, `{"seat_ids":[null]}`, nil, 422, "invalid"},
		{"hold: too many seats", buyer, "POST", holdsPath, js, string(manyJSON), nil, 422, "invalid"},
		{"hold: unknown field", buyer, "POST", holdsPath, js, `{"seat_id":"` + s1 + `","org_id":"` + uuid.NewString() + `"}`, nil, 422, "invalid"},
		{"hold: no content type", buyer, "POST", holdsPath, "", `{"seat_id":"` + s1 + `"}`, nil, 415, "unsupported_media_type"},
		{"hold: form content type", buyer, "POST", holdsPath, frm, `seat_id=` + s1, nil, 415, "unsupported_media_type"},
		{"hold: trailing garbage", buyer, "POST", holdsPath, js, `{"seat_id":"` + s1 + `"} x`, nil, 400, "bad_request"},
		{"hold: two JSON values", buyer, "POST", holdsPath, js, `{"seat_id":"` + s1 + `"}{"seat_id":"` + s2 + `"}`, nil, 400, "bad_request"},
		{"hold: invalid UTF-8 in seat id", buyer, "POST", holdsPath, js, "{\"seat_id\":\"\xc3\x28" + s1[2:] + "\"}", nil, 400, "bad_request"},
		{"hold: huge body", buyer, "POST", holdsPath, js, huge, nil, 413, "too_large"},
		{"hold: seat of another event", buyer, "POST", holdsPath, js, `{"seat_id":"` + otherSeat.String() + `"}`, nil, 404, "not_found"},
		{"hold: seat that does not exist", buyer, "POST", holdsPath, js, `{"seat_id":"` + uuid.NewString() + `"}`, nil, 404, "not_found"},
		{"hold: event that does not exist", buyer, "POST", "/api/v1/events/" + uuid.NewString() + "/holds", js, `{"seat_id":"` + s1 + `"}`, nil, 404, "not_found"},
		// purchase
		{"purchase: missing Idempotency-Key", buyer, "POST", buyPath, js, `{"hold_ids":["` + h.ID.String() + `"]}`, nil, 422, "invalid"},
		{"purchase: Idempotency-Key with spaces", buyer, "POST", buyPath, js, `{"hold_ids":["` + h.ID.String() + `"]}`, []string{"Idempotency-Key", "a key"}, 422, "invalid"},
		{"purchase: Idempotency-Key not ASCII", buyer, "POST", buyPath, js, `{"hold_ids":["` + h.ID.String() + `"]}`, []string{"Idempotency-Key", "k\xff\xfe"}, 422, "invalid"},
		{"purchase: Idempotency-Key too long", buyer, "POST", buyPath, js, `{"hold_ids":["` + h.ID.String() + `"]}`, []string{"Idempotency-Key", strings.Repeat("k", 201)}, 422, "invalid"},
		{"purchase: empty hold_ids", buyer, "POST", buyPath, js, `{"hold_ids":[]}`, key, 422, "invalid"},
		{"purchase: no hold_ids", buyer, "POST", buyPath, js, `{}`, key, 422, "invalid"},
		{"purchase: duplicate hold ids", buyer, "POST", buyPath, js, `{"hold_ids":["` + h.ID.String() + `","` + h.ID.String() + `"]}`, key, 422, "invalid"},
		{"purchase: bad hold id", buyer, "POST", buyPath, js, `{"hold_ids":["nope"]}`, key, 422, "invalid"},
		{"purchase: hold_ids is an object", buyer, "POST", buyPath, js, `{"hold_ids":{"a":1}}`, key, 422, "invalid"},
		{"purchase: hold that does not exist", buyer, "POST", buyPath, js, `{"hold_ids":["` + uuid.NewString() + `"]}`, key, 404, "not_found"},
		{"purchase: bad event id in path", buyer, "POST", "/api/v1/events/x/purchase", js, `{"hold_ids":["` + h.ID.String() + `"]}`, key, 404, "not_found"},
		{"purchase: empty body", buyer, "POST", buyPath, js, ``, key, 400, "bad_request"},
		{"purchase: wrong content type", buyer, "POST", buyPath, text, `{"hold_ids":["` + h.ID.String() + `"]}`, key, 415, "unsupported_media_type"},
		// release
		{"release: bad hold id in path", buyer, "DELETE", "/api/v1/holds/not-a-uuid", "", ``, nil, 404, "not_found"},
		{"release: bad JSON body", buyer, "DELETE", "/api/v1/holds/" + h.ID.String(), js, `{"reason":`, nil, 400, "bad_request"},
		{"release: unknown field", buyer, "DELETE", "/api/v1/holds/" + h.ID.String(), js, `{"why":"x"}`, nil, 422, "invalid"},
		{"release: body without content type", buyer, "DELETE", "/api/v1/holds/" + h.ID.String(), "", `{"reason":"x"}`, nil, 415, "unsupported_media_type"},
		// checkout and block take no input
		{"checkout: unknown field", buyer, "POST", "/api/v1/events/" + e + "/checkout", js, `{"extend_by":"1h"}`, nil, 422, "invalid"},
	}

	count := func() string {
		return fmt.Sprintf("holds=%d users=%d bookings=%d tickets=%d state=%s",
			orgRows(t, a, "seat_holds", tn.Org.ID), orgRows(t, a, "users", tn.Org.ID),
			orgRows(t, a, "bookings", tn.Org.ID), orgRows(t, a, "tickets", tn.Org.ID), orgState(t, a, tn.Org.ID))
	}
	before := count()
	byStatus := map[int]int{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" || tc.ct != "" {
				body = raw{contentType: tc.ct, body: []byte(tc.body)}
			}
			r := tc.c.do(tc.method, tc.path, body, tc.hdr...)
			if r.status >= 500 || r.status < 400 {
				t.Fatalf("status %d, want 4xx: %s", r.status, r.body)
			}
			e := r.errBody(t)
			if r.status != tc.status || string(e.Error) != tc.code {
				t.Fatalf("%d %s, want %d %s: %s", r.status, e.Error, tc.status, tc.code, r.body)
			}
			byStatus[r.status]++
		})
	}
	if after := count(); after != before {
		t.Fatalf("malformed requests changed the tenant:\nbefore %s\nafter  %s", before[:60], after[:60])
	}
	t.Logf("%d malformed requests: statuses %v, no 5xx; seat_holds, users, bookings, tickets and seats unchanged", len(cases), byStatus)
}
