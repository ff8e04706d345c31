package seatlock

// PauseAcquires takes every pipeline slot, so acquires queue until
// resume is called; queued says how many wait.
func (l *Locks) PauseAcquires() (queued func() int, resume func()) {
	return l.acquires.Queued, l.acquires.Pause()
}
