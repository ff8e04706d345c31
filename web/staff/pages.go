package staff

import (
	"context"
	"log/slog"

	"github.com/a-h/templ"
	"github.com/google/uuid"

	"seatd/internal/auth"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/webhook"
	"seatd/web/api"
	"seatd/web/httpx"
	"seatd/web/live"
	"seatd/web/query"
	"seatd/web/render"
	"seatd/web/session"
)

// Deps are the parts the staff pages are built from.
type Deps struct {
	Cfg      config.Config
	Log      *slog.Logger
	Render   *render.Pages
	Decoder  *httpx.Decoder
	Sessions *session.Sessions

	// The hold core: the engine's mode, and its jobs.
	Engine    *hold.Engine
	Holds     *hold.Holds
	BoxOffice *hold.BoxOffice
	Events    *hold.Events
	Waitlist  *hold.Waitlist
	Monitor   *hold.Monitor
	Payments  *hold.Payments

	Keys      *auth.APIKeys
	Endpoints *webhook.Endpoints
	// Door answers the attendee list and the figures at the door.
	Door AttendeeList
	// Policy sets the organization's sign-up policy.
	Policy PolicySetter
	// Invites sends, lists and revokes invitations; Limits bounds the
	// mails per address.
	Invites api.Inviter
	Limits  api.LoginLimit

	// The stores read beside the core.
	Accounts      *store.Accounts
	Audit         *store.Audit
	Charts        *store.Charts
	EventStore    *store.Events
	HoldStore     *store.Holds
	BookingStore  *store.Bookings
	Webhooks      *store.Webhooks
	WaitlistStore *store.Waitlist

	// The reads and checks the staff pages share with the API.
	Visible    *query.Events
	Bookings   *query.Bookings
	Deliveries *query.Deliveries
	Registry   api.RegistryChecks
	// Line reads the waiting room's figures (docs/waiting-room.md).
	Line QueueStats
}

// Pages is the staff pages' handlers, and the renderers the live hub
// calls for dashboards and box offices.
type Pages struct {
	Events    *Events
	Dashboard *Dashboard
	Audit     *Audit
	BoxOffice *BoxOffice
	Counter   *Counter
	Charts    *Charts
	Keys      *Keys
	Webhooks  *Webhooks
	Door      *Door
	Attendees *Attendees
	Settings  *Settings
	// Invitations is the organization's invitations page.
	Invitations *Invitations
	// Queue is the dashboard's waiting-room panel.
	Queue   *Queue
	Refunds *Refunds
	// Panel renders the dashboard's waitlist panel (half of
	// live.WaitlistRenderer; the buyers' panels are web/pages').
	Panel *WaitlistPanel

	log *slog.Logger
}

// New builds the staff pages.
func New(d Deps) *Pages {
	f := &frame{render: d.Render, visible: d.Visible, flash: d.Sessions, engine: d.Engine, log: d.Log}
	return &Pages{
		Events: &Events{frame: f, core: d.Events, charts: d.Charts},
		Dashboard: &Dashboard{frame: f, monitor: d.Monitor, audit: d.Audit, checks: d.Registry, waitlist: d.Waitlist,
			seats: d.Events, pays: d.Payments, door: d.Door, snapshotInterval: d.Cfg.SnapshotInterval,
			charts: map[[2]uuid.UUID]*chartCache{}, registry: map[[2]uuid.UUID]*registryCheck{}},
		Audit: &Audit{frame: f, audit: d.Audit, users: d.Accounts},
		BoxOffice: &BoxOffice{frame: f, occupancy: d.Monitor, core: d.BoxOffice, sections: d.EventStore, holds: d.Audit,
			seats: d.Events, release: d.Holds, holdByID: d.HoldStore, layout: map[[2]uuid.UUID]map[string]origin{}},
		Counter: &Counter{frame: f, core: d.BoxOffice, cancels: d.Payments, holds: d.Holds, seats: d.Events, bookings: d.Bookings,
			houses: d.BookingStore},
		Charts:      &Charts{frame: f, store: d.Charts},
		Keys:        &Keys{frame: f, dec: d.Decoder, core: d.Keys, list: d.Accounts},
		Webhooks:    &Webhooks{frame: f, dec: d.Decoder, endpoints: d.Endpoints, store: d.Webhooks, deliveries: d.Deliveries},
		Door:        &Door{frame: f},
		Attendees:   &Attendees{frame: f, door: d.Door},
		Settings:    &Settings{frame: f, orgs: d.Accounts, policy: d.Policy},
		Invitations: &Invitations{frame: f, core: d.Invites, orgs: d.Accounts, limits: d.Limits},
		Queue:       &Queue{render: d.Render, stats: d.Line, events: d.Events},
		Refunds:     &Refunds{frame: f, pays: d.Payments},
		Panel:       &WaitlistPanel{store: d.WaitlistStore},
		log:         d.Log,
	}
}

var _ live.StaffRenderer = (*Pages)(nil)

// RenderStaff renders the staff frames the hub sends to dashboards and
// box offices, once per batch of changes and stream, whatever the number
// of sockets (live.StaffRenderer). The batch is of an event the hub
// checked belongs to b.Org, so the renderer acts as that organization's
// staff.
func (p *Pages) RenderStaff(ctx context.Context, st live.Stream, b live.StaffBatch) []byte {
	a := hold.Actor{Org: b.Org, Role: hold.RoleOrganizer}
	var comps []templ.Component
	var err error
	switch st {
	case live.StreamDashboard:
		comps, err = p.Dashboard.liveFrame(ctx, a, b)
	case live.StreamBoxOffice:
		comps, err = p.BoxOffice.liveFrame(ctx, a, b)
	}
	var out []byte
	if err == nil {
		out, err = render.Bytes(ctx, comps...)
	}
	if err != nil {
		if ctx.Err() == nil {
			p.log.Error("render staff frame", "stream", st.String(), "org", b.Org, "event", b.Event, "err", err)
		}
		return nil
	}
	return out
}
