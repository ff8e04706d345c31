package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"seatd/internal/apperr"
	"seatd/internal/pg"
)

// Codes the web layer adds to apperr's vocabulary: failures of HTTP framing
// that the domain never sees.
const (
	codeUnsupportedMediaType apperr.Code = "unsupported_media_type" // 415
	codeTooLarge             apperr.Code = "too_large"              // 413
	codeMethodNotAllowed     apperr.Code = "method_not_allowed"     // 405
)

// statusOf is the one table from error codes to HTTP statuses. A code not
// listed is a bug and answers 500.
func statusOf(code apperr.Code) int {
	switch code {
	case apperr.Invalid, apperr.IdempotencyMismatch:
		return http.StatusUnprocessableEntity
	case apperr.BadRequest:
		return http.StatusBadRequest
	case apperr.Unauthorized:
		return http.StatusUnauthorized
	case apperr.Forbidden:
		return http.StatusForbidden
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.SeatTaken, apperr.HoldLimit, apperr.SoldOut, apperr.HoldsExpired, apperr.Conflict, apperr.NotOnSale,
		apperr.OrphanSeat, apperr.NotEnoughSeats, apperr.AccessibleReserved:
		return http.StatusConflict
	case apperr.RateLimited:
		return http.StatusTooManyRequests
	case apperr.Unavailable:
		return http.StatusServiceUnavailable
	case apperr.PaymentDeclined:
		return http.StatusPaymentRequired
	case apperr.ProviderUnavailable:
		return http.StatusBadGateway
	case codeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case codeTooLarge:
		return http.StatusRequestEntityTooLarge
	case codeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

// errorBody is the JSON shape of every error answer.
type errorBody struct {
	Error   apperr.Code       `json:"error"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields"`
	Seats   []string          `json:"seats,omitempty"`
}

// internalMessage is all a caller learns about a failure that is ours.
const internalMessage = "something went wrong on our side; please try again"

// busy answers a statement that waited for a row lock longer than the
// pool's lock_timeout (55P03): another change to the same rows (a purchase,
// the reaper, a hold statement) is still being written. The statement and
// its transaction were rolled back, and every write of the API may be sent
// again (holds and releases are idempotent, a purchase or sale carries its
// Idempotency-Key), so the caller is told to retry, not that we failed.
var busy = apperr.E(apperr.Unavailable, "another change to the same seats is still being written; please try again in a moment")

// noteBusy logs a busy answer, which is not ours to fix but worth seeing
// when it grows, and tells the caller to retry in a second.
func (s *Server) noteBusy(w http.ResponseWriter, r *http.Request, err error) {
	s.log.WarnContext(r.Context(), "busy", "method", r.Method, "path", r.URL.Path, "err", err)
	w.Header().Set("Retry-After", "1")
}

// domainError is err as the domain error it is answered with: its own, or
// busy for a lock timeout; false for a failure of ours.
func domainError(err error) (*apperr.Error, bool) {
	if e, ok := apperr.As(err); ok {
		return e, true
	}
	if pg.IsLockNotAvailable(err) {
		return busy, true
	}
	return nil, false
}

// limitedError is a rate-limit refusal; it carries the Retry-After delay.
type limitedError struct {
	err        *apperr.Error
	retryAfter int // seconds
}

func (e *limitedError) Error() string { return e.err.Error() }
func (e *limitedError) Unwrap() error { return e.err }

// writeError answers err as JSON with the status of its code. Errors that
// are not domain errors are logged with their detail and shown as a generic
// message: users never see err.Error().
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := domainError(err)
	status := http.StatusInternalServerError
	if ok {
		status = statusOf(e.Code)
	}
	if e == busy {
		s.noteBusy(w, r, err)
	}
	if status == http.StatusInternalServerError {
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			// The client went away mid-request; nobody reads the answer.
			s.log.DebugContext(r.Context(), "request canceled", "method", r.Method, "path", r.URL.Path, "err", err)
		} else {
			s.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		e = &apperr.Error{Code: apperr.Internal, Message: internalMessage}
	}
	var le *limitedError
	if errors.As(err, &le) {
		w.Header().Set("Retry-After", strconv.Itoa(le.retryAfter))
	}
	if info := infoOf(r.Context()); info != nil {
		info.code = e.Code
	}
	body := errorBody{Error: e.Code, Message: e.Message, Fields: e.Fields, Seats: e.Seats}
	if body.Fields == nil {
		body.Fields = map[string]string{}
	}
	if body.Message == "" {
		body.Message = http.StatusText(status)
	}
	writeJSON(w, status, body)
}

// jsonHeaders are the fixed headers of every JSON answer (see setFixed);
// never modified.
var jsonHeaders = http.Header{"Content-Type": {"application/json; charset=utf-8"}, "Cache-Control": {"no-store"}}

// writeJSON answers v as JSON. It encodes before writing the header, so a
// value that cannot be encoded (a bug) still gets a clean 500.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"internal","message":"` + internalMessage + `","fields":{}}`)
	}
	setFixed(w.Header(), jsonHeaders)
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
