package httpx

import (
	"net/http"

	"seatd/internal/apperr"
)

// maxIdempotencyKey matches the bookings column's limit.
const maxIdempotencyKey = 200

// IdempotencyKey reads the Idempotency-Key header: 1 to 200 visible ASCII
// characters (it is stored and compared verbatim).
func IdempotencyKey(r *http.Request) (string, error) {
	key := r.Header.Get("Idempotency-Key")
	if !ValidKey(key) {
		return "", &apperr.Error{Code: apperr.Invalid,
			Message: "send an Idempotency-Key header of 1 to 200 visible ASCII characters",
			Fields:  map[string]string{"Idempotency-Key": "must be 1 to 200 visible ASCII characters"}}
	}
	return key, nil
}

// OptionalIdempotencyKey reads an Idempotency-Key header if the request
// has one ("" if not), as IdempotencyKey does.
func OptionalIdempotencyKey(r *http.Request) (string, error) {
	if _, ok := r.Header["Idempotency-Key"]; !ok {
		return "", nil
	}
	return IdempotencyKey(r)
}

// ValidKey says whether key is 1 to 200 visible ASCII characters.
func ValidKey(key string) bool {
	bad := len(key) == 0 || len(key) > maxIdempotencyKey
	for i := 0; i < len(key) && !bad; i++ {
		bad = key[i] < 0x21 || key[i] > 0x7e
	}
	return !bad
}

// ValidFormKey says whether a form's "key" field may name its request: the
// key the page's script gives a request whose seats the server picks (a
// data-keyed form: best seats, standing places; the box office's hold for
// a customer draws one with the page), the same for every submit of the
// request until one is answered, so a double click or a resubmit while the
// first is on its way holds once (hold.Holds' once, as the API's
// Idempotency-Key). No key (no script) is valid: the request is not keyed.
func ValidFormKey(key string) bool { return key == "" || ValidKey(key) }

// MalformedFormKey is the answer to a form whose key is not valid.
const MalformedFormKey = "The form sent a malformed request key; reload the page."
