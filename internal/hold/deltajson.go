package hold

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// encodeMessage encodes a message as encoding/json does, byte for byte.
// A message of deltas (what every commit publishes) is written directly
// (deltaMessages); any other goes through json.Marshal.
func encodeMessage(m message) ([]byte, error) {
	if m.Resync || m.Settings || m.Waitlist != nil || len(m.Deltas) == 0 {
		return json.Marshal(m)
	}
	ms, err := deltaMessages(m.From, m.Deltas, math.MaxInt)
	if err != nil {
		return nil, err
	}
	return ms[0], nil
}

// deltaMessages encodes deltas from a sender as messages of at most limit
// bytes each (a delta that alone makes a message longer goes alone), in
// their order; each is what json.Marshal writes for message{From: from,
// Deltas: its deltas}. Deltas are written directly: through reflection a
// 4-seat hold's message cost about 14 µs, half of what publishing a
// commit cost seatd in a best-available burst. A delta the direct path
// would not write exactly as encoding/json does goes through json.Marshal.
func deltaMessages(from uuid.UUID, ds []Delta, limit int) ([][]byte, error) {
	head := []byte{'{'}
	if from != uuid.Nil {
		head = appendUUIDField(head, "from", from, false)
		head = append(head, ',')
	}
	head = append(head, `"deltas":[`...)
	var out [][]byte
	var cur, one []byte
	for i := range ds {
		var ok bool
		if one, ok = appendDelta(one[:0], &ds[i]); !ok {
			b, err := json.Marshal(ds[i])
			if err != nil {
				return nil, err
			}
			one = append(one[:0], b...)
		}
		if cur != nil && len(cur)+1+len(one)+2 > limit {
			out = append(out, append(cur, "]}"...))
			cur = nil
		}
		if cur == nil {
			cur = append(make([]byte, 0, min(limit, len(head)+2+(len(ds)-i)*(len(one)+1))), head...)
		} else {
			cur = append(cur, ',')
		}
		cur = append(cur, one...)
	}
	if cur != nil {
		out = append(out, append(cur, "]}"...))
	}
	return out, nil
}

// appendDelta writes d as encoding/json would (field order, omitempty and
// omitzero as Delta's tags say); false when a value needs encoding/json's
// own handling (a string to escape, a time it refuses or may write
// otherwise), and then what it wrote is to be dropped.
func appendDelta(b []byte, d *Delta) ([]byte, bool) {
	b = append(b, '{')
	b = appendUUIDField(b, "org", d.Org, false)
	b = appendUUIDField(b, "event", d.Event, true)
	b = appendUUIDField(b, "seat", d.Seat, true)
	var ok bool
	if b, ok = appendStringField(b, "kind", d.Kind); !ok {
		return b, false
	}
	if b, ok = appendStringField(b, "status", string(d.Status)); !ok {
		return b, false
	}
	if d.Prev != "" {
		if b, ok = appendStringField(b, "prev", string(d.Prev)); !ok {
			return b, false
		}
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, d.Version, 10)
	b = appendSetUUIDField(b, "hold_id", d.HoldID)
	b = appendSetUUIDField(b, "user_id", d.UserID)
	if !d.HeldUntil.IsZero() {
		if b, ok = appendTimeField(b, "held_until", d.HeldUntil); !ok {
			return b, false
		}
	}
	if d.Fence != 0 {
		b = append(b, `,"fence":`...)
		b = strconv.AppendInt(b, d.Fence, 10)
	}
	b = appendSetUUIDField(b, "actor", d.Actor)
	b = appendSetUUIDField(b, "prev_user", d.PrevUser)
	if b, ok = appendTimeField(b, "at", d.At); !ok {
		return b, false
	}
	if d.Locked {
		b = append(b, `,"locked":true`...)
	}
	return append(b, '}'), true
}

func appendKey(b []byte, name string, comma bool) []byte {
	if comma {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, `":`...)
}

func appendUUIDField(b []byte, name string, id uuid.UUID, comma bool) []byte {
	b = appendKey(b, name, comma)
	b = append(b, '"')
	b = hex.AppendEncode(b, id[0:4])
	b = append(b, '-')
	b = hex.AppendEncode(b, id[4:6])
	b = append(b, '-')
	b = hex.AppendEncode(b, id[6:8])
	b = append(b, '-')
	b = hex.AppendEncode(b, id[8:10])
	b = append(b, '-')
	b = hex.AppendEncode(b, id[10:])
	return append(b, '"')
}

// appendSetUUIDField writes a field tagged omitzero: nothing for the nil id.
func appendSetUUIDField(b []byte, name string, id uuid.UUID) []byte {
	if id == uuid.Nil {
		return b
	}
	return appendUUIDField(b, name, id, true)
}

// appendStringField writes a string that needs no escaping; false for
// one that does (encoding/json escapes control characters, quotes,
// backslashes, <, > and & and replaces invalid UTF-8).
func appendStringField(b []byte, name, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			return b, false
		}
	}
	b = appendKey(b, name, true)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// appendTimeField writes t as time.Time's MarshalJSON does (RFC 3339
// with nanoseconds); false for what MarshalJSON refuses or may write
// otherwise (a year outside 0–9999, an offset with seconds).
func appendTimeField(b []byte, name string, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, off := t.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		return b, false
	}
	b = appendKey(b, name, true)
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}
