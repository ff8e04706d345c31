package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestWebhooksAPI: an organizer registers an endpoint (secret shown once),
// lists it without the secret, reads its deliveries, sends one again, and
// deletes it; bad input is refused with fields and writes nothing.
func TestWebhooksAPI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	testenv.Background(t, s.app)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	var hits atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Seatd-Signature") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		hits.Add(1)
	}))
	t.Cleanup(rcv.Close)
	org := s.as(tn.Org, tn.Organizer)

	var created struct {
		ID     uuid.UUID `json:"id"`
		Secret string    `json:"secret"`
		Events []string  `json:"events"`
	}
	org.do("POST", "/api/v1/webhooks", map[string]any{"url": rcv.URL, "events": []string{"seat.blocked", "seat.blocked"}}).
		want(t, http.StatusCreated).json(t, &created)
	if !strings.HasPrefix(created.Secret, "whsec_") || len(created.Events) != 1 {
		t.Fatalf("created %+v", created)
	}
	list := org.do("GET", "/api/v1/webhooks", nil).want(t, http.StatusOK)
	if strings.Contains(string(list.body), created.Secret) || !strings.Contains(string(list.body), created.ID.String()) {
		t.Fatalf("list: %s", list.body)
	}

	org.do("POST", "/api/v1/events/"+ev.ID.String()+"/seats/"+seats[0].String()+"/block", nil).want(t, http.StatusOK)
	// Not subscribed: no delivery.
	org.do("POST", "/api/v1/events/"+ev.ID.String()+"/seats/"+seats[0].String()+"/unblock", nil).want(t, http.StatusOK)
	var ds struct {
		Deliveries []struct {
			ID       uuid.UUID `json:"id"`
			Type     string    `json:"type"`
			State    string    `json:"state"`
			Attempts int       `json:"attempts"`
		} `json:"deliveries"`
	}
	path := "/api/v1/webhooks/" + created.ID.String() + "/deliveries"
	testsvc.Eventually(t, 5*time.Second, "the delivery delivered", func() bool {
		org.do("GET", path, nil).want(t, http.StatusOK).json(t, &ds)
		return len(ds.Deliveries) == 1 && ds.Deliveries[0].State == "delivered"
	})
	if ds.Deliveries[0].Type != "seat.blocked" || ds.Deliveries[0].Attempts != 1 {
		t.Fatalf("delivery %+v", ds.Deliveries[0])
	}
	org.do("POST", path+"/"+ds.Deliveries[0].ID.String()+"/redeliver", nil).want(t, http.StatusAccepted)
	testsvc.Eventually(t, 5*time.Second, "sent again", func() bool { return hits.Load() == 2 })

	var before int
	_ = s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_endpoints WHERE org_id = $1`, tn.Org.ID).Scan(&before)
	for _, body := range []any{
		map[string]any{"url": rcv.URL, "events": []string{}},
		map[string]any{"url": rcv.URL, "events": []string{"hold.created", "seat.exploded"}},
		map[string]any{"url": "ftp://example.com/", "events": []string{"hold.created"}},
		map[string]any{"url": "", "events": []string{"hold.created"}},
		map[string]any{"events": []string{"hold.created"}},
	} {
		r := org.do("POST", "/api/v1/webhooks", body).wantErr(t, http.StatusUnprocessableEntity, "invalid")
		if len(r.Fields) == 0 {
			t.Fatalf("%v: no field named", body)
		}
	}
	var after int
	_ = s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_endpoints WHERE org_id = $1`, tn.Org.ID).Scan(&after)
	if after != before {
		t.Fatalf("refused requests wrote endpoints: %d -> %d", before, after)
	}
	s.as(tn.Org, tn.BoxOffice).do("GET", "/api/v1/webhooks", nil).wantErr(t, http.StatusForbidden, "forbidden")

	org.do("DELETE", "/api/v1/webhooks/"+created.ID.String(), nil).want(t, http.StatusNoContent)
	org.do("DELETE", "/api/v1/webhooks/"+created.ID.String(), nil).wantErr(t, http.StatusNotFound, "not_found")
	org.do("GET", path, nil).wantErr(t, http.StatusNotFound, "not_found")
}

// TestWebhookRegistrationSSRF: without SEATD_WEBHOOK_ALLOW_PRIVATE, URLs
// to loopback, private, link-local and unspecified addresses are refused
// at registration, naming the url field.
func TestWebhookRegistrationSSRF(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *config.Config) { c.WebhookAllowPrivate = false })
	tn := testenv.NewTenant(t, s.app, 1)
	org := s.as(tn.Org, tn.Organizer)
	for _, u := range []string{"http://127.0.0.1:8080/", "http://localhost/", "http://[::1]/", "http://10.0.0.5/",
		"http://192.168.0.1/", "http://169.254.169.254/latest/meta-data/", "http://0.0.0.0/", "http://[fe80::1]/"} {
		e := org.do("POST", "/api/v1/webhooks", map[string]any{"url": u, "events": []string{"hold.created"}}).
			wantErr(t, http.StatusUnprocessableEntity, "invalid")
		if e.Fields["url"] == "" {
			t.Fatalf("%s: %+v", u, e)
		}
	}
	var n int
	_ = s.app.Pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_endpoints WHERE org_id = $1`, tn.Org.ID).Scan(&n)
	if n != 0 {
		t.Fatalf("%d endpoints written", n)
	}
}

// TestWebhookPages: the organizer registers an endpoint from the page (the
// secret shown once), sees its deliveries and sends one again.
func TestWebhookPages(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 1)
	seat := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)[0]
	org := s.as(tn.Org, tn.Organizer)
	form := func(v string) raw { return raw{contentType: "application/x-www-form-urlencoded", body: []byte(v)} }

	r := org.do("POST", "/admin/webhooks", form("url=http%3A%2F%2F127.0.0.1%3A9%2Fhook&events=seat.blocked&events=hold.created")).
		want(t, http.StatusCreated)
	if !strings.Contains(string(r.body), `value="whsec_`) {
		t.Fatal("secret not shown")
	}
	var id uuid.UUID
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT id FROM webhook_endpoints WHERE org_id = $1`, tn.Org.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if page := org.do("GET", "/admin/webhooks", nil).want(t, http.StatusOK); strings.Contains(string(page.body), "whsec_") {
		t.Fatal("the secret is shown again")
	}
	org.do("POST", "/api/v1/events/"+ev.ID.String()+"/seats/"+seat.String()+"/block", nil).want(t, http.StatusOK)
	page := org.do("GET", "/admin/webhooks/"+id.String()+"/deliveries", nil).want(t, http.StatusOK)
	var delivery uuid.UUID
	if err := s.app.Pool.QueryRow(t.Context(), `SELECT public_id FROM webhook_deliveries WHERE endpoint_id = $1`, id).Scan(&delivery); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page.body), "seat.blocked") || !strings.Contains(string(page.body), "Send again") {
		t.Fatalf("deliveries page: %s", page.body)
	}
	org.do("POST", "/admin/webhooks/"+id.String()+"/deliveries/"+delivery.String()+"/redeliver", form("")).want(t, http.StatusSeeOther)
	org.do("POST", "/admin/webhooks/"+id.String()+"/delete", form("")).want(t, http.StatusSeeOther)
	s.as(tn.Org, tn.Buyers[0]).do("GET", "/admin/webhooks", nil).want(t, http.StatusForbidden)
}
