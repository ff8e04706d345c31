package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestOpsListener: /metrics and pprof answer on the ops handler only; the
// public port keeps the probes and answers 404 for /metrics and profiles.
func TestOpsListener(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	ops := httptest.NewServer(s.srv.Ops())
	t.Cleanup(ops.Close)
	pub := s.client()
	pub.do("GET", "/healthz", nil).want(t, http.StatusOK)
	pub.do("GET", "/readyz", nil).want(t, http.StatusOK)
	for _, p := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/cmdline"} {
		if r := pub.do("GET", p, nil); r.status != http.StatusNotFound {
			t.Fatalf("public GET %s: %d, want 404: %.200s", p, r.status, r.body)
		}
	}
	oc := &client{t: t, base: ops.URL, hc: ops.Client()}
	r := oc.do("GET", "/metrics", nil).want(t, http.StatusOK)
	if !strings.Contains(string(r.body), "seatd_http_requests_total") {
		t.Fatalf("ops /metrics lacks the request counter: %.300s", r.body)
	}
	oc.do("GET", "/debug/pprof/", nil).want(t, http.StatusOK)
	oc.do("GET", "/healthz", nil).want(t, http.StatusOK)
	t.Logf("public: probes 200, /metrics and pprof 404; ops: /metrics, pprof and probes 200")
}

// TestPoolMetricsPerPool: the ops listener exports each Postgres pool's
// series under its pool label — the store's (main) and the shared hold
// statements' and transactions' — and a two-seat hold on the fast path,
// which takes the shared transactions, is counted on their pool.
func TestPoolMetricsPerPool(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	testenv.Background(t, s.app)
	tn := testenv.NewTenant(t, s.app, 1)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	cfg := s.app.Cfg
	want := map[string]int{"main": cfg.PGMaxConns, "hold_statements": cfg.HoldBatchSlots, "hold_transactions": cfg.HoldBatchSlots}
	got := metricSamples(t, s.srv.Ops())
	for pool, n := range want {
		k := `seatd_pg_pool_max_conns{pool="` + pool + `"}`
		if v, ok := got[k]; !ok || int(v) != n {
			t.Errorf("%s = %v (exported: %v), want %d", k, v, ok, n)
		}
	}
	// A first hold brings the event into the cache; the follower then
	// syncs it to Redis, after which holds take the fast path.
	b := s.as(tn.Org, tn.Buyers[0])
	path := "/api/v1/events/" + ev.ID.String() + "/holds"
	b.do("POST", path, map[string]any{"seat_ids": []string{seats[3].String()}}).want(t, http.StatusCreated)
	testsvc.Eventually(t, 5*time.Second, "the event synced to Redis", func() bool {
		return s.app.Engine.UnsyncedEvents() == 0
	})
	acquires := func() float64 {
		return metricSamples(t, s.srv.Ops())[`seatd_pg_pool_acquires_total{pool="hold_transactions"}`]
	}
	before := acquires()
	b.do("POST", path, map[string]any{"seat_ids": []string{seats[0].String(), seats[1].String()}}).want(t, http.StatusCreated)
	if after := acquires(); after != before+1 {
		t.Fatalf("hold_transactions acquires %v → %v across one two-seat hold, want one more", before, after)
	}
	t.Logf("pools exported: %v; one two-seat hold took one hold_transactions connection", want)
}
