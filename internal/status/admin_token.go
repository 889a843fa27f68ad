package status

import "errors"

// adminToken is the admin token in force: the configured one until SetAdminToken replaces it.
func (s *Server) adminToken() string {
	if t := s.token.Load(); t != nil {
		return *t
	}
	return s.cfg.AdminToken
}

// SetAdminToken replaces the admin token the console's actions need, from the next request on:
// a token rotated by a reload refuses the old one at once. Empty makes the console read-only. A
// token needs the console and its control (Config). It reports whether the token changed.
func (s *Server) SetAdminToken(token string) (bool, error) {
	if token != "" && (s.cfg.Console == nil || s.cfg.Control == nil) {
		return false, errors.New("status: an admin token needs the console and its control")
	}
	old := s.token.Swap(&token)
	return old == nil && token != s.cfg.AdminToken || old != nil && *old != token, nil
}
