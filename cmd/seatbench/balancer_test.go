package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBalancerPlacesWritesByEvent runs the haproxy configuration of make
// run-cluster (scripts/haproxy-config.sh) in front of three servers that
// answer with their name: writes to one event, through the API, the
// buyer's pages and the box office, all reach one server; reads and
// writes that name no event spread round robin; different events spread.
func TestBalancerPlacesWritesByEvent(t *testing.T) {
	var servers []*server
	for i := range 3 {
		name := fmt.Sprintf("s%d", i)
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, name)
		}))
		t.Cleanup(hs.Close)
		servers = append(servers, &server{name: name, addr: strings.TrimPrefix(hs.URL, "http://")})
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	p := &procs{log: newProgress(io.Discard), root: root, tmp: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lb, err := p.startBalancer(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lb.stop)

	client := newHTTPClient()
	reach := func(method, path string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, "http://"+lb.addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, body)
		}
		return string(body)
	}
	spread := func(method string, path func(i int) string) map[string]int {
		got := map[string]int{}
		for i := range 30 {
			got[reach(method, path(i))]++
		}
		return got
	}

	const ev = "0b7c6d1e-5f4a-4c3b-9a8d-7e6f5a4b3c2d"
	writes := []struct{ method, path string }{
		{"POST", "/api/v1/events/" + ev + "/holds"},
		{"POST", "/api/v1/events/" + ev + "/checkout"},
		{"POST", "/e/" + ev + "/seats/s1/toggle"},
		{"DELETE", "/e/" + ev + "/holds/h1"},
		{"POST", "/box-office/events/" + ev + "/sell"},
	}
	owner := reach(writes[0].method, writes[0].path)
	for _, w := range writes {
		for range 5 {
			if got := reach(w.method, w.path); got != owner {
				t.Fatalf("%s %s reached %s, the event's other writes %s", w.method, w.path, got, owner)
			}
		}
	}
	if got := spread("GET", func(int) string { return "/api/v1/events/" + ev + "/seats" }); len(got) != 3 {
		t.Errorf("reads of one event reached %v, want all three round robin", got)
	}
	if got := spread("DELETE", func(i int) string { return fmt.Sprintf("/api/v1/holds/h%d", i) }); len(got) != 3 {
		t.Errorf("writes naming no event reached %v, want all three round robin", got)
	}
	if got := spread("POST", func(i int) string { return fmt.Sprintf("/api/v1/events/event-%d/holds", i) }); len(got) < 2 {
		t.Errorf("writes to 30 events all reached %v", got)
	}
}
