package auth

// TakeHashSlots occupies every password-hashing slot until release is
// called, as a flood of sign-ins in progress would.
func (a *Accounts) TakeHashSlots() (release func()) {
	n := cap(a.hashing)
	for range n {
		a.hashing <- struct{}{}
	}
	return func() {
		for range n {
			<-a.hashing
		}
	}
}

// Waiting is how many sign-ins wait for a hashing slot.
func (a *Accounts) Waiting() int64 { return a.waiting.Load() }

// Lookups is how many keys were looked up in Postgres.
func (k *APIKeys) Lookups() int64 { return k.lookups.Load() }
