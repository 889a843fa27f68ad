// Package redact keeps the configuration's secrets out of what the scheduler shows: a Postgres
// DSN's password hidden for logs and status, and every secret replaced in a run's output.
package redact

import (
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// kvPassword matches password=... in a key=value DSN, quoted or not.
var kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// DSN hides the password of a Postgres DSN, URL or key=value form, for logs and status.
func DSN(dsn string) string {
	return dsnPasswords(dsn, func(...string) string { return "xxxxx" })
}

// dsnPasswords is the one reading of the passwords in a Postgres DSN, URL or key=value form. It
// calls replace with the forms of each password (for a URL: decoded, then as written; for
// key=value: as written, then unquoted when quoted) and returns the DSN with each password put
// back as replace returns it.
func dsnPasswords(dsn string, replace func(forms ...string) string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && u.Host != "" {
		if p, ok := u.User.Password(); ok {
			_, written, _ := strings.Cut(u.User.String(), ":")
			u.User = url.UserPassword(u.User.Username(), replace(p, written))
		}
		q := u.Query()
		if q.Has("password") {
			p := q.Get("password")
			q.Set("password", replace(p, url.QueryEscape(p)))
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return kvPassword.ReplaceAllStringFunc(dsn, func(m string) string {
		sub := kvPassword.FindStringSubmatch(m)
		v := sub[2]
		forms := []string{v}
		if strings.HasPrefix(v, "'") && strings.HasSuffix(v, "'") && len(v) >= 2 {
			forms = append(forms, strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(v[1:len(v)-1]))
		}
		return sub[1] + replace(forms...)
	})
}

// Redacted replaces a secret in the output of a run.
const Redacted = "[redacted]"

// Scrubber returns a function replacing each of secrets in a text by [redacted]; nil when
// there are no secrets. Longer secrets go first, so that a DSN is replaced whole rather than
// around its password.
func Scrubber(secrets []string) func(string) string {
	if len(secrets) == 0 {
		return nil
	}
	sorted := append([]string(nil), secrets...)
	sort.SliceStable(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	pairs := make([]string, 0, 2*len(sorted))
	for _, s := range sorted {
		if s != "" {
			pairs = append(pairs, s, Redacted)
		}
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

// DSNSecrets returns the password of a Postgres DSN, URL or key=value form, as written and, for
// a URL, decoded too; nil when it has none.
func DSNSecrets(dsn string) []string {
	var out []string
	dsnPasswords(dsn, func(forms ...string) string {
		for _, f := range forms {
			if f != "" && !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
		return forms[0]
	})
	return out
}

// Live is a scrubber to which a reload adds the new table's secrets: what runs print from then
// on is scrubbed of them, and of every secret added before (a run of the old table may still
// print an old one, and a rotated credential is no less secret). Its zero value scrubs nothing;
// it is safe for concurrent use.
type Live struct {
	mu      sync.Mutex // serializes Add
	secrets []string
	seen    map[string]bool // secrets, to add each once: a table may hold one per job
	scrub   atomic.Pointer[func(string) string]
	longest atomic.Int64 // the longest secret's length
	lines   atomic.Bool  // a secret holds a newline
}

// Add makes l scrub secrets too from now on.
func (l *Live) Add(secrets ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	for _, s := range secrets {
		if s != "" && !l.seen[s] {
			l.seen[s] = true
			l.secrets = append(l.secrets, s)
			l.longest.Store(max(l.longest.Load(), int64(len(s))))
			if strings.Contains(s, "\n") {
				l.lines.Store(true)
			}
		}
	}
	f := Scrubber(l.secrets)
	l.scrub.Store(&f)
}

// Longest returns the length of the longest of l's secrets: how much of a stream of output must
// be held back to replace each whole (runlog.Redactor).
func (l *Live) Longest() int { return int(l.longest.Load()) }

// Multiline reports whether one of l's secrets holds a newline (runlog.Redactor).
func (l *Live) Multiline() bool { return l.lines.Load() }

// Scrub replaces each of l's secrets in s by [redacted].
func (l *Live) Scrub(s string) string {
	if f := l.scrub.Load(); f != nil && *f != nil {
		return (*f)(s)
	}
	return s
}
