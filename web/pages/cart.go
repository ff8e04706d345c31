package pages

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/money"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/render"
)

// HoldCore is what the cart asks of the hold core; *hold.Holds satisfies
// it.
type HoldCore interface {
	Hold(ctx context.Context, a hold.Actor, r hold.Request) (hold.Result, error)
	Mine(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Hold, error)
	EventHolds(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Hold, error)
	Extension(ctx context.Context, a hold.Actor, event uuid.UUID) (time.Duration, error)
	Release(ctx context.Context, a hold.Actor, holdID uuid.UUID, reason string) (store.Hold, error)
	Checkout(ctx context.Context, a hold.Actor, event uuid.UUID) ([]store.Hold, error)
	Purchase(ctx context.Context, a hold.Actor, event uuid.UUID, key string, holdIDs []uuid.UUID) (store.Booking, error)
}

// HoldLimit counts a user's hold requests; *ratelimit.Limiter satisfies
// it.
type HoldLimit interface {
	Hold(ctx context.Context, org, user uuid.UUID) error
}

// HoldGate refuses holds by buyers whose email is not verified;
// *session.Sessions satisfies it.
type HoldGate interface {
	MayHold(ctx context.Context, a hold.Actor) error
}

// Flash keeps a message for the next page; *session.Sessions satisfies
// it.
type Flash interface {
	Flash(ctx context.Context, msg string)
}

// Cart is the buyer's holds beside the seat map, and every control that
// changes them: a seat click, releasing a hold, best seats, standing
// places, checkout and payment.
type Cart struct {
	render   Renderer
	holds    HoldCore
	seats    Seats
	limits   HoldLimit
	gate     HoldGate
	flash    Flash
	maxSeats int
	// maxExtensions is how often a checkout may extend a hold
	// (SEATD_MAX_EXTENSIONS): with none, every hold is ready to pay.
	maxExtensions int
	// payment takes the buyer to paying when their seats cost something
	// and buyers pay (SEATD_PAYMENTS=required).
	payment *Payment
}

// View lists the actor's active holds for the event: the cart panel.
func (p *Cart) View(ctx context.Context, a hold.Actor, event uuid.UUID) (views.Cart, error) {
	c := views.Cart{EventID: event.String()}
	if a.Role != hold.RoleBuyer {
		return c, nil
	}
	hs, err := p.holds.Mine(ctx, a, event)
	if err != nil {
		return c, err
	}
	prices, err := p.seats.Prices(ctx, a, event)
	if err != nil {
		return c, err
	}
	ext, err := p.holds.Extension(ctx, a, event)
	if err != nil {
		return c, err
	}
	c.Extension = moreTime(ext)
	var total render.Sum
	checkedOut := len(hs) > 0
	for _, h := range hs {
		item, cat := p.cartHold(a, event, h, prices)
		c.Holds = append(c.Holds, item)
		if item.Paying != "" {
			c.Paying = item.Paying
		}
		if p, ok := prices[cat]; ok {
			total.Add(p.PriceMinor, p.Currency)
		}
		checkedOut = checkedOut && (h.Extensions > 0 || p.maxExtensions == 0)
	}
	c.Total = total.String()
	if checkedOut && c.Paying == "" {
		c.PayKey = payKey(a.User, hs)
	}
	return c, nil
}

// payKey is the idempotency key of paying for exactly these holds. The
// cart's state lives in the holds themselves (checked out = extended),
// not in the answer that showed it, so every rendering of the same
// checked-out holds — the checkout's answer, a re-fetch after a live
// frame or a reconnect, in whatever order they finish — shows the same
// Pay form with the same key, and a double submit still buys once; other
// holds make another key.
func payKey(user uuid.UUID, hs []store.Hold) string {
	ids := make([]string, len(hs))
	for i, h := range hs {
		ids[i] = h.ID.String()
	}
	slices.Sort(ids)
	return uuid.NewSHA1(user, []byte(strings.Join(ids, ","))).String()
}

func (p *Cart) cartHold(a hold.Actor, event uuid.UUID, h store.Hold, prices map[string]store.Category) (views.CartHold, string) {
	label, cat := h.SeatID.String(), ""
	if st, ok := p.seats.SeatLayout(a.Org, event, h.SeatID); ok {
		label, cat = st.CartLabel(), st.Category
	}
	item := views.CartHold{HoldID: h.ID.String(), SeatID: h.SeatID.String(), Label: label, HeldUntil: h.HeldUntil, Extended: h.Extensions > 0,
		Offer: h.Source == store.SourceWaitlist}
	if h.PaymentID != uuid.Nil {
		item.Paying = h.PaymentID.String()
	}
	priced(&item, prices, cat)
	return item, cat
}

// moreTime says how much longer a checkout lets a buyer pay: "5 more
// minutes", "90 more seconds".
func moreTime(d time.Duration) string {
	n, unit := int(d/time.Second), "second"
	if n%60 == 0 {
		n, unit = n/60, "minute"
	}
	if n != 1 {
		unit += "s"
	}
	return strconv.Itoa(n) + " more " + unit
}

// priced gives a cart line category cat's price, as shown and in minor
// units for the page's live total; none for a seat without a priced
// category.
func priced(item *views.CartHold, prices map[string]store.Category, cat string) {
	if p, ok := prices[cat]; ok && cat != "" && p.Currency != "" {
		item.Price = money.Format(p.PriceMinor, p.Currency)
		item.PriceMinor, item.Currency, item.Scale = p.PriceMinor, p.Currency, money.Scale(p.Currency)
	}
}

// Fragment is the cart panel alone.
func (p *Cart) Fragment(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	c, err := p.View(r.Context(), a, event)
	if err != nil {
		return err
	}
	p.render.Render(w, r, http.StatusOK, views.CartPanel(c))
	return nil
}

// answer re-renders the cart with a message, plus the given seats as
// out-of-band swaps so the clicked seat shows its true state at once.
func (p *Cart) answer(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, msg, kind string, seats ...uuid.UUID) error {
	c, err := p.View(r.Context(), a, event)
	if err != nil {
		return err
	}
	c.Message, c.Kind = msg, kind
	comps := []templ.Component{views.CartPanel(c)}
	for _, id := range seats {
		if st, ok := p.seats.SeatLayout(a.Org, event, id); ok {
			comps = append(comps, views.SeatButton(seatVM(event, st, a.User), true))
		}
	}
	p.render.Render(w, r, http.StatusOK, templ.Join(comps...))
	return nil
}

// Toggle holds a free seat for the buyer, or releases it if it is
// already theirs. Refusals are shown in the cart, not as HTTP errors, so
// the page can say what happened.
func (p *Cart) Toggle(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ids, err := httpx.PathIDs(r, "event", "seat")
	if err != nil {
		return err
	}
	event, seat := ids[0], ids[1]
	if a.Role != hold.RoleBuyer {
		return p.answer(w, r, a, event, "Staff accounts cannot hold seats here; use the box office.", "info", seat)
	}
	st, ok := p.seats.SeatLayout(a.Org, event, seat)
	if ok && st.Status == store.Held && st.HolderID == a.User {
		if _, err := p.holds.Release(r.Context(), a, st.HoldID, ""); err != nil && apperr.CodeOf(err) == apperr.Internal {
			return err
		}
		return p.answer(w, r, a, event, "Seat "+st.Label()+" released.", "info", seat)
	}
	if refused, err := p.unverified(w, r, a, event, seat); refused || err != nil {
		return err
	}
	if err := p.limits.Hold(r.Context(), a.Org, a.User); err != nil {
		return p.answer(w, r, a, event, "You are clicking very fast; wait a moment and try again.", "error", seat)
	}
	accessible, companion := choiceOf(r)
	_, err = p.holds.Hold(r.Context(), a, hold.Request{Event: event, Seats: []uuid.UUID{seat}, Accessible: accessible,
		WithCompanion: companion, Source: hold.SourceWeb})
	if err != nil {
		e, ok := httpx.DomainError(err)
		if !ok || e.Code == apperr.Internal || e.Code == apperr.NotFound {
			return err
		}
		msg := e.Message
		if e.Code == apperr.SeatTaken {
			msg = "Seat " + p.seats.SeatLabel(r.Context(), a, event, seat) + " was just taken by someone else."
		}
		return p.answer(w, r, a, event, msg, "error", seat)
	}
	return p.answer(w, r, a, event, "", "", seat)
}

// Release ends one of the buyer's holds from the cart. The hold must be
// an active hold of the path's event (404 otherwise: the path names the
// event, the hold must be of it). Staff releasing here give a reason
// (the reason parameter), as at the box office: it goes to the audit
// log.
func (p *Cart) Release(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ids, err := httpx.PathIDs(r, "event", "hold")
	if err != nil {
		return err
	}
	event, holdID := ids[0], ids[1]
	reason := ""
	if a.Staff() {
		if reason = strings.TrimSpace(r.FormValue("reason")); reason == "" {
			return &apperr.Error{Code: apperr.Invalid, Message: "give a reason for releasing; it is kept in the audit log",
				Fields: map[string]string{"reason": "is required"}}
		}
	}
	active := p.holds.Mine
	if a.Staff() {
		active = p.holds.EventHolds
	}
	hs, err := active(r.Context(), a, event)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(hs, func(h store.Hold) bool { return h.ID == holdID }) {
		return apperr.E(apperr.NotFound, "no such hold in this event")
	}
	h, err := p.holds.Release(r.Context(), a, holdID, reason)
	if err != nil {
		if apperr.CodeOf(err) == apperr.Internal {
			return err
		}
		return p.answer(w, r, a, event, "That hold had already ended.", "info")
	}
	return p.answer(w, r, a, event, "", "", h.SeatID)
}

// Checkout extends the buyer's holds once and shows the Pay button;
// the idempotency key of this checkout travels in the form, so a double
// submit of Pay buys once.
func (p *Cart) Checkout(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	if a.Role != hold.RoleBuyer {
		return apperr.E(apperr.Forbidden, "only buyers check out")
	}
	hs, err := p.holds.Checkout(r.Context(), a, event)
	if err != nil {
		return err
	}
	if len(hs) == 0 {
		return p.answer(w, r, a, event, "Your holds expired; pick your seats again.", "error")
	}
	until := hs[0].HeldUntil
	for _, h := range hs {
		if h.HeldUntil.Before(until) {
			until = h.HeldUntil
		}
	}
	msg := "Your seats are held until " + until.UTC().Format("15:04:05 MST") + ". Pay to confirm them."
	return p.answer(w, r, a, event, msg, "success")
}

// Pay buys the listed holds (a plain form post) and shows the booking; when
// they are to be paid for online (payment_required), it starts the
// payment under the checkout's key and shows the page that pays it.
func (p *Cart) Pay(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	if a.Role != hold.RoleBuyer {
		return apperr.E(apperr.Forbidden, "only buyers can pay")
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	ids, err := httpx.BodyIDs("hold_id", v["hold_id"])
	if err != nil {
		return err
	}
	b, err := p.holds.Purchase(r.Context(), a, event, v.Get("key"), ids)
	if apperr.CodeOf(err) == apperr.PaymentRequired {
		err = p.payment.pay(w, r, a, event, v.Get("key"))
		if err == nil {
			return nil
		}
	}
	if err != nil {
		e, ok := httpx.DomainError(err)
		if !ok || e.Code == apperr.Internal {
			return err
		}
		msg := e.Message
		if e.Code == apperr.HoldsExpired {
			msg = "Your holds expired before payment; pick your seats again."
		}
		p.flash.Flash(r.Context(), msg)
		http.Redirect(w, r, "/e/"+event.String(), http.StatusSeeOther) // #nosec G710 -- a parsed UUID on our own path
		return nil
	}
	http.Redirect(w, r, "/bookings/"+b.ID.String(), http.StatusSeeOther)
	return nil
}

// unverified answers the cart with a reminder, and reports true, when the
// buyer's email is not verified yet: they may browse, not hold.
func (p *Cart) unverified(w http.ResponseWriter, r *http.Request, a hold.Actor, event uuid.UUID, seats ...uuid.UUID) (bool, error) {
	err := p.gate.MayHold(r.Context(), a)
	if apperr.CodeOf(err) == apperr.EmailUnverified {
		return true, p.answer(w, r, a, event, "Confirm your email first: follow the link we mailed you (or have it sent again from Your devices).", "error", seats...)
	}
	return false, err
}
