package status

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Control carries out the console's actions, through the same control state as the
// command line's pause, resume and trigger. by names who asked, for the record.
type Control interface {
	// Check returns an error, naming the table it read, when job is not in the cluster's table:
	// the leader's, as the command line reads it, whichever replica serves the console.
	Check(ctx context.Context, job string) error
	Pause(ctx context.Context, job, by string) (bool, error)
	Resume(ctx context.Context, job string) (bool, error)
	// Trigger asks the leader to run job now and returns the manual slot's instant.
	Trigger(ctx context.Context, job, by string, at time.Time) (time.Time, error)
}

// ConsoleHeader must accompany every action: a page of another site cannot send it without the
// browser asking this server first (a CORS preflight, which it never grants), and a plain HTML
// form cannot send it at all.
const ConsoleHeader = "X-Scheduler-Console"

// checkTimeout bounds the read of the cluster's table an action's job is checked against: past
// it, the check falls back to this replica's table, as the command line does without a leader.
const checkTimeout = 3 * time.Second

// actionTimeout bounds one action's write to the control state.
const actionTimeout = 10 * time.Second

//go:embed console
var consoleFiles embed.FS

// consoleHeaders are set on every response of the console: its script and style come from
// this server only, nothing inline runs, and no other site may frame it.
var consoleHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"X-Frame-Options":        "DENY",
	"Referrer-Policy":        "no-referrer",
	"Cache-Control":          "no-store",
}

// consoleRoutes adds the web console to mux: the page at /, its files under /console/, its
// document on /api/console and its actions on /api/jobs/JOB/ACTION.
func (s *Server) consoleRoutes(mux *http.ServeMux) {
	files, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	secure := func(h http.HandlerFunc) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range consoleHeaders {
				w.Header().Set(k, v)
			}
			h(w, r)
		})
	}
	page := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, err := fs.ReadFile(files, name)
			if err != nil {
				http.NotFound(w, r)
				return
			}
			ext := name[strings.LastIndex(name, "."):]
			w.Header().Set("Content-Type", mime.TypeByExtension(ext))
			_, _ = w.Write(b)
		}
	}
	mux.Handle("GET /{$}", secure(page("index.html")))
	for _, name := range []string{"console.js", "console.css"} {
		mux.Handle("GET /console/"+name, secure(page(name)))
	}
	mux.Handle("GET /api/console", secure(func(w http.ResponseWriter, r *http.Request) {
		doc, err := s.consoleDoc.get(r.Context())
		if err != nil {
			return // the client went away
		}
		doc.Node, doc.Admin = s.cfg.Node, s.adminToken() != ""
		writeJSON(w, http.StatusOK, doc)
	}))
	mux.Handle("POST /api/jobs/{job}/{action}", secure(s.action))
}

// action serves one of the console's actions, after checking that the request comes from the
// console's own page (403 otherwise) with the admin token (401 otherwise).
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	job, act := r.PathValue("job"), r.PathValue("action")
	if s.adminToken() == "" {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "the console is read-only: no http.admin_token_file is configured"})
		return
	}
	if code, why := s.authorize(r); code != 0 {
		s.refusals.Do(func() {
			s.lg.Warn("console action refused", zap.String("job", job), zap.String("action", act),
				zap.String("remote", r.RemoteAddr), zap.Int("code", code), zap.String("reason", why))
		})
		if code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="scheduler"`)
		}
		writeJSON(w, code, map[string]string{"error": why})
		return
	}
	cctx, ccancel := context.WithTimeout(r.Context(), checkTimeout)
	err := s.cfg.Control.Check(cctx, job)
	ccancel()
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	}
	by := "console@" + remoteHost(r)
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	msg, err := s.act(ctx, act, job, by)
	switch {
	case errors.Is(err, errUnknownAction):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	case err != nil:
		s.lg.Warn("console action", zap.String("job", job), zap.String("action", act), zap.String("by", by), zap.Error(err))
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	s.lg.Info("console action", zap.String("job", job), zap.String("action", act), zap.String("by", by))
	writeJSON(w, http.StatusOK, map[string]string{"message": msg})
}

var errUnknownAction = errors.New("unknown action: want pause, resume or trigger")

// act carries out action on job for by and words the result as the command line does.
func (s *Server) act(ctx context.Context, action, job, by string) (string, error) {
	ctl := s.cfg.Control
	switch action {
	case "pause":
		changed, err := ctl.Pause(ctx, job, by)
		if err != nil || !changed {
			return job + " was already paused", err
		}
		return job + " paused", nil
	case "resume":
		changed, err := ctl.Resume(ctx, job)
		if err != nil || !changed {
			return job + " was not paused", err
		}
		return job + " resumed", nil
	case "trigger":
		at, err := ctl.Trigger(ctx, job, by, s.cfg.Now())
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s triggered for slot %s (manual)", job, at.UTC().Format(time.RFC3339Nano)), nil
	}
	return "", errUnknownAction
}

// authorize returns 0 for a request of the console's own page bearing the admin token, else
// the status to refuse it with and why. The origin is checked first, so that a page of another
// site learns nothing about the token.
func (s *Server) authorize(r *http.Request) (int, string) {
	if r.Header.Get(ConsoleHeader) == "" {
		return http.StatusForbidden, "missing the " + ConsoleHeader + " header: actions are taken from the console's page"
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" {
			return http.StatusForbidden, fmt.Sprintf("content type %q refused: actions are not form posts", mt)
		}
	}
	if err := s.origins.Check(r); err != nil {
		return http.StatusForbidden, "cross-origin request refused"
	}
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok || !sameToken(token, s.adminToken()) {
		return http.StatusUnauthorized, "a valid admin token is needed (Authorization: Bearer TOKEN)"
	}
	return 0, ""
}

// bearer returns the token of an Authorization header of the Bearer scheme, whose name is
// case-insensitive and followed by one or more spaces (RFC 9110, 11.4).
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	return token, token != ""
}

// sameToken compares digests in constant time, so that neither the content nor the length of
// the token leaks through the time a refusal takes.
func sameToken(got, want string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// remoteHost is the address the request came from, without its port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
