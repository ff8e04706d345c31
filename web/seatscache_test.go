package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"testing"

	"seatd/internal/config"
	"seatd/internal/testenv"
)

// TestSeatListCachedAndLimited: the seat list carries a strong ETag; a
// repeat with If-None-Match is 304 with no body; a client that takes gzip
// gets the same bytes compressed; a change of a seat changes the ETag;
// past the per-reader read limit the answer is 429 with Retry-After, and
// past the per-network limit another reader of that network is refused
// too.
func TestSeatListCachedAndLimited(t *testing.T) {
	t.Parallel()
	const perReader, perNet = 6, 10
	s := newTestServer(t, func(c *config.Config) {
		trustLoopback(c)
		c.ReadRatePerMinute, c.ReadPrefixRatePerMinute = perReader, perNet
	})
	oneLimiterMinute(s)
	tn := testenv.NewTenant(t, s.app, 3)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 3, 4)
	seat := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)[0]
	path := "/api/v1/events/" + ev.ID.String() + "/seats"
	ip := randomNet24() + "7"
	buyer := s.as(tn.Org, tn.Buyers[0])
	read := func(c *client, hdr ...string) response {
		return c.do("GET", path, nil, append([]string{"X-Forwarded-For", ip}, hdr...)...)
	}

	first := read(buyer, "Accept-Encoding", "identity").want(t, http.StatusOK) // 1
	etag := first.header.Get("ETag")
	if len(etag) < 3 || etag[0] != '"' || first.header.Get("Content-Encoding") != "" {
		t.Fatalf("ETag %q (want a strong one), Content-Encoding %q", etag, first.header.Get("Content-Encoding"))
	}
	var list struct {
		Seats []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"seats"`
	}
	first.json(t, &list)
	if len(list.Seats) != 12 {
		t.Fatalf("%d seats, want 12", len(list.Seats))
	}

	again := read(buyer, "Accept-Encoding", "identity", "If-None-Match", etag) // 2
	if again.status != http.StatusNotModified || len(again.body) != 0 || again.header.Get("ETag") != etag {
		t.Fatalf("repeat: %d, %d bytes, ETag %q; want 304, none, %q", again.status, len(again.body), again.header.Get("ETag"), etag)
	}

	zipped := read(buyer, "Accept-Encoding", "gzip") // 3
	zipped.want(t, http.StatusOK)
	if zipped.header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", zipped.header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped.body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(unzipped, first.body) {
		t.Fatalf("the gzip copy is not the plain body (%v)", err)
	}
	read(buyer, "Accept-Encoding", "gzip", "If-None-Match", zipped.header.Get("ETag")).want(t, http.StatusNotModified) // 4

	// A change of a seat: a new answer under a new ETag.
	s.as(tn.Org, tn.BoxOffice).do("POST", "/api/v1/events/"+ev.ID.String()+"/seats/"+seat.String()+"/block", nil).want(t, http.StatusOK)
	changed := read(buyer, "Accept-Encoding", "identity", "If-None-Match", etag).want(t, http.StatusOK) // 5
	if changed.header.Get("ETag") == etag {
		t.Fatal("the ETag did not change with a seat")
	}
	changed.json(t, &list)
	if list.Seats[0].ID != seat.String() || list.Seats[0].Status != "blocked" {
		t.Fatalf("first seat %+v, want %s blocked", list.Seats[0], seat)
	}

	// The reader's limit: one more read, then 429 with Retry-After.
	read(buyer).want(t, http.StatusOK) // 6
	r := read(buyer)                   // 7
	r.wantErr(t, http.StatusTooManyRequests, "rate_limited")
	if n, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || n < 1 || n > 60 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// Another session of the same account is the same reader.
	read(s.as(tn.Org, tn.Buyers[0])).wantErr(t, http.StatusTooManyRequests, "rate_limited") // 8
	// Other readers of the network read until the network's limit (the
	// 6 reads let through above and 4 more; refused ones do not count)...
	other := s.as(tn.Org, tn.Buyers[1])
	for range perNet - perReader {
		read(other).want(t, http.StatusOK)
	}
	read(other).wantErr(t, http.StatusTooManyRequests, "rate_limited")
	// ... while a reader elsewhere is not affected.
	s.as(tn.Org, tn.Buyers[2]).do("GET", path, nil, "X-Forwarded-For", randomNet24()+"7").want(t, http.StatusOK)
}
