// Package render writes the HTML answers of the page packages (web/pages,
// web/staff): a templ component inside the page frame (title, the
// signed-in account, the flash message, the hashed asset paths), error
// pages, and the view models both kinds of pages show (events, prices,
// waitlist entries).
package render

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"

	"github.com/a-h/templ"

	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/session"
)

// Sessions is what the page frame reads of the request's session;
// *session.Sessions satisfies it.
type Sessions interface {
	Account(ctx context.Context) session.Account
	PopFlash(ctx context.Context) string
}

// Pages renders pages and error pages.
type Pages struct {
	log      *slog.Logger
	errs     *httpx.Errors
	sessions Sessions
	asset    func(name string) string
}

// New returns the page renderer; asset names the hashed URL of a static
// file.
func New(log *slog.Logger, errs *httpx.Errors, sessions Sessions, asset func(name string) string) *Pages {
	return &Pages{log: log, errs: errs, sessions: sessions, asset: asset}
}

// Render answers c as an HTML page or fragment with status.
func (p *Pages) Render(w http.ResponseWriter, r *http.Request, status int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.Render(r.Context(), w); err != nil {
		p.log.WarnContext(r.Context(), "render", "path", r.URL.Path, "err", err)
	}
}

// Error shows an error as a page; internal errors are logged and shown as
// a generic sentence.
func (p *Pages) Error(w http.ResponseWriter, r *http.Request, err error) {
	status, e := p.errs.Resolve(w, r, err)
	if status == http.StatusInternalServerError && r.Context().Err() != nil {
		return // the browser went away; nobody reads the page
	}
	p.Render(w, r, status, views.ErrorPage(p.Meta(r, http.StatusText(status)), status, e.Message))
}

// Meta is the frame of a page titled title: the signed-in account and the
// flash message (taken out of the session: it shows once).
func (p *Pages) Meta(r *http.Request, title string) views.Page {
	m := views.Page{Title: title, Asset: p.asset}
	if _, ok := session.ActorFrom(r.Context()); ok {
		ctx := r.Context()
		acct := p.sessions.Account(ctx)
		m.User = &views.User{Email: acct.Email, Role: string(acct.Role), OrgName: acct.OrgName, OrgSlug: acct.OrgSlug}
		m.Flash = p.sessions.PopFlash(ctx)
	}
	return m
}

// Bytes renders components one after the other, for the frames the live
// hub pushes.
func Bytes(ctx context.Context, comps ...templ.Component) ([]byte, error) {
	var b bytes.Buffer
	for _, c := range comps {
		if err := c.Render(ctx, &b); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}
