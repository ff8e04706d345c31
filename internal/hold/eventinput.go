package hold

// An organizer's event as sent, and its validation: every problem of an
// input at once, keyed by the JSON field names.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

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
	// BuyerCancelHours lets buyers cancel their own paid bookings until
	// that many hours before the start; -1 turns it off (nil: unchanged).
	BuyerCancelHours *int
	Status           *string
	// WaitingRoom changes the waiting room (nil: unchanged).
	WaitingRoom *WaitingRoomInput
}

// WaitingRoomInput is a change to an event's waiting room; absent fields
// keep their values.
type WaitingRoomInput struct {
	Enabled *bool
	OpensAt *string
	// RatePerMinute is "auto" or a whole number of visitors a minute, as
	// sent.
	RatePerMinute *string
}

// maxRatePerMinute bounds a waiting room's rate: past it a room lets
// everyone through and is better turned off.
const maxRatePerMinute = 100000

// transitions are the lifecycle moves an organizer may make.
var transitions = map[[2]store.EventStatus]bool{
	{store.EventDraft, store.EventOnSale}:  true,
	{store.EventOnSale, store.EventClosed}: true,
	{store.EventDraft, store.EventClosed}:  true,
}

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

// maxBuyerCancelHours caps EventInput.BuyerCancelHours: a year (and a day).
const maxBuyerCancelHours = 8784

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
	if h := in.BuyerCancelHours; h != nil {
		switch {
		case *h == -1:
			spec.BuyerCancelHours = nil
		case *h < 0 || *h > maxBuyerCancelHours:
			f["buyer_cancel_hours"] = fmt.Sprintf("must be hours between 0 and %d, or -1 (buyers cannot cancel)", maxBuyerCancelHours)
		default:
			v := *h
			spec.BuyerCancelHours = &v
		}
	}
	if in.WaitingRoom != nil {
		f.waitingRoom(*in.WaitingRoom, &spec.WaitingRoom)
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

// waitingRoom merges in into room (docs/waiting-room.md), keyed
// waiting_room.<field>.
func (f eventErrors) waitingRoom(in WaitingRoomInput, room *store.WaitingRoom) {
	if in.Enabled != nil {
		room.Enabled = *in.Enabled
	}
	f.time("waiting_room.opens_at", in.OpensAt, &room.OpensAt)
	if in.RatePerMinute != nil {
		v := strings.TrimSpace(*in.RatePerMinute)
		n, err := strconv.Atoi(v)
		switch {
		case v == "auto":
			room.RatePerMinute = 0
		case err != nil || n < 1 || n > maxRatePerMinute:
			f["waiting_room.rate_per_minute"] = fmt.Sprintf(`must be "auto" or visitors a minute between 1 and %d`, maxRatePerMinute)
		default:
			room.RatePerMinute = n
		}
	}
	if room.Enabled && room.OpensAt == nil && f["waiting_room.opens_at"] == "" {
		f["waiting_room.opens_at"] = "is required to turn the waiting room on"
	}
}
