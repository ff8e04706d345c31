package hold

import "context"

// SetOfferHook makes the waitlist's offer rounds call f before they
// commit (nil: no hook).
func (wl *Waitlist) SetOfferHook(f func(context.Context) error) { wl.offerHook = f }
