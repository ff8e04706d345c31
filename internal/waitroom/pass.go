package waitroom

// The admission a visitor carries to the map: signed, bound to one
// event and one session, valid a few minutes and renewed while used.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/google/uuid"
)

// Passes issues and checks admissions. A pass is checked with the server
// secret alone, no Redis: an admitted visitor keeps choosing seats while
// Redis is down, and a forged or borrowed pass is refused without it.
type Passes struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// NewPasses returns passes signed with secret (HMAC-SHA256), valid ttl
// after issue or renewal.
func NewPasses(secret string, ttl time.Duration) *Passes {
	// The key is derived for this one use, so the secret may be shared
	// with other signatures without a pass ever verifying as one of them.
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("seatd waiting room admission v1"))
	return &Passes{key: m.Sum(nil), ttl: ttl, now: time.Now}
}

// TTL is how long a pass is valid after issue or renewal.
func (p *Passes) TTL() time.Duration { return p.ttl }

// macLen is the signature's length in a pass: 128 bits.
const macLen = 16

func (p *Passes) mac(org, event uuid.UUID, session string, expires int64) []byte {
	m := hmac.New(sha256.New, p.key)
	m.Write(org[:])
	m.Write(event[:])
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(expires)) // #nosec G115 -- a Unix time, positive
	m.Write(b[:])
	m.Write([]byte(session))
	return m.Sum(nil)[:macLen]
}

// Issue returns a pass to event of org for session, and when it expires.
func (p *Passes) Issue(org, event uuid.UUID, session string) (string, time.Time) {
	exp := p.now().Add(p.ttl).Truncate(time.Second)
	var b [8 + macLen]byte
	binary.BigEndian.PutUint64(b[:8], uint64(exp.Unix())) // #nosec G115 -- a Unix time, positive
	copy(b[8:], p.mac(org, event, session, exp.Unix()))
	return base64.RawURLEncoding.EncodeToString(b[:]), exp
}

// Check says whether pass admits session to event of org now, and until
// when. A pass of another event, organization or session, altered, or
// expired is refused.
func (p *Passes) Check(pass string, org, event uuid.UUID, session string) (time.Time, bool) {
	b, err := base64.RawURLEncoding.DecodeString(pass)
	if err != nil || len(b) != 8+macLen || session == "" {
		return time.Time{}, false
	}
	exp := int64(binary.BigEndian.Uint64(b[:8])) // #nosec G115 -- checked by the signature
	if !hmac.Equal(b[8:], p.mac(org, event, session, exp)) {
		return time.Time{}, false
	}
	at := time.Unix(exp, 0)
	if !p.now().Before(at) {
		return time.Time{}, false
	}
	return at, true
}

// Stale says whether a pass expiring at exp should be renewed now: in
// the second half of its life, so an active visitor renews it about
// twice per ttl, not on every request.
func (p *Passes) Stale(exp time.Time) bool { return exp.Sub(p.now()) < p.ttl/2 }
