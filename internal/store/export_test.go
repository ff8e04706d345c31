package store

// BlockHoldBatches takes every statement slot of the hold batcher, so
// holds queue until unblock is called; queued says how many wait.
func (s *Store) BlockHoldBatches() (queued func() int, unblock func()) {
	b := s.batch
	for range cap(b.slots) {
		b.slots <- struct{}{}
	}
	queued = func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue)
	}
	unblock = func() {
		for range cap(b.slots) {
			<-b.slots
		}
	}
	return queued, unblock
}
