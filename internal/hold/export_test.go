package hold

import "context"

// SetOfferHook makes the service's offer rounds call f before they commit
// (nil: no hook).
func (s *Service) SetOfferHook(f func(context.Context) error) { s.offerHook = f }
