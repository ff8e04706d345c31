package web

import (
	"net/http"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/web/httpx"
	"seatd/web/live"
	"seatd/web/session"
)

// liveSocket upgrades to one of the event's live streams. The route's
// authed gate has checked the session and the role (staff streams carry
// holders' emails); here the Origin must be ours (cross-site WebSocket
// hijacking) and the event must belong to the session's organization.
func (s *Server) liveSocket(stream live.Stream) session.Handler {
	return func(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
		if !live.SameOrigin(r) {
			return apperr.E(apperr.Forbidden, "cross-origin live connections are refused")
		}
		if err := s.limits.Upgrade(r); err != nil {
			return err
		}
		event, err := httpx.PathID(r, "event")
		if err != nil {
			return err
		}
		// A draft's live view is its organizers' (query.Events).
		if _, err := s.events.Event(r.Context(), a, event); err != nil {
			return err
		}
		s.hub.Serve(w, r, live.Viewer{Actor: a, Event: event, SessionToken: s.sessions.StoredToken(r.Context()),
			SessionDeadline: s.sessions.Deadline(r.Context()), Network: s.limits.Prefix(r), Role: a.Role, Stream: stream})
		return nil
	}
}
