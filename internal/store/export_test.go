package store

// BlockHoldBatches takes every statement slot of both hold batchers, so
// holds queue until unblock is called; queued says how many wait.
func (s *Store) BlockHoldBatches() (queued func() int, unblock func()) {
	bs := []*holdBatcher{s.batch, s.together}
	for _, b := range bs {
		for range cap(b.slots) {
			b.slots <- struct{}{}
		}
	}
	queued = func() int {
		n := 0
		for _, b := range bs {
			b.mu.Lock()
			n += len(b.queue)
			b.mu.Unlock()
		}
		return n
	}
	unblock = func() {
		for _, b := range bs {
			for range cap(b.slots) {
				<-b.slots
			}
		}
	}
	return queued, unblock
}
