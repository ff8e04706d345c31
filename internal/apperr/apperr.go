// Package apperr is seatd's one error vocabulary. Domain code returns an
// *Error (or wraps one with %w); the web layer maps its Code to a status in
// one place. Anything else is an internal error: logged, never shown.
package apperr

import (
	"errors"
	"fmt"
)

// Code names a class of failure a caller can act on.
type Code string

// The codes. Their strings are part of the JSON API.
const (
	Invalid             Code = "invalid"              // input failed validation (422)
	BadRequest          Code = "bad_request"          // input could not be decoded (400)
	Unauthorized        Code = "unauthorized"         // no or bad credentials (401)
	Forbidden           Code = "forbidden"            // authenticated but not allowed (403)
	EmailUnverified     Code = "email_unverified"     // the buyer has not confirmed their email yet (403)
	SignupClosed        Code = "signup_closed"        // the organization takes no public sign-ups (403)
	NotFound            Code = "not_found"            // absent, or of another organization (404)
	SeatTaken           Code = "seat_taken"           // someone else holds, bought or blocked it (409)
	HoldLimit           Code = "hold_limit"           // buyer reached the active-hold cap (409)
	SoldOut             Code = "sold_out"             // a GA section has fewer places left than asked (409)
	HoldsExpired        Code = "holds_expired"        // purchase of holds that are no longer active (409)
	Conflict            Code = "conflict"             // state does not allow the change (409)
	NotOnSale           Code = "not_on_sale"          // the event does not take this hold now (409)
	OrphanSeat          Code = "orphan_seat"          // the hold would leave one seat alone in its row (409)
	NotEnoughSeats      Code = "not_enough_seats"     // best available found too few seats (409)
	AccessibleReserved  Code = "accessible_reserved"  // accessible seat held back for those who ask (409)
	IdempotencyMismatch Code = "idempotency_mismatch" // key reused with another payload (422)
	RateLimited         Code = "rate_limited"         // too many requests (429)
	InQueue             Code = "in_queue"             // the event's waiting room is on and the caller is not admitted (429)
	Unavailable         Code = "unavailable"          // a dependency is down (503)
	PaymentDeclined     Code = "payment_declined"     // the buyer's card or bank refused the payment (402)
	PaymentRequired     Code = "payment_required"     // a buyer's seats are bought through a payment, not a direct purchase (409)
	ProviderUnavailable Code = "provider_unavailable" // the payment provider is down, slow or refused our credentials (502)
	Internal            Code = "internal"             // a bug or an unexpected failure (500)
)

// Error is a domain error with a human sentence and optional details.
type Error struct {
	Code    Code
	Message string
	// Fields maps an input field to what is wrong with it.
	Fields map[string]string
	// Seats lists seat ids involved (the ones taken, for SeatTaken).
	Seats []string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Is makes errors.Is(err, apperr.E(code, "")) match on the code alone, so
// callers can test for a class without comparing messages.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code
}

// E builds an Error with a formatted message.
func E(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Sentinels for errors.Is.
var (
	ErrNotFound     = &Error{Code: NotFound}
	ErrSeatTaken    = &Error{Code: SeatTaken}
	ErrHoldLimit    = &Error{Code: HoldLimit}
	ErrHoldsExpired = &Error{Code: HoldsExpired}
	ErrForbidden    = &Error{Code: Forbidden}
	ErrConflict     = &Error{Code: Conflict}
	ErrInvalid      = &Error{Code: Invalid}
)

// CodeOf returns the code of the first *Error in err's chain, or Internal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// As returns the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
