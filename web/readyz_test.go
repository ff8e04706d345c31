package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestReadyzDetailOnOpsOnly: the public /readyz says ready or not and
// nothing more; the dependencies' state (breaker, Redis, mode) is on the
// ops listener only.
func TestReadyzDetailOnOpsOnly(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	var pub map[string]string
	s.client().do("GET", "/readyz", nil).want(t, http.StatusOK).json(t, &pub)
	if len(pub) != 1 || pub["status"] != "ok" {
		t.Fatalf("public /readyz: %v, want only status ok", pub)
	}
	ops := httptest.NewServer(s.srv.Ops())
	t.Cleanup(ops.Close)
	var detail map[string]string
	(&client{t: t, base: ops.URL, hc: ops.Client()}).do("GET", "/readyz", nil).want(t, http.StatusOK).json(t, &detail)
	for _, k := range []string{"postgres", "redis", "breaker", "mode"} {
		if detail[k] == "" {
			t.Errorf("ops /readyz lacks %s: %v", k, detail)
		}
	}
}
