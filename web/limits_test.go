package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestWebhookSecretRotation: rotating an endpoint's secret answers the
// new one once, says until when the old one signs, and deliveries carry a
// signature by each meanwhile; a grace out of range is 422, another
// organization's endpoint 404. The staff page rotates too, showing the new
// secret once.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	testenv.Background(t, s.app)
	tn := testenv.NewTenant(t, s.app, 0)
	other := testenv.NewTenant(t, s.app, 0)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 1)
	seat := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)[0]
	var mu sync.Mutex
	var got []string // Seatd-Signature headers, with the body they sign
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 1<<16)
		n, _ := r.Body.Read(b)
		mu.Lock()
		got = append(got, r.Header.Get("Seatd-Signature")+"\n"+string(b[:n]))
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	org := s.as(tn.Org, tn.Organizer)

	type endpoint struct {
		ID                  uuid.UUID  `json:"id"`
		Secret              string     `json:"secret"`
		PreviousSecretUntil *time.Time `json:"previous_secret_until"`
	}
	var created, rotated endpoint
	org.do("POST", "/api/v1/webhooks", map[string]any{"url": rcv.URL, "events": []string{"seat.blocked"}}).
		want(t, http.StatusCreated).json(t, &created)
	path := "/api/v1/webhooks/" + created.ID.String() + "/rotate-secret"
	org.do("POST", path, map[string]any{"grace_seconds": 604801}).wantErr(t, http.StatusUnprocessableEntity, "invalid")
	s.as(other.Org, other.Organizer).do("POST", path, nil).wantErr(t, http.StatusNotFound, "not_found")
	s.as(tn.Org, tn.BoxOffice).do("POST", path, nil).wantErr(t, http.StatusForbidden, "forbidden")

	org.do("POST", path, map[string]any{"grace_seconds": 3600}).want(t, http.StatusOK).json(t, &rotated)
	if !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == created.Secret || rotated.ID != created.ID {
		t.Fatalf("rotated %+v, created %+v", rotated, created)
	}
	if u := rotated.PreviousSecretUntil; u == nil || time.Until(*u) < 50*time.Minute || time.Until(*u) > 70*time.Minute {
		t.Fatalf("previous_secret_until %v, want in about an hour", u)
	}
	list := org.do("GET", "/api/v1/webhooks", nil).want(t, http.StatusOK)
	if strings.Contains(string(list.body), rotated.Secret) || !strings.Contains(string(list.body), `"previous_secret_until"`) {
		t.Fatalf("list: %s", list.body)
	}

	org.do("POST", "/api/v1/events/"+ev.ID.String()+"/seats/"+seat.String()+"/block", nil).want(t, http.StatusOK)
	testsvc.Eventually(t, 10*time.Second, "a delivery received", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	mu.Lock()
	header, body, _ := strings.Cut(got[0], "\n")
	mu.Unlock()
	for _, secret := range []string{created.Secret, rotated.Secret} {
		if !signedWith(header, body, secret) {
			t.Errorf("Seatd-Signature %q carries no v1 by one of the two secrets", header)
		}
	}

	// The page: a button per endpoint, the new secret shown once.
	form := raw{contentType: "application/x-www-form-urlencoded", body: nil}
	page := org.do("GET", "/admin/webhooks", nil).want(t, http.StatusOK)
	if !strings.Contains(string(page.body), "/admin/webhooks/"+created.ID.String()+"/rotate-secret") ||
		!strings.Contains(string(page.body), "old secret signs until") {
		t.Fatalf("webhooks page lacks the rotate button or the rotation under way: %s", page.body)
	}
	r := org.do("POST", "/admin/webhooks/"+created.ID.String()+"/rotate-secret", form).want(t, http.StatusOK)
	if !strings.Contains(string(r.body), `value="whsec_`) || strings.Contains(string(r.body), rotated.Secret) {
		t.Fatal("the page does not show the new secret once")
	}
}

// signedWith reports whether a Seatd-Signature header (t=..,v1=..,v1=..)
// has a v1 that is secret's HMAC of "<t>.<body>".
func signedWith(header, body, secret string) bool {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + body))
	want := hex.EncodeToString(m.Sum(nil))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

// TestQuotaAnswers: past an organization's quota of webhook endpoints or
// API keys, the API answers 409 conflict with fields.quota naming it, and
// the page shows the refusal; other organizations are not affected.
func TestQuotaAnswers(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *config.Config) { c.QuotaWebhooks, c.QuotaAPIKeys = 1, 1 })
	tn := testenv.NewTenant(t, s.app, 0)
	other := testenv.NewTenant(t, s.app, 0)
	org := s.as(tn.Org, tn.Organizer)
	hook := map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"hold.created"}}
	key := map[string]string{"name": "k", "role": "box_office"}

	org.do("POST", "/api/v1/webhooks", hook).want(t, http.StatusCreated)
	if e := org.do("POST", "/api/v1/webhooks", hook).wantErr(t, http.StatusConflict, "conflict"); !strings.HasPrefix(e.Fields["quota"], "webhooks") {
		t.Errorf("second webhook: fields %v, want quota", e.Fields)
	}
	org.do("POST", "/api/v1/api-keys", key).want(t, http.StatusCreated)
	if e := org.do("POST", "/api/v1/api-keys", key).wantErr(t, http.StatusConflict, "conflict"); !strings.HasPrefix(e.Fields["quota"], "api_keys") {
		t.Errorf("second key: fields %v, want quota", e.Fields)
	}
	page := org.do("POST", "/admin/webhooks", formBody(url.Values{"url": {"http://127.0.0.1:9/other"}, "events": {"hold.created"}}))
	if page.status != http.StatusConflict || !strings.Contains(string(page.body), "limit of 1 webhook endpoints") {
		t.Errorf("webhooks page past the quota: %d", page.status)
	}
	s.as(other.Org, other.Organizer).do("POST", "/api/v1/webhooks", hook).want(t, http.StatusCreated)
}

// TestExportCellsEscaped: a cell of an export that a spreadsheet would run
// as a formula (here a valid email, =1+2@x.example, as audit.csv's actor)
// is written with a leading quote.
func TestExportCellsEscaped(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 1)
	seat := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)[0]
	if _, err := s.app.Pool.Exec(t.Context(), `UPDATE users SET email = '=1+2@x.example' WHERE id = $1`, tn.Buyers[0].ID); err != nil {
		t.Fatal(err)
	}
	coreHold(t, s.app, tn.Buyers[0], ev.ID, seat)
	r := s.as(tn.Org, tn.Organizer).do("GET", "/api/v1/events/"+ev.ID.String()+"/exports/audit.csv", nil).want(t, http.StatusOK)
	rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	escaped := false
	for _, row := range rows {
		for _, cell := range row {
			if strings.HasPrefix(cell, "=") {
				t.Errorf("cell %q not escaped", cell)
			}
			escaped = escaped || cell == "'=1+2@x.example"
		}
	}
	if !escaped {
		t.Errorf("audit.csv has no escaped actor email: %q", rows)
	}
}
