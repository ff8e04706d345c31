package session

import (
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestCodecDecodesAsJSON: the direct reading of the codec's output gives
// what encoding/json gives, escapes and odd characters included.
func TestCodecDecodesAsJSON(t *testing.T) {
	c := newJSONCodec()
	pieces := []string{"", "a", "visitor-1@example.test", "<&>", `"`, `\`, "\n", "ü", "\u2028", "\xff", ":", ",", `","`, "}}", "{"}
	rng := rand.New(rand.NewPCG(1, 2)) // #nosec G404 -- test data
	deadline := time.Date(2026, 6, 1, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	for i := range 2000 {
		values := map[string]any{}
		for range rng.IntN(8) {
			k := pieces[rng.IntN(len(pieces))] + strconv.Itoa(rng.IntN(5))
			values[k] = pieces[rng.IntN(len(pieces))] + pieces[rng.IntN(len(pieces))]
		}
		b, err := c.Encode(deadline.Add(time.Duration(i)*time.Second), values)
		if err != nil {
			t.Fatal(err)
		}
		var want sessionJSON
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		d, got, err := c.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !d.Equal(want.Deadline) || d.Location() != want.Deadline.Location() || len(got) != len(want.Values) {
			t.Fatalf("%s: decoded %v %v, want %v %v", b, d, got, want.Deadline, want.Values)
		}
		for k, v := range want.Values {
			if got[k] != v {
				t.Fatalf("%s: %q is %q, want %q", b, k, got[k], v)
			}
		}
	}
	for _, bad := range []string{``, `{"deadline":"x","values":{}}`, `{"deadline":"2026-01-01T00:00:00Z","values":{"a":}}`} {
		if _, _, err := c.Decode([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

// TestCodecKeepsNothing: decoding every session of a big line keeps no
// memory once the requests are done (the waiting room's polls decode a
// session each; docs/waiting-room.md counts the bytes kept a visitor).
func TestCodecKeepsNothing(t *testing.T) {
	c := newJSONCodec()
	const n = 5000
	encoded := make([][]byte, n)
	for i := range encoded {
		b, err := c.Encode(time.Now().Add(time.Hour), map[string]any{
			sessOrg: "0b6f0d44-5a3c-4a57-9d0c-3f1d2a7b8e11", sessOrgSlug: "bench", sessOrgName: "Bench",
			sessUser: "7d1e6f2a-0c4b-4f9e-8a3d-" + strconv.Itoa(100000000000+i), sessEmail: "visitor-" + strconv.Itoa(i) + "@example.test",
			sessRole: "buyer", sessVerified: "1",
		})
		if err != nil {
			t.Fatal(err)
		}
		encoded[i] = b
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for _, b := range encoded {
		_, values, err := c.Decode(b)
		if err != nil || len(values) != 7 {
			t.Fatalf("decode: %v %v", values, err)
		}
	}
	after := heap()
	runtime.KeepAlive(c) // what it keeps counts
	if kept := int64(after) - int64(before); kept > n*16 {
		t.Fatalf("the codec keeps %d B a session after decoding", kept/n)
	}
}
