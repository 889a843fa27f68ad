package kinds

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects bounds a chain of followed redirects, as net/http does by default.
const maxRedirects = 10

// redirectError is a redirect an http job refuses to follow. Following it would send the job's
// headers (an API key, say) where the job was not configured to send them, or change what is
// sent, so the run fails for good instead.
type redirectError struct {
	to     string // the redirect's target, without a password
	reason string
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("redirect to %s not followed: %s", e.to, e.reason)
}

// checkRedirect is the job's http.Client CheckRedirect. Without FollowRedirects the redirect
// response is the answer. With it, only a redirect to the same origin that keeps the method
// (and so the body) is followed: net/http turns a POST answered 301, 302 or 303 into a GET.
func (j *HTTPJob) checkRedirect(req *http.Request, via []*http.Request) error {
	if !j.follow {
		return http.ErrUseLastResponse
	}
	first := via[0]
	status := ""
	if req.Response != nil {
		status = shorten(req.Response.Status, maxStatusLine)
	}
	switch {
	case len(via) >= maxRedirects:
		return &redirectError{to: shorten(req.URL.Redacted(), maxLocation), reason: fmt.Sprintf("%d redirects in a row", len(via))}
	case !sameOrigin(first.URL, req.URL):
		return &redirectError{to: shorten(req.URL.Redacted(), maxLocation), reason: fmt.Sprintf("%s leads to another origin than %s", status, origin(first.URL))}
	case req.Method != first.Method:
		return &redirectError{to: shorten(req.URL.Redacted(), maxLocation), reason: fmt.Sprintf("%s would turn the %s into a %s (only 307 and 308 keep the method)", status, first.Method, req.Method)}
	}
	return nil
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return origin(a) == origin(b)
}

// origin is scheme://host:port of u, the port made explicit.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// unfollowed describes a redirect response that was not followed, naming where it pointed.
func unfollowed(resp *http.Response) string {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "a redirect without a Location"
	}
	if resp.Request != nil && resp.Request.URL != nil {
		if u, err := resp.Request.URL.Parse(loc); err == nil {
			loc = u.Redacted()
		}
	}
	return "redirect to " + shorten(loc, maxLocation) + " not followed (the job does not follow redirects)"
}
