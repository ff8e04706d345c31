package staff

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/render"
)

// EventCore makes, changes and deletes events; *hold.Events satisfies
// it.
type EventCore interface {
	Create(ctx context.Context, a hold.Actor, in hold.EventInput) (store.Event, error)
	Update(ctx context.Context, a hold.Actor, id uuid.UUID, in hold.EventInput) (store.Event, error)
	Delete(ctx context.Context, a hold.Actor, id uuid.UUID) error
}

// ChartReads reads the organization's charts; *store.Charts satisfies it.
type ChartReads interface {
	LatestVersion(ctx context.Context, org, chartID uuid.UUID) (store.ChartVersion, error)
	List(ctx context.Context, org uuid.UUID) ([]store.ChartVersion, error)
}

// Events is the organizer's event pages: the list with status, create
// (from a chart) and edit forms, publish and close. They call the same
// core methods as the JSON API.
type Events struct {
	*frame
	core   EventCore
	charts ChartReads
}

// FormTime is how datetime-local inputs send and show times.
const FormTime = "2006-01-02T15:04"

// List is the organizer's events list, drafts too.
func (p *Events) List(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	evs, err := p.visible.List(r.Context(), a)
	if err != nil {
		return err
	}
	p.render.Render(w, r, http.StatusOK, views.AdminEventsPage(p.render.Meta(r, "Manage events"), render.Events(evs)))
	return nil
}

// New asks for a chart, then shows the form for it.
func (p *Events) New(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f := views.EventForm{TimeZone: "UTC"}
	if id := r.URL.Query().Get("chart"); id != "" {
		chartID, err := uuid.Parse(id)
		if err != nil {
			return apperr.E(apperr.NotFound, "chart not found")
		}
		v, err := p.charts.LatestVersion(r.Context(), a.Org, chartID)
		if err != nil {
			return err
		}
		f.ChartID = chartID.String()
		for i, c := range v.Layout.Categories {
			f.Prices = append(f.Prices, views.PriceField{Key: c.Key, Name: c.Name, Cur: "EUR", Field: fmt.Sprintf("prices[%d]", i)})
		}
		f.Name = v.Name
	} else {
		cs, err := p.charts.List(r.Context(), a.Org)
		if err != nil {
			return err
		}
		for _, c := range cs {
			f.Charts = append(f.Charts, views.ChartChoice{ID: c.ChartID.String(), Name: c.Name, Version: c.Version, Seats: c.Seats})
		}
	}
	p.render.Render(w, r, http.StatusOK, views.EventFormPage(p.render.Meta(r, "New event"), f))
	return nil
}

// Edit is an event's form, filled in.
func (p *Events) Edit(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	e, err := p.visible.Event(r.Context(), a, id)
	if err != nil {
		return err
	}
	p.render.Render(w, r, http.StatusOK, views.EventFormPage(p.render.Meta(r, "Edit "+e.Name), eventFormOf(e)))
	return nil
}

func eventFormOf(e store.Event) views.EventForm {
	loc := render.VenueTime(e)
	show := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.In(loc).Format(FormTime)
	}
	f := views.EventForm{EventID: e.ID.String(), Status: string(e.Status), Name: e.Name, Venue: e.Venue, TimeZone: e.TimeZone,
		StartsAt: show(&e.StartsAt), OnSaleAt: show(e.OnSaleAt), SalesEndAt: show(e.SalesEndAt)}
	if e.HoldTTL > 0 {
		f.HoldTTL = strconv.Itoa(int(e.HoldTTL.Seconds()))
	}
	if e.MaxHoldsPerBuyer > 0 {
		f.MaxHolds = strconv.Itoa(e.MaxHoldsPerBuyer)
	}
	if e.HoldExtension > 0 {
		f.Extension = strconv.Itoa(int(e.HoldExtension.Seconds()))
	}
	f.RoomOn, f.RoomOpensAt, f.RoomRate = e.WaitingRoom.Enabled, show(e.WaitingRoom.OpensAt), "auto"
	if e.WaitingRoom.RatePerMinute > 0 {
		f.RoomRate = strconv.Itoa(e.WaitingRoom.RatePerMinute)
	}
	if e.BuyerCancelHours != nil {
		f.CancelHours = strconv.Itoa(*e.BuyerCancelHours)
	}
	for i, c := range e.Categories {
		f.Prices = append(f.Prices, views.PriceField{Key: c.Key, Name: c.Name, Minor: strconv.FormatInt(c.PriceMinor, 10),
			Cur: c.Currency, Field: fmt.Sprintf("prices[%d]", i)})
	}
	return f
}

// formInput turns the event form into the core's input. Times are read in
// the venue's time zone; what cannot be read is passed on as typed, so
// the core names the field.
func formInput(v url.Values, keys []string) (hold.EventInput, map[string]string) {
	bad := map[string]string{}
	str := func(name string) *string { x := strings.TrimSpace(v.Get(name)); return &x }
	in := hold.EventInput{Name: str("name"), Venue: str("venue"), TimeZone: str("time_zone")}
	loc, err := time.LoadLocation(*in.TimeZone)
	if err != nil || *in.TimeZone == "" {
		loc = time.UTC // the core reports the zone
	}
	at := func(name string) *string {
		x := strings.TrimSpace(v.Get(name))
		if x == "" {
			return nil
		}
		if t, err := time.ParseInLocation(FormTime, x, loc); err == nil {
			x = t.Format(time.RFC3339)
		}
		return &x
	}
	in.StartsAt, in.OnSaleAt, in.SalesEndAt = at("starts_at"), at("on_sale_at"), at("sales_end_at")
	if in.StartsAt == nil {
		in.StartsAt = new(string) // "" → "is required"
	}
	num := func(name string) *int {
		x := strings.TrimSpace(v.Get(name))
		n := 0
		if x != "" {
			var err error
			if n, err = strconv.Atoi(x); err != nil {
				bad[name] = "must be a whole number"
			}
		}
		return &n
	}
	in.HoldTTLSeconds, in.MaxHoldsPerBuyer, in.HoldExtensionSeconds = num("hold_ttl"), num("max_holds_per_buyer"), num("hold_extension")
	if v.Get("waiting_room_form") != "" {
		on := v.Get("waiting_room_enabled") != ""
		opens := at("waiting_room_opens_at")
		if opens == nil {
			opens = new(string) // "": no opening
		}
		rate := str("waiting_room_rate")
		if *rate == "" {
			*rate = "auto"
		}
		in.WaitingRoom = &hold.WaitingRoomInput{Enabled: &on, OpensAt: opens, RatePerMinute: rate}
	}
	if strings.TrimSpace(v.Get("buyer_cancel_hours")) == "" {
		off := -1 // empty: buyers cannot cancel
		in.BuyerCancelHours = &off
	} else {
		in.BuyerCancelHours = num("buyer_cancel_hours")
	}
	in.Prices = []store.Price{}
	for i, k := range keys {
		raw := strings.TrimSpace(v.Get("price_" + k))
		if raw == "" {
			continue // unpriced: the core says whether the chart needs it
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			bad[fmt.Sprintf("prices[%d].price_minor", i)] = "must be a whole number of minor units"
		}
		in.Prices = append(in.Prices, store.Price{Category: k, PriceMinor: n, Currency: strings.ToUpper(strings.TrimSpace(v.Get("currency_" + k)))})
	}
	return in, bad
}

// Create creates a draft from the form and opens its edit page.
func (p *Events) Create(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	chartID, err := uuid.Parse(v.Get("chart_id"))
	if err != nil {
		return apperr.E(apperr.NotFound, "chart not found")
	}
	cv, err := p.charts.LatestVersion(r.Context(), a.Org, chartID)
	if err != nil {
		return err
	}
	keys := make([]string, len(cv.Layout.Categories))
	for i, c := range cv.Layout.Categories {
		keys[i] = c.Key
	}
	in, bad := formInput(v, keys)
	id := chartID.String()
	in.ChartID = &id
	var e store.Event
	if len(bad) == 0 {
		e, err = p.core.Create(r.Context(), a, in)
	}
	if len(bad) > 0 || apperr.CodeOf(err) == apperr.Invalid {
		f := views.EventForm{ChartID: id, Name: v.Get("name"), Venue: v.Get("venue"), TimeZone: v.Get("time_zone"),
			StartsAt: v.Get("starts_at"), OnSaleAt: v.Get("on_sale_at"), SalesEndAt: v.Get("sales_end_at"),
			HoldTTL: v.Get("hold_ttl"), MaxHolds: v.Get("max_holds_per_buyer"), Extension: v.Get("hold_extension"),
			CancelHours: v.Get("buyer_cancel_hours")}
		for i, c := range cv.Layout.Categories {
			f.Prices = append(f.Prices, views.PriceField{Key: c.Key, Name: c.Name, Minor: v.Get("price_" + c.Key),
				Cur: v.Get("currency_" + c.Key), Field: fmt.Sprintf("prices[%d]", i)})
		}
		p.renderFormErrors(w, r, f, bad, err)
		return nil
	}
	if err != nil {
		return err
	}
	p.flash.Flash(r.Context(), "Draft created. Publish it when it is ready.")
	http.Redirect(w, r, "/admin/events/"+e.ID.String()+"/edit", http.StatusSeeOther) // #nosec G710 -- a UUID we made
	return nil
}

// renderFormErrors shows the form again with what is wrong (422).
func (p *Events) renderFormErrors(w http.ResponseWriter, r *http.Request, f views.EventForm, bad map[string]string, err error) {
	f.Errors = bad
	if e, ok := apperr.As(err); ok {
		for k, m := range e.Fields {
			f.Errors[k] = m
		}
	}
	// Prices are reported by their position among the sent prices; the
	// form shows every category, so name the category too.
	f.Message = "Some fields need attention."
	p.render.Render(w, r, http.StatusUnprocessableEntity, views.EventFormPage(p.render.Meta(r, "Event"), f))
}

// Update saves the edit form.
func (p *Events) Update(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	cur, err := p.visible.Event(r.Context(), a, id)
	if err != nil {
		return err
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	keys := make([]string, len(cur.Categories))
	for i, c := range cur.Categories {
		keys[i] = c.Key
	}
	in, bad := formInput(v, keys)
	if len(bad) == 0 {
		_, err = p.core.Update(r.Context(), a, id, in)
	}
	if len(bad) > 0 || apperr.CodeOf(err) == apperr.Invalid {
		f := eventFormOf(cur)
		f.Name, f.Venue, f.TimeZone = v.Get("name"), v.Get("venue"), v.Get("time_zone")
		f.StartsAt, f.OnSaleAt, f.SalesEndAt = v.Get("starts_at"), v.Get("on_sale_at"), v.Get("sales_end_at")
		f.HoldTTL, f.MaxHolds, f.Extension = v.Get("hold_ttl"), v.Get("max_holds_per_buyer"), v.Get("hold_extension")
		f.RoomOn, f.RoomOpensAt, f.RoomRate = v.Get("waiting_room_enabled") != "", v.Get("waiting_room_opens_at"), v.Get("waiting_room_rate")
		f.CancelHours = v.Get("buyer_cancel_hours")
		p.renderFormErrors(w, r, f, bad, err)
		return nil
	}
	if err != nil {
		return err
	}
	p.flash.Flash(r.Context(), "Saved.")
	http.Redirect(w, r, "/admin/events/"+id.String()+"/edit", http.StatusSeeOther) // #nosec G710 -- a parsed UUID
	return nil
}

// SetStatus publishes or closes an event from the list or the form.
func (p *Events) SetStatus(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	v, err := httpx.Form(w, r)
	if err != nil {
		return err
	}
	status := v.Get("status")
	if _, err := p.core.Update(r.Context(), a, id, hold.EventInput{Status: &status}); err != nil {
		if apperr.CodeOf(err) != apperr.Conflict && apperr.CodeOf(err) != apperr.Invalid {
			return err
		}
		p.flash.Flash(r.Context(), httpx.Message(err))
	} else {
		p.flash.Flash(r.Context(), "The event is now "+strings.ReplaceAll(status, "_", " ")+".")
	}
	http.Redirect(w, r, "/admin/events", http.StatusSeeOther)
	return nil
}

// Delete is Delete on the events list and a draft's form: a
// draft that was used, or an event that is not a draft, stays, and the
// list says why.
func (p *Events) Delete(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	id, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	return p.flashAndReturn(w, r, p.core.Delete(r.Context(), a, id), "Draft deleted.", "/admin/events")
}
