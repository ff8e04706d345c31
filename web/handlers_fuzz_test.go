package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/web/httpx"
)

// The fuzz targets below send requests through the whole handler chain
// (middleware, session, decoder, handler, core) into the test Postgres
// and Redis. Each asserts that no input answers 5xx and that a refused
// input (4xx) wrote nothing: the tenant's seats, holds, bookings, users,
// audit entries and sessions are as they were. `make test` runs each
// briefly (FUZZ_TARGETS); `go test` runs their seeds.

// fuzzEnv is one fuzzing process's server with a tenant, an event and
// signed-in users.
type fuzzEnv struct {
	s       *testServer
	tn      testenv.Tenant
	ev      store.Event
	seats   []uuid.UUID
	buyer   string // Cookie headers
	box     string
	orgUser string
}

func newFuzzEnv(f *testing.F) *fuzzEnv {
	f.Helper()
	s := newTestServer(f, nil)
	tn := testenv.NewTenant(f, s.app, 1)
	ev := testenv.NewEvent(f, s.app, tn.Org.ID, 1, 2, 10)
	return &fuzzEnv{s: s, tn: tn, ev: ev, seats: testenv.SeatIDs(f, s.app, tn.Org.ID, ev.ID),
		buyer: cookieHeader(s.as(tn.Org, tn.Buyers[0])), box: cookieHeader(s.as(tn.Org, tn.BoxOffice)),
		orgUser: cookieHeader(s.as(tn.Org, tn.Organizer))}
}

// cookieHeader is the Cookie header of a client's jar.
func cookieHeader(c *client) string {
	u, _ := url.Parse(c.base)
	var parts []string
	for _, k := range c.hc.Jar.Cookies(u) {
		parts = append(parts, k.Name+"="+k.Value)
	}
	return strings.Join(parts, "; ")
}

// serve hands a request straight to the handler chain: no HTTP client
// or server in between to refuse hostile bytes in the path or headers
// first. hdr is a list of header name, value pairs.
func (e *fuzzEnv) serve(method, path, rawQuery, contentType string, body []byte, hdr ...string) *httptest.ResponseRecorder {
	r := (&http.Request{
		Method: method, URL: &url.URL{Path: path, RawQuery: rawQuery},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		Host: "seatd.test", RemoteAddr: "192.0.2.10:4000", RequestURI: path,
	}).WithContext(context.Background())
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	e.s.srv.ServeHTTP(w, r)
	return w
}

// writes is the tenant's state a refused request must leave alone.
func (e *fuzzEnv) writes(t *testing.T) string { return orgWrites(t, e.s.app, e.tn.Org.ID) }

// check fails on a 5xx, and on a refusal that wrote; noCookie also fails
// a refusal that set a cookie (anonymous routes: no session may start).
func (e *fuzzEnv) check(t *testing.T, w *httptest.ResponseRecorder, before string, noCookie bool) {
	t.Helper()
	if w.Code >= 500 {
		t.Fatalf("answered %d: %.300s", w.Code, w.Body.String())
	}
	if w.Code < 400 {
		return
	}
	if after := e.writes(t); after != before {
		t.Fatalf("refused with %d but wrote:\nbefore %s\nafter  %s", w.Code, before, after)
	}
	if noCookie && len(w.Header().Values("Set-Cookie")) > 0 {
		t.Fatalf("refused with %d but set %q", w.Code, w.Header().Values("Set-Cookie"))
	}
}

// jsonText writes s as a JSON string: quotes, backslashes and control
// characters escaped (so they reach the decoded value), invalid UTF-8 left
// as it is (encoding/json would replace it).
func jsonText(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// jsonObject is a JSON object of string fields (name, value pairs).
func jsonObject(kv ...string) []byte {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, jsonText(kv[i])+":"+jsonText(kv[i+1]))
	}
	return []byte("{" + strings.Join(parts, ",") + "}")
}

// formOf is a urlencoded form of name, value pairs.
func formOf(kv ...string) []byte {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return []byte(v.Encode())
}

// hostileSeeds are texts every target tries in each of its fields.
var hostileSeeds = []string{"\x00", "a\x00b", "\x01", "line\nbreak", "tab\there", "\x1b[2J", "\x7f", "\u0085", "\xff\xfe", "\xc3\x28", "é", "%00", ""}

// FuzzLogin: POST /login, as JSON or as a form.
func FuzzLogin(f *testing.F) {
	e := newFuzzEnv(f)
	slug, email := e.tn.Org.Slug, e.tn.Buyers[0].Email
	f.Add(slug, email, testenv.Password, false)
	f.Add(slug, email, testenv.Password, true)
	for _, h := range hostileSeeds {
		f.Add(slug+h, email, "x", false)
		f.Add(slug, h+email, "x", true)
		f.Add(slug, email, testenv.Password+h, false)
	}
	f.Fuzz(func(t *testing.T, org, em, password string, asForm bool) {
		before := e.writes(t)
		var w *httptest.ResponseRecorder
		if asForm {
			w = e.serve("POST", "/login", "", httpx.MediaForm, formOf("org", org, "email", em, "password", password))
		} else {
			w = e.serve("POST", "/login", "", httpx.MediaJSON, jsonObject("org", org, "email", em, "password", password))
		}
		e.check(t, w, before, true)
	})
}

// FuzzSignup: POST /o/{org}/signup with a fuzzed path segment and body.
func FuzzSignup(f *testing.F) {
	e := newFuzzEnv(f)
	slug := e.tn.Org.Slug
	f.Add(slug, "new@x.example", "long-enough-pw", false)
	f.Add(slug, e.tn.Buyers[0].Email, "long-enough-pw", true)
	for _, h := range hostileSeeds {
		f.Add(slug+h, "n@x.example", "long-enough-pw", false)
		f.Add(slug, "n"+h+"@x.example", "long-enough-pw", true)
		f.Add(slug, "p@x.example", "long-enough"+h, false)
	}
	f.Fuzz(func(t *testing.T, org, em, password string, asForm bool) {
		before := e.writes(t)
		path := "/o/" + org + "/signup"
		var w *httptest.ResponseRecorder
		if asForm {
			w = e.serve("POST", path, "", httpx.MediaForm, formOf("email", em, "password", password))
		} else {
			w = e.serve("POST", path, "", httpx.MediaJSON, jsonObject("email", em, "password", password))
		}
		e.check(t, w, before, true)
	})
}

// FuzzHold: POST /api/v1/events/{event}/holds with a fuzzed event, seat
// ids and Idempotency-Key-like header noise.
func FuzzHold(f *testing.F) {
	e := newFuzzEnv(f)
	ev, s0, s1 := e.ev.ID.String(), e.seats[0].String(), e.seats[1].String()
	f.Add(ev, s0, "", false)
	f.Add(ev, s0, s1, true)
	for _, h := range hostileSeeds {
		f.Add(ev+h, s0, "", false)
		f.Add(ev, s0+h, "", false)
		f.Add(ev, s0, h, true)
	}
	f.Fuzz(func(t *testing.T, event, seat, seat2 string, list bool) {
		before := e.writes(t)
		body := jsonObject("seat_id", seat)
		if list {
			body = []byte(`{"seat_ids":[` + jsonText(seat) + `,` + jsonText(seat2) + `]}`)
		}
		w := e.serve("POST", "/api/v1/events/"+event+"/holds", "", httpx.MediaJSON, body, "Cookie", e.buyer)
		e.check(t, w, before, false)
	})
}

// FuzzPurchase: POST /api/v1/events/{event}/purchase with a fuzzed
// Idempotency-Key and hold id, or with the buyer's real hold (bought by
// the first valid key; later keys find it gone).
func FuzzPurchase(f *testing.F) {
	e := newFuzzEnv(f)
	held := coreHold(f, e.s.app, e.tn.Buyers[0], e.ev.ID, e.seats[2])[0].ID.String()
	f.Add("key-1", "", true)
	f.Add("key-1", uuid.NewString(), false)
	for _, h := range hostileSeeds {
		f.Add("key"+h, "", true)
		f.Add("key-2", held+h, false)
	}
	f.Fuzz(func(t *testing.T, key, holdID string, real bool) {
		if real {
			holdID = held
		}
		before := e.writes(t)
		w := e.serve("POST", "/api/v1/events/"+e.ev.ID.String()+"/purchase", "", httpx.MediaJSON,
			[]byte(`{"hold_ids":[`+jsonText(holdID)+`]}`), "Cookie", e.buyer, "Idempotency-Key", key)
		e.check(t, w, before, false)
	})
}

// FuzzStaffRelease: the box office releases a buyer's hold with a fuzzed
// reason, through the page form or the API.
func FuzzStaffRelease(f *testing.F) {
	e := newFuzzEnv(f)
	f.Add("customer asked at the desk", false)
	f.Add("customer asked at the desk", true)
	for _, h := range hostileSeeds {
		f.Add("broken"+h+"seat", false)
		f.Add("broken"+h+"seat", true)
	}
	f.Fuzz(func(t *testing.T, reason string, api bool) {
		// The hold to release: the buyer's hold on seat 8, taken again
		// when a run released it.
		h := coreHold(t, e.s.app, e.tn.Buyers[0], e.ev.ID, e.seats[8])[0].ID.String()
		before := e.writes(t)
		var w *httptest.ResponseRecorder
		if api {
			w = e.serve("DELETE", "/api/v1/holds/"+h, "", httpx.MediaJSON, jsonObject("reason", reason), "Cookie", e.box)
		} else {
			w = e.serve("POST", "/box-office/events/"+e.ev.ID.String()+"/release", "", httpx.MediaForm,
				formOf("hold_id", h, "reason", reason), "Cookie", e.box)
		}
		e.check(t, w, before, false)
	})
}

// FuzzStaffLookups: the box office's customer lookup (posted), its hold
// filters (query), the audit log's filters (query), with a fuzzed cookie
// next to the session's.
func FuzzStaffLookups(f *testing.F) {
	e := newFuzzEnv(f)
	email := e.tn.Buyers[0].Email
	f.Add(email, "A", email[:5], "A-A-1", "v")
	for _, h := range hostileSeeds {
		f.Add(email+h, "A", "", "", "v")
		f.Add(email, "A"+h, h, "A-A-1"+h, "v")
		f.Add(email, "", "", "", h)
	}
	f.Fuzz(func(t *testing.T, lookup, section, holder, seat, cookie string) {
		before := e.writes(t)
		ev := e.ev.ID.String()
		cookies := func(base string) string { return base + "; x=" + cookie }
		filter := url.Values{"section": {section}, "holder": {holder}}.Encode()
		for _, w := range []*httptest.ResponseRecorder{
			e.serve("POST", "/box-office/events/"+ev+"/lookup", "", httpx.MediaForm, formOf("lookup", lookup, "section", section),
				"Cookie", cookies(e.box), "HX-Request", "true"),
			e.serve("GET", "/box-office/events/"+ev+"/holds", filter, "", nil, "Cookie", cookies(e.box)),
			e.serve("GET", "/admin/events/"+ev+"/audit", url.Values{"email": {lookup}, "seat": {seat}}.Encode(), "", nil,
				"Cookie", cookies(e.orgUser)),
			e.serve("GET", "/box-office/events/"+ev, "section="+section+"&holder="+holder, "", nil, "Cookie", cookies(e.box)),
		} {
			e.check(t, w, before, false)
		}
		// Lookups only read, whatever they answer.
		if after := e.writes(t); after != before {
			t.Fatalf("lookups wrote:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// FuzzInvitations: an organizer's POST /api/v1/invitations (the email
// fuzzed) and the anonymous POST /invitations/accept (token and password
// fuzzed, as JSON or as the link page's form). A refusal writes nothing,
// pending invitations included, and the accepting side starts no session.
func FuzzInvitations(f *testing.F) {
	e := newFuzzEnv(f)
	f.Add("guest@x.example", "not-a-token", "long-enough-pw", false)
	f.Add("guest2@x.example", strings.Repeat("A", 43), "long-enough-pw", true)
	for _, h := range hostileSeeds {
		f.Add("g"+h+"@x.example", "tok"+h, "long-enough-pw", false)
		f.Add("g@x.example"+h, "tok", "long-enough"+h, true)
	}
	invitations := func(t *testing.T) string {
		var n int
		var ids string
		if err := e.s.app.Pool.QueryRow(context.Background(),
			`SELECT count(*), coalesce(string_agg(id::text || coalesce(revoked_at::text, ''), ',' ORDER BY id), '')
			 FROM invitations WHERE org_id = $1`, e.tn.Org.ID).Scan(&n, &ids); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("invitations=%d %s", n, ids)
	}
	f.Fuzz(func(t *testing.T, email, token, password string, asForm bool) {
		before, inv := e.writes(t), invitations(t)
		w := e.serve("POST", "/api/v1/invitations", "", httpx.MediaJSON, jsonObject("email", email), "Cookie", e.orgUser)
		e.check(t, w, before, false)
		if w.Code >= 400 {
			if after := invitations(t); after != inv {
				t.Fatalf("invitation refused with %d but written:\nbefore %s\nafter  %s", w.Code, inv, after)
			}
		}
		before = e.writes(t)
		if asForm {
			w = e.serve("POST", "/invitations/accept", "", httpx.MediaForm, formOf("token", token, "password", password))
		} else {
			w = e.serve("POST", "/invitations/accept", "", httpx.MediaJSON, jsonObject("token", token, "password", password))
		}
		e.check(t, w, before, true)
	})
}
