package web

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"seatd/internal/testenv"
)

// expandVersions undoes the overview's run-length encoding of versions.
func expandVersions(t *testing.T, enc string) []int64 {
	t.Helper()
	var out []int64
	for _, tok := range strings.Split(enc, ",") {
		v, n, found := strings.Cut(tok, "*")
		ver, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("version token %q", tok)
		}
		k := 1
		if found {
			if k, err = strconv.Atoi(n); err != nil || k < 2 {
				t.Fatalf("run token %q", tok)
			}
		}
		for range k {
			out = append(out, ver)
		}
	}
	return out
}

// TestSeatMapOverview: the map page draws every section on the overview
// with its free seats and only the open section's seats (the first, or
// the one ?section= names; an unknown name falls back to the first); the
// page's model has one state and one version per seat, the held seat's
// newer than the rest, and every seat's section.
func TestSeatMapOverview(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 2)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 3, 4, 8) // A, B, C of 32 seats
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	coreHold(t, s.app, tn.Buyers[1], ev.ID, seats[64+5])
	buyer := s.as(tn.Org, tn.Buyers[0])

	for _, tc := range []struct {
		name, query, open string
		first             int // idx of the open section's first seat
	}{
		{"default", "", "A", 0},
		{"named", "?section=C", "C", 64},
		{"unknown", "?section=Z", "A", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := buyer.do("GET", "/e/"+ev.ID.String()+tc.query, nil).want(t, http.StatusOK).doc(t)
			boxes := d.Find(`#venue svg a[data-section-key]`)
			if boxes.Length() != 3 {
				t.Fatalf("%d sections on the overview", boxes.Length())
			}
			for i, want := range []struct {
				label, free string
			}{{"A", "32"}, {"B", "32"}, {"C", "31"}} {
				b := boxes.Eq(i)
				if b.AttrOr("data-section-key", "") != want.label || b.AttrOr("data-available", "") != want.free ||
					b.AttrOr("aria-label", "") != "Section "+want.label+", "+want.free+" of 32 seats free" ||
					strings.TrimSpace(b.Find("[data-free]").Text()) != want.free+" free" {
					t.Errorf("section %d: key %q, free %q, name %q", i, b.AttrOr("data-section-key", ""), b.AttrOr("data-available", ""), b.AttrOr("aria-label", ""))
				}
				_, cur := b.Attr("aria-current")
				if cur != (want.label == tc.open) {
					t.Errorf("section %s: aria-current %v with %s open", want.label, cur, tc.open)
				}
			}
			shown := d.Find(`#venue .seat`)
			if shown.Length() != 32 {
				t.Fatalf("%d seats drawn, want section %s's 32", shown.Length(), tc.open)
			}
			if id := shown.First().AttrOr("id", ""); id != "seat-"+seats[tc.first].String() {
				t.Errorf("first seat drawn %s, want seat-%s", id, seats[tc.first])
			}
			if !strings.HasPrefix(shown.First().AttrOr("aria-label", ""), "Section "+tc.open+", row A, seat 1,") {
				t.Errorf("first seat's name %q", shown.First().AttrOr("aria-label", ""))
			}
			v := d.Find("#venue")
			states := v.AttrOr("data-states", "")
			want := strings.Repeat("a", 69) + "h" + strings.Repeat("a", 26)
			if states != want {
				t.Errorf("data-states %q, want %q", states, want)
			}
			vers := expandVersions(t, v.AttrOr("data-versions", ""))
			if len(vers) != 96 || vers[69] <= vers[0] {
				t.Errorf("%d versions, held seat's %v against %v", len(vers), vers[69:70], vers[:1])
			}
			if runs := v.AttrOr("data-runs", ""); runs != "0:32:0 32:32:1 64:32:2" {
				t.Errorf("data-runs %q", runs)
			}
		})
	}
}
