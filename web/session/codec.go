package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// jsonCodec encodes sessions as JSON. Unlike gob it is deterministic, which
// lets sessionStore see that a commit changed nothing but the expiry; the
// price is that values must be strings (numbers would come back float64).
// Postgres reads the owner from it too (migration 004's trigger).
//
// Every request decodes its session, so Decode reads the codec's own
// output directly (parseSession) and leaves encoding/json to anything
// else. It keeps nothing between requests: a cache of decoded sessions
// would cost about a kilobyte a session, which at 100 000 visitors
// polling a waiting room is most of their memory (docs/waiting-room.md).
type jsonCodec struct{}

func newJSONCodec() *jsonCodec { return &jsonCodec{} }

type sessionJSON struct {
	Deadline time.Time         `json:"deadline"`
	Values   map[string]string `json:"values"`
}

func (*jsonCodec) Encode(deadline time.Time, values map[string]any) ([]byte, error) {
	out := sessionJSON{Deadline: deadline.UTC(), Values: make(map[string]string, len(values))}
	for k, v := range values {
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("session value %q is a %T; only strings are stored", k, v)
		}
		out.Values[k] = str
	}
	return json.Marshal(out)
}

func (*jsonCodec) Decode(b []byte) (time.Time, map[string]any, error) {
	if deadline, values, ok := parseSession(b); ok {
		return deadline, values, nil
	}
	var in sessionJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return time.Time{}, nil, err
	}
	values := make(map[string]any, len(in.Values))
	for k, v := range in.Values {
		values[k] = v
	}
	return in.Deadline, values, nil
}

// parseSession reads what Encode writes when no string needs an escape:
// {"deadline":"<RFC 3339>","values":{"k":"v",...}}. Anything else (an
// escape, other spacing) is not ok and goes to encoding/json. It costs
// one string for all keys and values, which share it.
func parseSession(b []byte) (time.Time, map[string]any, bool) {
	const head, mid = `{"deadline":"`, `","values":{`
	if !bytes.HasPrefix(b, []byte(head)) || !bytes.HasSuffix(b, []byte("}}")) || bytes.IndexByte(b, '\\') >= 0 {
		return time.Time{}, nil, false
	}
	rest := b[len(head):]
	i := bytes.IndexByte(rest, '"')
	if i < 0 || !bytes.HasPrefix(rest[i:], []byte(mid)) {
		return time.Time{}, nil, false
	}
	deadline, err := time.Parse(time.RFC3339Nano, string(rest[:i]))
	if err != nil {
		return time.Time{}, nil, false
	}
	pairs := rest[i+len(mid) : len(rest)-2]
	if !utf8.Valid(pairs) { // encoding/json would replace the bad bytes
		return time.Time{}, nil, false
	}
	s := string(pairs)
	values := make(map[string]any, bytes.Count(b, []byte(`":"`)))
	for s != "" {
		k, v, tail, ok := parsePair(s)
		if !ok {
			return time.Time{}, nil, false
		}
		values[k] = v
		s = tail
		if s != "" {
			if s[0] != ',' {
				return time.Time{}, nil, false
			}
			s = s[1:]
			if s == "" {
				return time.Time{}, nil, false
			}
		}
	}
	return deadline, values, true
}

// parsePair reads `"k":"v"` (no escapes) from the start of s.
func parsePair(s string) (k, v, tail string, ok bool) {
	k, s, ok = parseString(s)
	if !ok || s == "" || s[0] != ':' {
		return "", "", "", false
	}
	v, s, ok = parseString(s[1:])
	return k, v, s, ok
}

// parseString reads a JSON string without escapes from the start of s.
func parseString(s string) (str, tail string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[1:i], s[i+1:], true
		case c < 0x20:
			return "", "", false
		}
	}
	return "", "", false
}
