package httpapi

// demoRoutes registers the passkey demo page (placeholder).
func (s *Server) demoRoutes() {}
