// Package ticket makes the codes that get ticket holders in, and draws
// them: a compact signed token per ticket that a scanner verifies with the
// event's public key alone, without the server (Sign, Parse, Verify, and
// Keys for the events' key pairs); its QR code (NewQR) and a booking's
// tickets as a PDF (PDF). See docs/architecture.md, "Ticket codes".
//
// QR codes are encoded by github.com/yeqown/go-qrcode/v2 rather than
// github.com/skip2/go-qrcode: yeqown's is maintained (v2.3.0, 2026) while
// skip2's last change was in 2020, and its core module exposes the module
// matrix with two small dependencies, from which this package draws the
// SVG for pages and the PNG for mail and PDFs itself (neither library
// writes SVG, and yeqown's own image writer would bring a 2D graphics
// library and fonts for nothing). PDFs are written with
// github.com/go-pdf/fpdf rather than github.com/johnfercher/maroto/v2: a
// ticket is a fixed layout placed on the page by coordinates, which fpdf
// does directly, whereas maroto is a grid layer for flowing reports built
// on an older fork of the same fpdf code, with pdfcpu and more besides.
package ticket

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/google/uuid"

	"seatd/internal/apperr"
)

// Claims is what a code says: this ticket, for this seat of this event of
// this organization. The organization is signed but not carried (the
// scanner knows it from the key it downloaded).
type Claims struct {
	Org, Event, Ticket, Seat uuid.UUID
}

// The token: a version byte, the event, ticket and seat ids (16 bytes
// each), then the Ed25519 signature (64 bytes) of the signed message;
// 113 bytes, 151 characters of unpadded base64url. The signed message is
// signedPrefix, the organization's id, then the token's first 49 bytes:
// fixed-length fields, so no two claims share a message, and a prefix no
// other use of the key would sign.
const (
	version1     = 1
	idLen        = 16
	payloadLen   = 1 + 3*idLen
	tokenLen     = payloadLen + ed25519.SignatureSize
	CodeLen      = (tokenLen*8 + 5) / 6 // CodeLen is the length of a code in characters.
	signedPrefix = "seatd-ticket"
)

// encoding is strict: a code has one spelling (no padding, no stray bits
// in the last character).
var encoding = base64.RawURLEncoding.Strict()

// Refusals. Each is also an apperr.Error for the answer's status:
// malformed and forged codes are Invalid (422), a code of another event
// (or organization) NotFound (404).
var (
	ErrMalformed  = errors.New("this is not a ticket code")
	ErrForged     = errors.New("this ticket code is forged: its signature does not verify")
	ErrOtherEvent = errors.New("this ticket is for another event")
)

// refusal is a refused code: errors.Is finds its sentinel, apperr.As its
// class and the sentence people see.
type refusal struct {
	sentinel error
	app      *apperr.Error
}

func (r *refusal) Error() string   { return r.sentinel.Error() }
func (r *refusal) Unwrap() []error { return []error{r.sentinel, r.app} }

func refuse(sentinel error, code apperr.Code) error {
	return &refusal{sentinel: sentinel, app: apperr.E(code, "%s", sentinel.Error())}
}

// message is what is signed for a code of org with this payload.
func message(org uuid.UUID, payload []byte) []byte {
	m := make([]byte, 0, len(signedPrefix)+idLen+payloadLen)
	m = append(m, signedPrefix...)
	m = append(m, org[:]...)
	return append(m, payload...)
}

func payload(c Claims) []byte {
	p := make([]byte, 0, payloadLen)
	p = append(p, version1)
	p = append(p, c.Event[:]...)
	p = append(p, c.Ticket[:]...)
	return append(p, c.Seat[:]...)
}

// Sign returns the code of c, signed with its event's private key. Ed25519
// is deterministic: the same claims and key give the same code, so codes
// need not be stored.
func Sign(key ed25519.PrivateKey, c Claims) string {
	p := payload(c)
	return encoding.EncodeToString(append(p, ed25519.Sign(key, message(c.Org, p))...))
}

// Parse reads a code without verifying it (Claims.Org is left zero):
// enough to tell which event it names. Surrounding white space is ignored
// (scanners that type a code often end it with a newline).
func Parse(code string) (Claims, error) {
	c, _, err := parse(code)
	return c, err
}

func parse(code string) (Claims, []byte, error) {
	code = strings.TrimSpace(code)
	if len(code) != CodeLen {
		return Claims{}, nil, refuse(ErrMalformed, apperr.Invalid)
	}
	b, err := encoding.DecodeString(code)
	if err != nil || len(b) != tokenLen || b[0] != version1 {
		return Claims{}, nil, refuse(ErrMalformed, apperr.Invalid)
	}
	var c Claims
	copy(c.Event[:], b[1:])
	copy(c.Ticket[:], b[1+idLen:])
	copy(c.Seat[:], b[1+2*idLen:])
	return c, b, nil
}

// Verify checks that code is a ticket of event (of org) signed with key,
// the event's public key, and returns its claims. A code naming another
// event is ErrOtherEvent whatever its signature (that event's key is not
// at hand, and the answer is the same either way: not here).
func Verify(key ed25519.PublicKey, org, event uuid.UUID, code string) (Claims, error) {
	c, b, err := parse(code)
	if err != nil {
		return Claims{}, err
	}
	if c.Event != event {
		return Claims{}, refuse(ErrOtherEvent, apperr.NotFound)
	}
	if len(key) != ed25519.PublicKeySize || !ed25519.Verify(key, message(org, b[:payloadLen]), b[payloadLen:]) {
		return Claims{}, refuse(ErrForged, apperr.Invalid)
	}
	c.Org = org
	return c, nil
}
