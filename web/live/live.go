// Package live pushes seat changes to browsers over WebSockets, LiveView
// style. Pages are rendered on the server; afterwards every committed change
// of a seat is rendered once per process into an HTML fragment
// (id="seat-<uuid>", data-status, data-version, data-mine) and sent to every
// open page of the event, where it replaces the seat element.
//
// A buyer's waitlist panel rides on the seat-map socket too (see
// EnableWaitlist): when the event's line changes, the hub renders the
// panels of the buyers connected here with one query per event and burst
// of changes, and sends each buyer only their own.
//
// Staff pages (the organizer's dashboard, the box office) open staff
// streams instead (see Stream and EnableStaff): per batch of changes the
// hub renders one staff frame per stream, not per client, on a goroutine of
// its own so buyers' frames never wait for it, and sends it only to
// sockets whose role is staff.
//
// A process has one Hub. The route in package web authenticates the
// session, checks the Origin (SameOrigin), checks that the event belongs to
// the session's organization and that the role may open the stream, and
// only then calls (*Hub).Serve.
package live

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"seatd/internal/hold"
)

// Renderer renders one seat's HTML fragment for a delta. mine selects the
// variant shown to the buyer who holds the seat. The hub calls it once per
// delta and variant per process, from the goroutine serving the delta's
// event, so it must be safe for concurrent use by different events. The
// returned bytes are shared by every client and must not be changed or
// reused afterwards.
type Renderer interface {
	Render(d hold.Delta, mine bool) []byte
}

// Source is the change feed the hub needs from the hold core; *hold.Engine
// satisfies it. Watch must call f with every committed change of the event
// until the returned function is called; f never blocks.
type Source interface {
	Watch(ctx context.Context, a hold.Actor, event uuid.UUID, f func([]hold.Delta)) (func(), error)
}

// Viewer is who a socket belongs to. The route fills it from the server
// session, never from request input.
type Viewer struct {
	// Actor is the session's organization, user and role. Clients are
	// grouped by (Actor.Org, Event); Actor.User selects the mine variant.
	Actor hold.Actor
	// Event is the event whose seat map the page shows.
	Event uuid.UUID
	// SessionToken groups sockets so CloseSession can end them at logout,
	// and names the session to Options.SessionExpiry. It is the token as
	// the session store keeps it (hashed), never the cookie's value. Empty
	// means the socket is not tied to a session.
	SessionToken string
	// SessionDeadline is when the session expires as far as the route
	// knows (the earlier of its absolute and idle deadlines); zero means
	// never. When it comes the hub asks Options.SessionExpiry whether the
	// session was extended meanwhile, and closes the socket with
	// CodeSessionEnded if not.
	SessionDeadline time.Time
	// Network is the client's address prefix (an IPv4 /24, an IPv6 /64)
	// for Options.MaxPerNetwork; empty means none is counted.
	Network string
	// Role is the viewer's role for rendering.
	Role hold.Role
	// Stream selects what the socket receives; the zero value is the seat
	// map. A staff stream is refused unless Actor.Role is a staff role.
	Stream Stream
}

// Stream is what a socket receives about its event.
type Stream uint8

// The streams. Each socket gets exactly one kind of frame: seat-map sockets
// the seat fragments (with the mine and notice variants), staff sockets the
// staff frames of their page, rendered by the StaffRenderer.
const (
	// StreamSeats is the buyer's seat map: one fragment per changed seat.
	StreamSeats Stream = iota
	// StreamDashboard is the organizer's dashboard: counts, feed, chart.
	StreamDashboard
	// StreamBoxOffice is the box office: active-hold rows and its seat map.
	StreamBoxOffice

	numStreams
)

// Staff reports whether the stream carries staff frames.
func (s Stream) Staff() bool { return s == StreamDashboard || s == StreamBoxOffice }

func (s Stream) String() string {
	switch s {
	case StreamSeats:
		return "seats"
	case StreamDashboard:
		return "dashboard"
	case StreamBoxOffice:
		return "box-office"
	}
	return "stream(" + strconv.Itoa(int(s)) + ")"
}

// staffRole reports whether a role may open staff streams.
func staffRole(role hold.Role) bool { return role == hold.RoleOrganizer || role == hold.RoleBoxOffice }

// StaffBatch is what changed in an event since the previous staff frame.
type StaffBatch struct {
	Org, Event uuid.UUID
	// Changes are the batch's changes in arrival order, every one of them
	// (not one per seat), for activity feeds. A long burst keeps only its
	// newest FeedSize changes; Dropped counts the others.
	Changes []hold.Delta
	Dropped int
	// Seats has the newest change of each seat that changed, in arrival
	// order, for views that show current state (a seat's row, its button).
	// A change older than one already given is left out.
	Seats []hold.Delta
}

// StaffRenderer renders staff frames. The hub calls it at most once per
// batch and stream, and only for streams with a socket in this process;
// every socket of the stream gets the same bytes, which must not be
// changed afterwards. Calls for one event never overlap; calls for
// different events may. ctx ends when the hub shuts down or the render
// takes too long.
type StaffRenderer interface {
	RenderStaff(ctx context.Context, s Stream, b StaffBatch) []byte
}

// StaffOptions enable staff streams and holder notices; see
// (*Hub).EnableStaff.
type StaffOptions struct {
	// Renderer renders the staff frames. Required.
	Renderer StaffRenderer
	// Notice, if set, renders what a buyer's seat map is told when someone
	// else (the box office) released their hold. It is appended to that
	// buyer's frame only, once per change and process.
	Notice func(d hold.Delta) []byte
	// Interval is the least time between two staff frames of one event
	// (250ms): changes in between are batched, so a busy event costs
	// staff renders at a bounded rate and buyers' frames never wait for
	// them.
	Interval time.Duration
	// FeedSize is how many changes a batch keeps for feeds (50).
	FeedSize int
	// RenderTimeout bounds one RenderStaff call (5s).
	RenderTimeout time.Duration
}

func (o StaffOptions) withDefaults() StaffOptions {
	if o.Interval <= 0 {
		o.Interval = 250 * time.Millisecond
	}
	if o.FeedSize <= 0 {
		o.FeedSize = 50
	}
	if o.RenderTimeout <= 0 {
		o.RenderTimeout = 5 * time.Second
	}
	return o
}

// WaitlistSource tells of changes to events' waitlists; *hold.Engine
// satisfies it. WatchWaitlist must call f with every committed change of
// the event's waitlist (and with a change of the whole line when some may
// have been missed) until the returned function is called; f never
// blocks.
type WaitlistSource interface {
	WatchWaitlist(ctx context.Context, a hold.Actor, event uuid.UUID, f func(hold.WaitlistChange)) (func(), error)
}

// WaitlistRenderer renders buyers' waitlist panels. The hub calls it at
// most once at a time per event, for the buyers with a seat-map socket
// here whose panel may have changed, however many changes came meanwhile.
type WaitlistRenderer interface {
	// RenderWaitlists renders, with one query for all of them, the panel
	// (an out-of-band fragment) of each of users who has entries in the
	// event; users with none are left out of panels. cleared is the panel
	// of a buyer with no entries, sent only to buyers whose own entries
	// changed (they left the line from another page). The bytes are
	// shared by the sockets and must not be changed afterwards.
	RenderWaitlists(ctx context.Context, org, event uuid.UUID, users []uuid.UUID) (panels map[uuid.UUID][]byte, cleared []byte, err error)
	// RenderStaffWaitlist renders the dashboard's waitlist panel (an
	// out-of-band fragment: how many wait, the first in line), sent to
	// every dashboard socket of the event after a change of its line.
	RenderStaffWaitlist(ctx context.Context, org, event uuid.UUID) ([]byte, error)
}

// WaitlistOptions enable live waitlist panels; see (*Hub).EnableWaitlist.
type WaitlistOptions struct {
	// Source and Renderer are required.
	Source   WaitlistSource
	Renderer WaitlistRenderer
	// RenderTimeout bounds one RenderWaitlists call (5s).
	RenderTimeout time.Duration
	// Retry is how long after a failed render the panels are rendered
	// again (1s); changes meanwhile join that render.
	Retry time.Duration
}

func (o WaitlistOptions) withDefaults() WaitlistOptions {
	if o.RenderTimeout <= 0 {
		o.RenderTimeout = 5 * time.Second
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
	return o
}

// Close codes sent to browsers when the server ends a socket. The browser
// script uses them to decide whether and when to reconnect.
const (
	// CodeTooSlow: the client could not keep up and was dropped; reconnect
	// and resync.
	CodeTooSlow = websocket.CloseTryAgainLater // 1013
	// CodeRestart: this process is shutting down; reconnect, most likely
	// to another process.
	CodeRestart = websocket.CloseServiceRestart // 1012
	// CodeSessionEnded: the session ended (logout, expiry, idle timeout,
	// account disabled or role changed); do not reconnect.
	CodeSessionEnded = 4401
	// CodeTooMany: the socket was refused because its session, its
	// account, its network or this process has as many sockets as allowed
	// (Options.MaxPerSession, MaxPerUser, MaxPerNetwork, MaxClients). It
	// is 1013 "try again later", like CodeTooSlow; the close reason tells
	// which limit was hit.
	CodeTooMany = websocket.CloseTryAgainLater // 1013
)

// Options tune a Hub. Zero fields take the defaults noted.
type Options struct {
	// SendQueue is how many frames may wait for one client before it is
	// dropped as too slow (64).
	SendQueue int
	// WriteTimeout bounds the write of one frame or ping (10s).
	WriteTimeout time.Duration
	// PongTimeout is how long a client may stay silent, pongs included,
	// before its socket is closed (60s).
	PongTimeout time.Duration
	// PingPeriod is how often the server pings (54s). It must be shorter
	// than PongTimeout; if not, nine tenths of PongTimeout is used.
	PingPeriod time.Duration
	// MaxMessage is the largest message a client may send, in bytes
	// (4 KiB); a larger one closes the socket with 1009.
	MaxMessage int64
	// OnMessage, if set, receives each text message a client sends (for
	// seat clicks over the socket). It runs on that client's reader
	// goroutine: while it runs, that client's messages and pongs wait, but
	// no other client does. The slice is the hook's to keep.
	OnMessage func(v Viewer, msg []byte)
	// MaxClients caps the sockets of this process; one more is accepted
	// and closed at once with CodeTooMany. Zero means no cap.
	MaxClients int
	// MaxPerSession caps the sockets of one session (Viewer.SessionToken)
	// in this process, the same way. Zero means no cap.
	MaxPerSession int
	// MaxPerUser caps the sockets of one account (Viewer.Actor.User),
	// whatever its sessions, in this process, the same way: sessions per
	// account are capped too, but not so low that one account could not
	// fill MaxClients. Zero means no cap.
	MaxPerUser int
	// MaxPerNetwork caps the sockets from one address prefix
	// (Viewer.Network) in this process, the same way. Zero means no cap.
	MaxPerNetwork int
	// Tick is the least time between two seat-map frames of one event
	// (100 ms): a change after a quiet tick goes out at once, and the
	// changes that follow it within the tick go together, one frame per
	// client per tick. An event changing a thousand times a second then
	// costs each watcher ten frames a second, not a thousand.
	Tick time.Duration
	// SessionExpiry, if set, answers when a session (by Viewer.SessionToken)
	// expires now, and false if it has ended. The hub asks at a socket's
	// SessionDeadline and after RecheckSessions; without it a socket
	// closes at its SessionDeadline.
	SessionExpiry func(ctx context.Context, token string) (time.Time, bool, error)
}

func (o Options) withDefaults() Options {
	if o.SendQueue <= 0 {
		o.SendQueue = 64
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.PongTimeout <= 0 {
		o.PongTimeout = 60 * time.Second
	}
	if o.PingPeriod <= 0 {
		o.PingPeriod = 54 * time.Second
	}
	if o.PingPeriod >= o.PongTimeout {
		o.PingPeriod = o.PongTimeout * 9 / 10
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = 4 << 10
	}
	if o.Tick <= 0 {
		o.Tick = 100 * time.Millisecond
	}
	return o
}

// SameOrigin reports whether r carries exactly one Origin header, naming an
// http or https origin whose host equals r.Host. Serve accepts any Origin,
// so the route must call this (or an equivalent check) before Serve:
// browsers send cookies on cross-site WebSocket handshakes.
func SameOrigin(r *http.Request) bool {
	vs := r.Header.Values("Origin")
	if len(vs) != 1 {
		return false
	}
	u, err := url.Parse(vs[0])
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}
