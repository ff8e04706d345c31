package hold

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// EventInput is an organizer's event as sent: every field optional, so
// one type serves creating (where the required ones are checked) and
// patching (where an absent field keeps its value). Times are RFC 3339.
type EventInput struct {
	Name             *string
	Venue            *string
	StartsAt         *string
	TimeZone         *string
	ChartID          *string
	OnSaleAt         *string
	SalesEndAt       *string
	Prices           []store.Price // nil: unchanged
	HoldTTLSeconds   *int
	MaxHoldsPerBuyer *int
	// HoldExtensionSeconds is how long a checkout extends a hold (0: the
	// deployment's default).
	HoldExtensionSeconds *int
	OrphanRule           *string
	AccessibleReleaseAt  *string
	Status               *string
}

// transitions are the lifecycle moves an organizer may make.
var transitions = map[[2]store.EventStatus]bool{
	{store.EventDraft, store.EventOnSale}:  true,
	{store.EventOnSale, store.EventClosed}: true,
	{store.EventDraft, store.EventClosed}:  true,
}

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

// maxHoldTTL bounds a per-event hold TTL: a hold is a few minutes in a
// cart, not a reservation (box office holds for customers are another
// feature).
const maxHoldTTL = 24 * time.Hour

// maxHoldExtension bounds a per-event checkout extension: time to pay.
const maxHoldExtension = time.Hour

// eventErrors collects every problem of an input at once, keyed by the
// JSON field names.
type eventErrors map[string]string

func (f eventErrors) err() error {
	if len(f) == 0 {
		return nil
	}
	return &apperr.Error{Code: apperr.Invalid, Message: "some fields are not valid", Fields: f}
}

func (f eventErrors) time(field string, v *string, into **time.Time) {
	if v == nil {
		return
	}
	if *v == "" {
		*into = nil
		return
	}
	t, err := time.Parse(time.RFC3339, *v)
	if err != nil {
		f[field] = "must be a time like 2026-05-01T19:30:00+02:00"
		return
	}
	t = t.UTC()
	*into = &t
}

// apply merges in into spec (and prices), recording problems in f.
func (f eventErrors) apply(in EventInput, spec *store.EventSpec) {
	if in.Name != nil {
		spec.Name = strings.TrimSpace(*in.Name)
	}
	if in.Venue != nil {
		spec.Venue = strings.TrimSpace(*in.Venue)
	}
	if in.TimeZone != nil {
		spec.TimeZone = *in.TimeZone
	}
	var starts *time.Time
	f.time("starts_at", in.StartsAt, &starts)
	if starts != nil {
		spec.StartsAt = *starts
	}
	f.time("on_sale_at", in.OnSaleAt, &spec.OnSaleAt)
	f.time("sales_end_at", in.SalesEndAt, &spec.SalesEndAt)
	f.time("accessible_release_at", in.AccessibleReleaseAt, &spec.AccessibleReleaseAt)
	if in.HoldTTLSeconds != nil {
		spec.HoldTTL = time.Duration(*in.HoldTTLSeconds) * time.Second
		if *in.HoldTTLSeconds < 0 || spec.HoldTTL > maxHoldTTL {
			f["hold_ttl"] = fmt.Sprintf("must be seconds between 1 and %d (0: the default)", int(maxHoldTTL.Seconds()))
		}
	}
	if in.HoldExtensionSeconds != nil {
		spec.HoldExtension = time.Duration(*in.HoldExtensionSeconds) * time.Second
		if *in.HoldExtensionSeconds < 0 || spec.HoldExtension > maxHoldExtension {
			f["hold_extension"] = fmt.Sprintf("must be seconds between 1 and %d (0: the default)", int(maxHoldExtension.Seconds()))
		}
	}
	if in.MaxHoldsPerBuyer != nil {
		spec.MaxHoldsPerBuyer = *in.MaxHoldsPerBuyer
		if *in.MaxHoldsPerBuyer < 0 || *in.MaxHoldsPerBuyer > 1000 {
			f["max_holds_per_buyer"] = "must be between 1 and 1000 (0: the default)"
		}
	}
	if in.OrphanRule != nil {
		spec.OrphanRule = *in.OrphanRule
	}
	if spec.OrphanRule == "" {
		spec.OrphanRule = "off"
	}
	switch {
	case spec.Name == "":
		f["name"] = "is required"
	case len(spec.Name) > 200:
		f["name"] = "must be at most 200 characters"
	}
	if len(spec.Venue) > 200 {
		f["venue"] = "must be at most 200 characters"
	}
	if spec.StartsAt.IsZero() && f["starts_at"] == "" {
		f["starts_at"] = "is required"
	}
	if _, err := time.LoadLocation(spec.TimeZone); err != nil || spec.TimeZone == "" || spec.TimeZone == "Local" {
		f["time_zone"] = "must be an IANA time zone such as Europe/Paris"
	}
	if spec.OrphanRule != "off" && spec.OrphanRule != "strict" {
		f["orphan_rule"] = `must be "off" or "strict"`
	}
	if spec.OnSaleAt != nil && spec.SalesEndAt != nil && !spec.SalesEndAt.After(*spec.OnSaleAt) {
		f["sales_end_at"] = "must be after on_sale_at"
	}
}

func (f eventErrors) prices(ps []store.Price) {
	seen := map[string]bool{}
	for i, p := range ps {
		at := fmt.Sprintf("prices[%d]", i)
		switch {
		case p.Category == "":
			f[at+".category"] = "is required"
		case seen[p.Category]:
			f[at+".category"] = "is priced twice"
		}
		seen[p.Category] = true
		if p.PriceMinor < 0 || p.PriceMinor > 1e12 {
			f[at+".price_minor"] = "must be between 0 and 10^12 minor units"
		}
		if !currencyRE.MatchString(p.Currency) {
			f[at+".currency"] = "must be an ISO 4217 code such as EUR"
		}
	}
}

// CreateEvent creates a draft event of the organizer's organization from
// the newest version of one of its charts. Every problem of the input is
// reported at once; nothing is written unless it is all valid.
func (s *Service) CreateEvent(ctx context.Context, a Actor, in EventInput) (store.Event, error) {
	if a.Role != RoleOrganizer {
		return store.Event{}, apperr.E(apperr.Forbidden, "only organizers can create events")
	}
	f := eventErrors{}
	if in.Status != nil {
		f["status"] = "a new event is a draft; publish it with PATCH"
	}
	var spec store.EventSpec
	f.apply(in, &spec)
	f.prices(in.Prices)
	if in.OnSaleAt == nil {
		f["on_sale_at"] = "is required"
	}
	if in.SalesEndAt == nil {
		f["sales_end_at"] = "is required"
	}
	var chartID uuid.UUID
	if in.ChartID == nil {
		f["chart_id"] = "is required"
	} else if id, err := uuid.Parse(*in.ChartID); err != nil {
		f["chart_id"] = "must be a UUID"
	} else {
		chartID = id
	}
	if chartID == uuid.Nil {
		return store.Event{}, f.err()
	}
	// The chart is read even when other fields are wrong, so its prices
	// are checked too and every problem is reported at once.
	v, err := s.store.LatestChartVersion(ctx, a.Org, chartID)
	if err != nil {
		if apperr.CodeOf(err) == apperr.NotFound && len(f) > 0 {
			f["chart_id"] = "is not a chart of this organization"
			return store.Event{}, f.err()
		}
		return store.Event{}, err // another org's chart is not found either
	}
	priced := map[string]bool{}
	for _, p := range in.Prices {
		priced[p.Category] = true
	}
	known := map[string]bool{}
	for _, c := range v.Layout.Categories {
		known[c.Key] = true
	}
	for i, p := range in.Prices {
		if !known[p.Category] {
			f[fmt.Sprintf("prices[%d].category", i)] = fmt.Sprintf("%q is not a category of the chart", p.Category)
		}
	}
	for key := range store.ChartCategoriesUsed(v.Layout) {
		if !priced[key] {
			f["prices"] = fmt.Sprintf("category %q is used by seats of the chart and needs a price", key)
		}
	}
	if err := f.err(); err != nil {
		return store.Event{}, err
	}
	return s.store.CreateEventFromChart(ctx, a.Org, a.User, v, spec, in.Prices)
}

// UpdateEvent changes an event of the organizer's organization: any field,
// and its status along the lifecycle (draft → on sale → closed, or draft
// → closed; anything else is a conflict). Every process's cached copy of
// the event's hold settings follows (see reloadSettings).
func (s *Service) UpdateEvent(ctx context.Context, a Actor, id uuid.UUID, in EventInput) (store.Event, error) {
	if a.Role != RoleOrganizer {
		return store.Event{}, apperr.E(apperr.Forbidden, "only organizers can change events")
	}
	e, err := s.store.UpdateEvent(ctx, a.Org, id, a.User, func(cur store.Event) (store.EventUpdate, error) {
		f := eventErrors{}
		if in.ChartID != nil {
			f["chart_id"] = "an event keeps the chart it was made from"
		}
		u := store.EventUpdate{Spec: cur.EventSpec, Prices: in.Prices, From: cur.Status, To: cur.Status}
		f.apply(in, &u.Spec)
		f.prices(in.Prices)
		if in.Status != nil {
			to := store.EventStatus(*in.Status)
			switch to {
			case store.EventDraft, store.EventOnSale, store.EventClosed:
			default:
				f["status"] = `must be "on_sale" or "closed"`
			}
			u.To = to
		}
		if err := f.err(); err != nil {
			return u, err
		}
		if u.To != u.From && !transitions[[2]store.EventStatus{u.From, u.To}] {
			return u, apperr.E(apperr.Conflict, "an event that is %s cannot become %s", u.From, u.To)
		}
		return u, nil
	})
	if err != nil {
		return store.Event{}, err
	}
	if ev := s.cached(a.Org, id); ev != nil {
		ev.setSettings(e)
	}
	s.publishSettings(ctx, a.Org, id)
	if e.Status == store.EventOnSale {
		// Loaded before its first buyer, here and, announced, on every
		// other process (RunWarmer); within their warm interval if the
		// announcement is lost, or on its first request.
		if err := s.bus.Publish(context.WithoutCancel(ctx), s.locks.Published(), []byte(a.Org.String()+":"+id.String())); err != nil {
			s.log.Warn("announce a published event", "org", a.Org, "event", id, "err", err)
		}
		s.background(func(ctx context.Context) {
			if err := s.Warm(ctx, a.Org, id); err != nil && ctx.Err() == nil {
				s.log.Warn("warm a published event", "org", a.Org, "event", id, "err", err)
				s.m.BackgroundErrors.WithLabelValues("warm").Inc()
			}
		})
	}
	return e, nil
}

// DeleteEvent deletes a draft of the organizer's organization that nobody
// acted on (store.DeleteEvent says what that means; anything else is a
// conflict). This process forgets the event at once; the others when the
// message arrives, or at their follower's next round, whose settings read
// no longer finds it.
func (s *Service) DeleteEvent(ctx context.Context, a Actor, id uuid.UUID) error {
	if a.Role != RoleOrganizer {
		return apperr.E(apperr.Forbidden, "only organizers can delete events")
	}
	if err := s.store.DeleteEvent(ctx, a.Org, id, a.User); err != nil {
		return err
	}
	if ev := s.cached(a.Org, id); ev != nil {
		s.evict(ev)
	}
	s.publishSettings(ctx, a.Org, id)
	// Its Redis keys (the sync mark and fence a load wrote) go too. A
	// process syncing the event at this very moment may write them again;
	// they are a few small keys, and nothing reads them.
	if _, err := call(s.redis, func() (struct{}, error) { return struct{}{}, s.locks.Forget(ctx, a.Org, id) }); err != nil {
		s.log.Warn("forget a deleted event's redis keys", "org", a.Org, "event", id, "err", err)
	}
	return nil
}

// publishSettings tells the other processes to reload an event's
// settings at once (their follower reads them every round anyway, so a
// lost message only delays it).
func (s *Service) publishSettings(ctx context.Context, org, id uuid.UUID) {
	if b, err := encodeMessage(message{Settings: true}); err == nil {
		if err := s.bus.Publish(context.WithoutCancel(ctx), s.locks.Keys(org, id).Live(), b); err != nil {
			s.log.Warn("publish event settings", "org", org, "event", id, "err", err)
		}
	}
}

// Prices returns an event's categories by key from the hot cache (the
// tenancy gate applies).
func (s *Service) Prices(ctx context.Context, a Actor, event uuid.UUID) (map[string]store.Category, error) {
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	cats := ev.settings.Load().Categories
	out := make(map[string]store.Category, len(cats))
	for _, c := range cats {
		out[c.Key] = c
	}
	return out, nil
}

// Settings returns the event as the hot cache has it: status, sales
// window, hold settings and prices (the tenancy gate applies).
func (s *Service) Settings(ctx context.Context, a Actor, event uuid.UUID) (store.Event, error) {
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return store.Event{}, err
	}
	return *ev.settings.Load(), nil
}

// NotOnSale explains why an event does not take a buyer's holds at now,
// or is nil when it does.
func NotOnSale(e store.Event, now time.Time) error {
	if OpenTo(&e, false, now) {
		return nil
	}
	return notOnSale(&e, now)
}

// notOnSale is the refusal of a hold on an event that does not take it.
func notOnSale(e *store.Event, now time.Time) error {
	err := &apperr.Error{Code: apperr.NotOnSale}
	loc, lerr := time.LoadLocation(e.TimeZone)
	if lerr != nil {
		loc = time.UTC
	}
	switch {
	case e.Status == store.EventClosed:
		err.Message = "sales for this event are closed"
	case e.Status == store.EventDraft:
		err.Message = "this event is not on sale yet"
	case e.OnSaleAt != nil && now.Before(*e.OnSaleAt):
		err.Message = "sales open " + e.OnSaleAt.In(loc).Format("Mon 2 Jan 2006 15:04 MST")
	default:
		err.Message = "sales for this event have ended"
	}
	return err
}

// OpenTo mirrors the SQL event_open: whether e takes holds of a staff
// member or a buyer at now.
func OpenTo(e *store.Event, staff bool, now time.Time) bool {
	if staff {
		return e.Status != store.EventClosed
	}
	return e.Status == store.EventOnSale && (e.OnSaleAt == nil || !now.Before(*e.OnSaleAt)) &&
		(e.SalesEndAt == nil || now.Before(*e.SalesEndAt))
}
