package hold

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
)

// TestEncodeMessageAsJSON: encodeMessage writes exactly what json.Marshal
// writes, for messages of random deltas (randomDeltas), fails where it
// fails, and the result decodes (decodeMessage) to the message
// encoding/json decodes: both encode to the same bytes.
func TestEncodeMessageAsJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	id, delta := randomDeltas(rng)
	fast, refused := 0, 0
	for i := range 3000 {
		m := message{From: id()}
		for range rng.IntN(5) {
			m.Deltas = append(m.Deltas, delta())
		}
		if i%7 == 0 {
			m.Deltas = []Delta{}
		}
		switch i % 50 {
		case 1:
			m.Resync = true
		case 2:
			m.Settings = true
		case 3:
			m.Waitlist = &WaitlistChange{Users: []uuid.UUID{id()}}
		}
		want, wantErr := json.Marshal(m)
		got, err := encodeMessage(m)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("message %d: error %v, json.Marshal's %v", i, err, wantErr)
		}
		if err != nil {
			refused++
			continue
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("message %d:\n got %s\nwant %s", i, got, want)
		}
		back, err := decodeMessage(got)
		if err != nil {
			t.Fatalf("message %d does not decode: %v", i, err)
		}
		// Decoded as encoding/json decodes it: the same message again.
		var v1 message
		if err := json.Unmarshal(got, &v1); err != nil {
			t.Fatalf("message %d: encoding/json: %v", i, err)
		}
		again, err1 := encodeMessage(back)
		want1, err2 := encodeMessage(v1)
		if err1 != nil || err2 != nil || !bytes.Equal(again, want1) {
			t.Fatalf("message %d decodes to another message than encoding/json's (%v, %v):\n got %s\nwant %s", i, err1, err2, again, want1)
		}
		if len(m.Deltas) > 0 {
			fast++
		}
	}
	if fast < 1000 || refused == 0 {
		t.Fatalf("too few cases: %d messages with deltas, %d refused", fast, refused)
	}
	t.Logf("%d messages with deltas equal to json.Marshal's; %d refused by both", fast, refused)
}

// TestDeltaMessagesSplit: deltaMessages splits deltas into messages of at
// most the limit, each as json.Marshal writes it, in order, each as full
// as the limit lets it be; a delta longer than the limit goes alone.
func TestDeltaMessagesSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	id, delta := randomDeltas(rng)
	split := 0
	for i := range 500 {
		from := id()
		var ds []Delta
		for len(ds) < rng.IntN(60) {
			if d := delta(); d.At.Year() < 10000 && d.HeldUntil.Year() < 10000 {
				ds = append(ds, d)
			}
		}
		limit := []int{7000, 1500, 300}[rng.IntN(3)]
		ms, err := deltaMessages(from, ds, limit)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		off := 0
		for j, b := range ms {
			m, err := decodeMessage(b)
			if err != nil {
				t.Fatalf("case %d message %d: %v", i, j, err)
			}
			k := len(m.Deltas)
			want, _ := json.Marshal(message{From: from, Deltas: ds[off : off+k]})
			if !bytes.Equal(b, want) {
				t.Fatalf("case %d message %d:\n got %s\nwant %s", i, j, b, want)
			}
			if len(b) > limit && k != 1 {
				t.Fatalf("case %d message %d: %d bytes of %d deltas, limit %d", i, j, len(b), k, limit)
			}
			if off += k; off < len(ds) {
				next, _ := json.Marshal(ds[off])
				if len(b)+1+len(next) <= limit {
					t.Fatalf("case %d message %d: %d bytes, and the next delta (%d) would have fit %d", i, j, len(b), len(next), limit)
				}
			}
		}
		if off != len(ds) {
			t.Fatalf("case %d: %d of %d deltas in the messages", i, off, len(ds))
		}
		if len(ms) > 1 {
			split++
		}
	}
	if split < 100 {
		t.Fatalf("only %d cases split", split)
	}
}

// randomDeltas returns makers of random ids (a quarter of them nil) and
// of random deltas with every optional field set or not, strings that
// need escaping, times in other zones, with nanoseconds, zero, or past
// what MarshalJSON takes.
func randomDeltas(rng *rand.Rand) (func() uuid.UUID, func() Delta) {
	id := func() uuid.UUID {
		if rng.IntN(4) == 0 {
			return uuid.Nil
		}
		var u uuid.UUID
		for i := range u {
			u[i] = byte(rng.UintN(256))
		}
		return u
	}
	str := func() string {
		return []string{"", "held", "available", "a<b", "x&y", `q"`, "tab\t", "ünï", "\xff", "line\nbreak", "\u2028"}[rng.IntN(11)]
	}
	zones := []*time.Location{time.UTC, time.FixedZone("", 2*3600), time.FixedZone("", -(5*3600 + 30*60)),
		time.FixedZone("", 3600+17), time.Local}
	tm := func() time.Time {
		switch rng.IntN(60) {
		case 0, 1, 2, 3, 4, 5, 6, 7, 8, 9:
			return time.Time{}
		case 10:
			return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // MarshalJSON refuses it
		}
		return time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)*int64(rng.IntN(2))).In(zones[rng.IntN(len(zones))])
	}
	delta := func() Delta {
		return Delta{Org: id(), Event: id(), Seat: id(), Kind: str(),
			Status: store.SeatStatus(str()), Prev: store.SeatStatus(str()), Version: rng.Int64N(1e6) - 1000,
			HoldID: id(), UserID: id(), HeldUntil: tm(), Fence: rng.Int64N(3) * rng.Int64N(1e12), Actor: id(),
			PrevUser: id(), At: tm(), Locked: rng.IntN(2) == 0}
	}
	return id, delta
}

// BenchmarkEncodeMessage is a commit's message of a 4-seat hold.
func BenchmarkEncodeMessage(b *testing.B) {
	now := time.Now()
	m := message{From: uuid.New()}
	for range 4 {
		m.Deltas = append(m.Deltas, Delta{Org: uuid.New(), Event: uuid.New(), Seat: uuid.New(), Kind: KindHeld,
			Status: store.Held, Prev: store.Available, Version: 3, HoldID: uuid.New(), UserID: uuid.New(),
			HeldUntil: now.Add(10 * time.Minute), Fence: 1234, Actor: uuid.New(), At: now})
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			_, _ = encodeMessage(m)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(m)
		}
	})
}

// BenchmarkDecodeMessage decodes a message of 20 hold deltas, as every
// process decodes every other's, with decodeMessage and with
// encoding/json for comparison.
func BenchmarkDecodeMessage(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	id, _ := randomDeltas(rng)
	m := message{From: id()}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for range 20 {
		m.Deltas = append(m.Deltas, Delta{Org: id(), Event: id(), Seat: id(), Kind: KindHeld, Status: store.Held,
			Prev: store.Available, Version: 5, HoldID: id(), UserID: id(), HeldUntil: at.Add(10 * time.Minute),
			Fence: 1234, Actor: id(), At: at, Locked: true})
	}
	msg, err := encodeMessage(m)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decodeMessage", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeMessage(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var m message
			if err := json.Unmarshal(msg, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
