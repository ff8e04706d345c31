package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
