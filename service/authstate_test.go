package service

// forceAuth replaces s's auth state like SetAuth, but may also turn auth on
// or off (fixtures built without auth that add it afterwards).
func forceAuth(s *Server, c AuthConfig) {
	s.authMu.Lock()
	defer s.authMu.Unlock()
	old := s.currentAuth()
	s.auth.Store(s.newAuthState(c, old))
	close(old.changed)
}
