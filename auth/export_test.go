package auth

// SetOnRender has f called as each mail template render of s starts
// (before s serves calls).
func SetOnRender(s *Service, f func()) { s.onRender = f }
