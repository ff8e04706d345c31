// Package httpx holds the HTTP helpers every part of the web layer
// shares: the one table from domain errors to HTTP statuses, JSON answers,
// request decoding and validation under the text policy, path ids, and the
// middleware every request passes through (observe, compression, security
// headers, hostile text, cross-origin protection, route info).
package httpx

import (
	"context"
	"errors"
	"log/slog"
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

// Status is the one table from error codes to HTTP statuses, for JSON
// answers and pages alike. A code not listed is a bug and answers 500.
func Status(code apperr.Code) int {
	switch code {
	case apperr.Invalid, apperr.IdempotencyMismatch:
		return http.StatusUnprocessableEntity
	case apperr.BadRequest:
		return http.StatusBadRequest
	case apperr.Unauthorized:
		return http.StatusUnauthorized
	case apperr.Forbidden, apperr.EmailUnverified, apperr.SignupClosed:
		return http.StatusForbidden
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.SeatTaken, apperr.HoldLimit, apperr.SoldOut, apperr.HoldsExpired, apperr.Conflict, apperr.NotOnSale,
		apperr.OrphanSeat, apperr.NotEnoughSeats, apperr.AccessibleReserved, apperr.PaymentRequired:
		return http.StatusConflict
	case apperr.RateLimited, apperr.InQueue:
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

// ErrorBody is the JSON shape of every error answer.
type ErrorBody struct {
	Error   apperr.Code       `json:"error"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields"`
	Seats   []string          `json:"seats,omitempty"`
}

// InternalMessage is all a caller learns about a failure that is ours.
const InternalMessage = "something went wrong on our side; please try again"

// busy answers a statement that waited for a row lock longer than the
// pool's lock_timeout (55P03): another change to the same rows (a purchase,
// the reaper, a hold statement) is still being written. The statement and
// its transaction were rolled back, and every write of the API may be sent
// again (holds and releases are idempotent, a purchase or sale carries its
// Idempotency-Key), so the caller is told to retry, not that we failed.
var busy = apperr.E(apperr.Unavailable, "another change to the same seats is still being written; please try again in a moment")

// DomainError is err as the domain error it is answered with: its own, or
// busy for a lock timeout; false for a failure of ours.
func DomainError(err error) (*apperr.Error, bool) {
	if e, ok := apperr.As(err); ok {
		return e, true
	}
	if pg.IsLockNotAvailable(err) {
		return busy, true
	}
	return nil, false
}

// Message is the sentence a person is shown for err: a domain error's
// message, InternalMessage for a failure of ours.
func Message(err error) string {
	if e, ok := DomainError(err); ok {
		return e.Message
	}
	return InternalMessage
}

// retryAfter is an error that says when to try again, in seconds: the
// rate limits' refusals (web/ratelimit) and a full gate's (internal/gate).
type retryAfter interface {
	error
	RetryAfter() int
}

// Errors answers errors, as JSON (Write) or through another renderer
// (Resolve, for pages). Users never see err.Error(): errors that are not
// domain errors are logged with their detail and shown as InternalMessage.
type Errors struct {
	log *slog.Logger
}

// NewErrors returns the error answerer that logs to log.
func NewErrors(log *slog.Logger) *Errors { return &Errors{log: log} }

// Resolve is what the caller is told of err: the status of its code
// (Status) and the error shown, InternalMessage for a failure of ours,
// which is logged. It sets Retry-After when err says when to try again (a
// busy answer: in a second) and notes the code for the request log.
func (x *Errors) Resolve(w http.ResponseWriter, r *http.Request, err error) (int, *apperr.Error) {
	e, ok := DomainError(err)
	status := http.StatusInternalServerError
	if ok {
		status = Status(e.Code)
	}
	if e == busy {
		// Not ours to fix, but worth seeing when it grows.
		x.log.WarnContext(r.Context(), "busy", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
	}
	if status == http.StatusInternalServerError {
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			// The client went away mid-request; nobody reads the answer.
			x.log.DebugContext(r.Context(), "request canceled", "method", r.Method, "path", r.URL.Path, "err", err)
		} else {
			x.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		e = &apperr.Error{Code: apperr.Internal, Message: InternalMessage}
	}
	var ra retryAfter
	if errors.As(err, &ra) {
		w.Header().Set("Retry-After", strconv.Itoa(ra.RetryAfter()))
	}
	if info := infoOf(r.Context()); info != nil {
		info.code = e.Code
	}
	return status, e
}

// Write answers err as JSON with the status of its code (see Resolve).
func (x *Errors) Write(w http.ResponseWriter, r *http.Request, err error) {
	status, e := x.Resolve(w, r, err)
	body := ErrorBody{Error: e.Code, Message: e.Message, Fields: e.Fields, Seats: e.Seats}
	if body.Fields == nil {
		body.Fields = map[string]string{}
	}
	if body.Message == "" {
		body.Message = http.StatusText(status)
	}
	WriteJSON(w, status, body)
}
