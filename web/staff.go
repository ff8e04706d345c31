package web

// staffRoutes registers the organizer dashboard, box office and audit
// pages.
func (s *Server) staffRoutes() {}
