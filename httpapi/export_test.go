package httpapi

// Routes returns every registered method and path pattern (httprouter
// syntax), in registration order. For tests.
func (s *Server) Routes() [][2]string {
	out := make([][2]string, 0, len(s.router.routes))
	for _, r := range s.router.routes {
		out = append(out, [2]string{r.Method, r.Path})
	}
	return out
}
