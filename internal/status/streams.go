package status

import (
	"context"
	"net/http"
)

// streaming serves h with requests that also end when the server shuts down: a stream would
// otherwise hold the shutdown for its whole bound. A Server made without New streams until
// the request ends.
func (s *Server) streaming(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.streams == nil {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(s.streams, cancel)
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
