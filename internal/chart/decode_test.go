package chart

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"seatd/internal/apperr"
)

// TestDecodeJSONShape: a body that is not one JSON value is 400; one of
// the wrong shape is 422 naming every misplaced, mistyped and unknown
// field by path, and a list past a chart's limit at the list.
func TestDecodeJSONShape(t *testing.T) {
	t.Parallel()
	many := func(n int, item string) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	cases := []struct {
		name   string
		body   string
		code   apperr.Code
		fields []string
	}{
		{"empty", "  ", apperr.BadRequest, nil},
		{"syntax", `{"name": `, apperr.BadRequest, nil},
		{"two values", `{"name": "x"} {}`, apperr.BadRequest, nil},
		{"not an object", `[1, 2]`, apperr.Invalid, nil},
		{"wrong types", `{"name": 7, "categories": [{"key": "a", "name": "A", "color": true}],
			"sections": [{"label": "A", "kind": "seated", "rows": [{"label": "1", "seats": [{"number": "1", "x": 1.5, "y": 0}]}]}]}`,
			apperr.Invalid, []string{"name", "categories[0].color", "sections[0].rows[0].seats[0].number", "sections[0].rows[0].seats[0].x"}},
		{"unknown fields", `{"name": "x", "colour": 1, "sections": [{"label": "A", "kind": "ga", "capacity": 5, "seats": []}]}`,
			apperr.Invalid, []string{"colour", "sections[0].seats"}},
		{"escaped keys", `{"n\u0061me": 1, "\u00e9": {"deep": [1, {"x": "]"}]}}`, apperr.Invalid, []string{"name", "é"}},
		{"sections not a list", `{"name": "x", "sections": {"label": "A"}}`, apperr.Invalid, []string{"sections"}},
		{"bad id", `{"id": "chart-1", "name": "x", "sections": []}`, apperr.Invalid, []string{"id"}},
		{"id of the wrong type", `{"id": 5, "version": "2", "name": "x"}`, apperr.Invalid, []string{"id", "version"}},
		{"too many sections", `{"name": "x", "sections": [` + many(MaxSections+1, `{"label": "A"}`) + `]}`,
			apperr.Invalid, []string{"sections"}},
		{"too many categories", `{"name": "x", "categories": [` + many(MaxCategories+1, `{}`) + `]}`,
			apperr.Invalid, []string{"categories"}},
		{"too many seats over the rows", `{"name": "x", "sections": [{"rows": [{"seats": [` + many(MaxSeats/2, `{}`) + `]},
			{"seats": [` + many(MaxSeats/2+1, `{}`) + `]}]}]}`, apperr.Invalid, []string{"sections[0].rows[1].seats"}},
	}
	for _, tc := range cases {
		_, err := DecodeJSON([]byte(tc.body))
		e, ok := apperr.As(err)
		if !ok || e.Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
			continue
		}
		for _, f := range tc.fields {
			if e.Fields[f] == "" {
				t.Errorf("%s: no problem at %s: %v", tc.name, f, e.Fields)
			}
		}
		if len(e.Fields) != len(tc.fields) {
			t.Errorf("%s: problems %v, want at %v", tc.name, e.Fields, tc.fields)
		}
	}
	d, err := DecodeJSON([]byte(`{"id": "6f1c2b8e-8f5e-4c55-a0d2-3a6d8f1b2c3d", "version": 3, "name": "Hall", "categories": null,
		"sections": [{"label": "G", "kind": "ga", "capacity": 10}]}`))
	if err != nil || d.ID == nil || d.Version != 3 || d.Name != "Hall" || len(d.Sections) != 1 || d.Sections[0].Capacity != 10 {
		t.Fatalf("a good document: %+v, %v", d, err)
	}
}

// TestDecodeJSONBounded: a 32 MiB chart (the upload limit) of the wrong
// shape is refused after at most maxReportedPaths problems, allocating a
// small fraction of its size; so are bodies with a list past its limit
// (4 or 8 MiB is past their limits; reading 32 MiB under -race takes
// seconds each). Decoding the first into the types and then again into any, as
// before, allocated about 10 GB and took close to a minute. Not parallel:
// allocations are counted for the whole process.
func TestDecodeJSONBounded(t *testing.T) {
	body := func(size int, prefix, item, suffix string) []byte {
		var b bytes.Buffer
		b.WriteString(prefix)
		for b.Len() < size-len(suffix)-len(item) {
			b.WriteString(item)
			b.WriteByte(',')
		}
		b.WriteString(item)
		b.WriteString(suffix)
		return b.Bytes()
	}
	cases := []struct {
		name string
		body []byte
		want func(*apperr.Error) bool
	}{
		{"a list of wrong values", body(32<<20, `{"name": "x", "sections": [`, `1`, `]}`), func(e *apperr.Error) bool {
			return len(e.Fields) == maxReportedPaths && e.Fields["sections[999]"] == "must be an object" &&
				strings.Contains(e.Message, "the first 1000 problems are listed")
		}},
		{"empty sections", body(4<<20, `{"name": "x", "sections": [`, `{}`, `]}`), func(e *apperr.Error) bool {
			return len(e.Fields) == 1 && e.Fields["sections"] == "must list at most 1000 sections"
		}},
		{"one row of seats", body(8<<20, `{"name": "x", "sections": [{"label": "A", "kind": "seated", "rows": [{"label": "1", "seats": [`,
			`{"number": 1, "x": 0, "y": 0}`, `]}]}]}`), func(e *apperr.Error) bool {
			return len(e.Fields) == 1 && e.Fields["sections[0].rows[0].seats"] == "is past the chart's limit of 200000 seats"
		}},
		{"unknown fields everywhere", body(4<<20, `{"name": "x", "sections": [{"rows": [`, `{"bogus": [[[1]]]}`, `]}]}`),
			func(e *apperr.Error) bool { return len(e.Fields) == maxReportedPaths }},
	}
	for _, tc := range cases {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := DecodeJSON(tc.body)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.Invalid || !tc.want(e) {
			t.Errorf("%s: %v", tc.name, err)
		}
		// A quarter of the body: nothing proportional to it is kept.
		if allocated > uint64(len(tc.body)/4) {
			t.Errorf("%s: %d MB allocated for a %d MB body", tc.name, allocated>>20, len(tc.body)>>20)
		}
		t.Logf("%s: refused after %s, %d KB allocated", tc.name, took.Round(time.Millisecond), allocated>>10)
	}
}
