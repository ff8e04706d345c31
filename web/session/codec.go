package session

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// jsonCodec encodes sessions as JSON. Unlike gob it is deterministic, which
// lets sessionStore see that a commit changed nothing but the expiry; the
// price is that values must be strings (numbers would come back float64).
//
// Every request decodes its session, and a session's bytes change about
// once a minute (its stored expiry): decoded sessions are kept by their
// bytes, so a request copies six strings instead of parsing JSON (~6 % of
// a hold's CPU).
type jsonCodec struct {
	mu      sync.Mutex
	decoded map[string]sessionJSON
}

// decodedMax bounds the decoded sessions kept; past it they are dropped
// all at once (a drop costs one parse per session).
const decodedMax = 10_000

func newJSONCodec() *jsonCodec { return &jsonCodec{decoded: map[string]sessionJSON{}} }

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

func (c *jsonCodec) Decode(b []byte) (time.Time, map[string]any, error) {
	c.mu.Lock()
	in, ok := c.decoded[string(b)]
	c.mu.Unlock()
	if !ok {
		if err := json.Unmarshal(b, &in); err != nil {
			return time.Time{}, nil, err
		}
		c.mu.Lock()
		if len(c.decoded) >= decodedMax {
			clear(c.decoded)
		}
		c.decoded[string(b)] = in
		c.mu.Unlock()
	}
	// A fresh map every time: scs changes the one it is given.
	values := make(map[string]any, len(in.Values))
	for k, v := range in.Values {
		values[k] = v
	}
	return in.Deadline, values, nil
}
