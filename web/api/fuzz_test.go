package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"seatd/internal/apperr"
	"seatd/web/httpx"
)

// FuzzDecode feeds arbitrary bodies, content types and ids through the
// request decoding of every input type and through id parsing. Nothing may
// panic, and every failure must be a domain error of a 4xx status: bad
// input is never a 500.
func FuzzDecode(f *testing.F) {
	const id = "7f8a3c1e-2b4d-4e6f-8a9b-0c1d2e3f4a5b"
	for _, seed := range []struct {
		ct, body, pathID, key string
	}{
		{"application/json", `{"seat_id":"` + id + `"}`, id, "k1"},
		{"application/json", `{"seat_ids":["` + id + `","` + id + `"]}`, "not-a-uuid", ""},
		{"application/json", `{"seat_ids":[]}`, "", "key"},
		{"application/json", `{"seat_id":42}`, "{" + id + "}", "k"},
		{"application/json", `{"hold_ids":["` + id + `"]}`, "urn:uuid:" + id, "a b"},
		{"application/json", `{"org":"demo","email":"buyer@demo.example","password":"demo-password"}`, id, "k"},
		{"application/json; charset=utf-8", `{"reason":"seat broken"}`, id, "k"},
		{"application/json", `{"a":1}{"b":2}`, id, "k"},
		{"application/json", "{\"seat_id\":\"\xff\"}", id, "\xff"},
		{"application/json", `[]`, id, "k"},
		{"application/json", `null`, id, "k"},
		{"application/json", `{"seat_ids":[null,1,{}]}`, id, "k"},
		{"application/json", `{"seat_id":"` + id + `"`, id, "k"},
		{"application/x-www-form-urlencoded", "org=demo&email=a%40b.c&password=x", id, "k"},
		{"application/x-www-form-urlencoded", "org=%ff%zz", id, "k"},
		{"text/plain", "hello", id, "k"},
		{"", "", "", ""},
		{"application/json", string(bytes.Repeat([]byte("["), 20000)), id, "k"},
	} {
		f.Add(seed.ct, []byte(seed.body), seed.pathID, seed.key)
	}
	d := httpx.NewDecoder()
	f.Fuzz(func(t *testing.T, contentType string, body []byte, pathID, key string) {
		check := func(what string, err error) {
			t.Helper()
			if err == nil {
				return
			}
			e, ok := apperr.As(err)
			if !ok {
				t.Fatalf("%s: not a domain error: %v", what, err)
			}
			if st := httpx.Status(e.Code); st < 400 || st > 499 {
				t.Fatalf("%s: %v answers %d, want 4xx", what, err, st)
			}
		}
		req := func() *http.Request {
			r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
			r.Header.Set("Content-Type", contentType)
			r.Header["Idempotency-Key"] = []string{key}
			return r
		}
		w := httptest.NewRecorder()

		var h holdInput
		if err := d.JSON(w, req(), &h); err != nil {
			check("hold", err)
		} else {
			_, _, err := h.seats()
			check("hold seats", err)
		}
		var p purchaseInput
		if err := d.JSON(w, req(), &p); err != nil {
			check("purchase", err)
		} else {
			_, err := httpx.BodyIDs("hold_ids", p.HoldIDs)
			check("purchase ids", err)
		}
		var l loginInput
		_, err := d.JSONOrForm(w, req(), &l, func(v url.Values) {
			l = loginInput{Org: v.Get("org"), Email: v.Get("email"), Password: v.Get("password")}
		})
		check("login", err)
		var rel releaseInput
		check("release", d.OptionalJSON(w, req(), &rel))
		var none struct{}
		check("checkout", d.OptionalJSON(w, req(), &none))

		_, err = httpx.ParsePathID(pathID, "event")
		check("path id", err)
		if err != nil && apperr.CodeOf(err) != apperr.NotFound {
			t.Fatalf("malformed path id: %v, want not_found", err)
		}
		_, err = httpx.IdempotencyKey(req())
		check("idempotency key", err)
	})
}
