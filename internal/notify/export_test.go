package notify

// PID is the backend process of the live connection (0 before the first).
func (n *Notifier) PID() uint32 { return n.pid.Load() }
