package web

import (
	"net/http"

	"seatd/internal/hold"
	"seatd/web/session"
)

// wholeEvent limits a read that answers a whole event (every seat: the
// seat list, the maps) per reader and per client network
// (ratelimit.Limiter.Read): 429 with Retry-After past either. The reader
// is the API key, or the account whatever session it reads from, so
// opening more sessions buys no more reads.
func (s *Server) wholeEvent(h session.Handler) session.Handler {
	return func(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
		who := "user:" + a.User.String()
		if k, ok := session.APIKeyFrom(r.Context()); ok {
			who = "key:" + k.ID.String()
		}
		if err := s.limits.Read(r, who); err != nil {
			return err
		}
		return h(w, r, a)
	}
}
