package kinds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"scheduler"
	"scheduler/internal/egress"
)

// The headers every http job's request carries.
const (
	HeaderFencingToken   = "Fencing-Token"            // Run.Token, decimal
	HeaderIdempotencyKey = "Idempotency-Key"          // Run.RunID, stable across the retries of a slot
	HeaderJob            = "X-Scheduler-Job"          // Run.Job
	HeaderScheduledAt    = "X-Scheduler-Scheduled-At" // Run.Slot, RFC 3339 in the slot's own time zone
)

// maxResponseRead is how much of a response body is read, for its excerpt and so that the
// connection can be reused; the rest is not read.
const maxResponseRead = 1 << 20

// HTTPConfig configures an http job.
type HTTPConfig struct {
	// URL is the http or https address called. Required.
	URL string
	// Method is the request method. Default POST.
	Method string
	// Headers are sent with every request. They cannot replace the run headers
	// (HeaderFencingToken and the rest), which are set last.
	Headers map[string]string
	// OutputLimit is how many bytes of the response body are kept. Default DefaultOutputLimit.
	OutputLimit int
	// FollowRedirects lets the job follow a redirect to the same origin (scheme, host and port)
	// that keeps the method: 307 and 308. Default false: a redirect is a Permanent failure.
	FollowRedirects bool
}

// HTTPJob calls a URL, the http job type. The request has no body; it carries the run in its
// headers (HeaderFencingToken, HeaderIdempotencyKey, HeaderJob, HeaderScheduledAt) after the
// configured ones.
//
// The answer decides the result: 2xx is success; 409 Conflict means the service saw a newer token
// and is an error wrapping scheduler.ErrRefused (the run ends; the term does not); 5xx, 408, 429, a
// transport error or a timeout may pass on a retry; any other status (another 4xx, an unfollowed
// 3xx) is Permanent. The output is the status
// line and an excerpt of the response body.
//
// A redirect is not followed unless FollowRedirects is set, and then only within the origin of
// URL and keeping the method; any other redirect is a Permanent failure naming its target. The
// job's headers thus never reach a host other than the configured one.
type HTTPJob struct {
	client  *http.Client
	url     *url.URL
	method  string
	headers http.Header
	limit   int
	follow  bool
}

// Methods are the request methods an http job may use.
var Methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// Check reports every problem of cfg, each at its key: the one check of an http job's settings.
func (cfg HTTPConfig) Check() []Problem {
	var ps problems
	u, err := url.Parse(cfg.URL)
	switch {
	case cfg.URL == "":
		ps.add("url", "is required for an http job")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		ps.add("url", fmt.Sprintf("must be an absolute http:// or https:// URL, got %q", redacted(cfg.URL, u, err)))
	}
	if cfg.Method != "" && !slices.Contains(Methods, cfg.Method) {
		ps.add("method", fmt.Sprintf("must be one of %s; got %q", strings.Join(Methods, ", "), cfg.Method))
	}
	for _, k := range sortedNames(cfg.Headers) {
		switch v := cfg.Headers[k]; {
		case !isToken(k):
			ps.add("headers", fmt.Sprintf("invalid header name %q", k))
		case isRunHeader(k):
			ps.add("headers."+k, "set by the scheduler for each run")
		case strings.ContainsAny(v, "\r\n\x00"):
			ps.add("headers."+k, "value contains a line break or NUL")
		}
	}
	if cfg.OutputLimit < 0 {
		ps.add("output limit", fmt.Sprintf("must not be negative, got %d", cfg.OutputLimit))
	}
	return ps
}

// redacted is raw as a problem may show it: without a password when it parses.
func redacted(raw string, u *url.URL, err error) string {
	if err != nil {
		return raw
	}
	return u.Redacted()
}

// NewHTTP checks cfg (Check) and returns the job, which sends its requests with client (its
// timeout and transport apply; the redirect policy is the job's own). Every problem is reported,
// joined, each a Problem.
func NewHTTP(client *http.Client, cfg HTTPConfig) (*HTTPJob, error) {
	ps := cfg.Check()
	if client == nil {
		ps = append(ps, Problem{"http client", "required"})
	}
	if err := refusal(ps); err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.URL) // Check parsed it
	method := cfg.Method
	if method == "" {
		method = http.MethodPost
	}
	headers := http.Header{}
	for k, v := range cfg.Headers {
		headers.Set(k, v)
	}
	j := &HTTPJob{url: u, method: method, headers: headers, limit: cfg.OutputLimit, follow: cfg.FollowRedirects}
	c := *client
	c.CheckRedirect = j.checkRedirect
	if c.Transport == nil {
		c.Transport = egress.Transport() // a request sent once per attempt (package egress)
	}
	j.client = &c
	return j, nil
}

// Execute sends the request once for run; see HTTPJob.
func (j *HTTPJob) Execute(ctx context.Context, run scheduler.Attempt) (string, error) {
	req, err := http.NewRequestWithContext(ctx, j.method, j.url.String(), http.NoBody)
	if err != nil {
		return "", scheduler.Permanent(fmt.Errorf("%s %s: %w", j.method, j.url.Redacted(), err))
	}
	req.Header = j.headers.Clone()
	if host := req.Header.Get("Host"); host != "" {
		req.Host = host // net/http sends req.Host, not a Host header
		req.Header.Del("Host")
	}
	req.Header.Set(HeaderFencingToken, strconv.FormatInt(run.Token, 10))
	req.Header.Set(HeaderIdempotencyKey, run.RunID)
	req.Header.Set(HeaderJob, run.Job)
	req.Header.Set(HeaderScheduledAt, run.Slot.Format(time.RFC3339))

	resp, err := j.client.Do(req)
	if re := (*redirectError)(nil); errors.As(err, &re) {
		output := ""
		if resp != nil {
			output = shorten(resp.Status, maxStatusLine)
		}
		return output, scheduler.Permanent(fmt.Errorf("%s %s: %w", j.method, j.url.Redacted(), re))
	}
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", j.method, j.url.Redacted(), shortURL(err)) // *url.Error: no password
	}
	body := NewScrubbedCapture(j.limit, outputScrub(run))
	n, readErr := io.Copy(body, io.LimitReader(resp.Body, maxResponseRead))
	_ = resp.Body.Close()
	status := shorten(resp.Status, maxStatusLine)
	output := status
	if n > 0 {
		output += "\n" + body.String()
	}
	if n == maxResponseRead {
		output += fmt.Sprintf("\n[body longer than %d bytes: the rest was not read]", maxResponseRead)
	}

	code := resp.StatusCode
	what := fmt.Sprintf("%s %s: %s", j.method, j.url.Redacted(), status)
	failure := errors.New(what)
	switch {
	case code >= 200 && code < 300:
		if readErr != nil {
			// The service answered success; a body cut short changes only the excerpt.
			output += fmt.Sprintf("\n[body read failed: %v]", readErr)
		}
		return output, nil
	case code == http.StatusConflict:
		return output, fmt.Errorf("%s: %w", what, scheduler.ErrRefused)
	case code >= 500, code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return output, failure
	case code >= 300 && code < 400:
		return output, scheduler.Permanent(fmt.Errorf("%s: %s", what, unfollowed(resp)))
	}
	return output, scheduler.Permanent(failure)
}

// maxStatusLine and maxLocation are how much of a response's status (code and reason phrase)
// and of a redirect's target go into a run's output and error. The receiver chooses both, which
// net/http reads up to the transport's header limit: megabytes in every log line of the run.
const (
	maxStatusLine = 256
	maxLocation   = 512
)

// shorten is s cut to n bytes of whole characters, "…" marking a cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// isRunHeader reports whether the header name k is one of those set for each run.
func isRunHeader(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case HeaderFencingToken, HeaderIdempotencyKey, HeaderJob, HeaderScheduledAt:
		return true
	}
	return false
}

// isToken reports whether s is an RFC 9110 token, the syntax of method and header names.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// shortURL cuts the address in err, a request's *url.Error, to maxLocation: after a redirect
// followed, it is the receiver's target, which net/http reads up to the transport's header
// limit, and it would go whole into every log line of the run.
func shortURL(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) || len(ue.URL) <= maxLocation {
		return err
	}
	cut := *ue
	cut.URL = shorten(ue.URL, maxLocation)
	return &cut
}
