package kinds

import (
	"net/url"
	"slices"
	"strings"
)

// credentialWords are the parts of a header, query parameter or variable name that say its
// value is a credential (Authorization, X-Api-Key, access_token, DB_PASSWORD, ...).
var credentialWords = []string{"auth", "token", "secret", "passw", "pwd", "key", "cookie", "credential", "signature", "session", "private"}

// minCredential is the shortest value taken for a credential: a shorter one would be replaced
// wherever it appears in a run's output, and protects nothing.
const minCredential = 4

// CredentialName reports whether a header, query parameter or environment variable of this name
// holds a credential, by the words its name contains.
func CredentialName(name string) bool {
	name = strings.ToLower(name)
	return slices.ContainsFunc(credentialWords, func(w string) bool { return strings.Contains(name, w) })
}

// credentials collects values of at least minCredential bytes, without repeats.
type credentials []string

func (c *credentials) add(vs ...string) {
	for _, v := range vs {
		if len(v) >= minCredential && !slices.Contains(*c, v) {
			*c = append(*c, v)
		}
	}
}

// Credentials returns the credentials in c: the values of its headers named as credentials, and
// the token after an Authorization header's scheme; the URL's password; and the values of its
// query parameters named as credentials, as written and decoded. The daemon scrubs them from
// what runs print and from their errors (which quote the URL) before anything is stored,
// logged or shown: a receiver that echoes its request gives none of them away.
func (c HTTPConfig) Credentials() []string {
	var out credentials
	for name, v := range c.Headers {
		if !CredentialName(name) {
			continue
		}
		out.add(v)
		if _, token, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
			out.add(strings.TrimSpace(token))
		}
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return out
	}
	if p, ok := u.User.Password(); ok {
		out.add(p, url.QueryEscape(p), url.PathEscape(p))
	}
	for _, part := range strings.Split(u.RawQuery, "&") {
		name, raw, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil && CredentialName(n) {
			v, _ := url.QueryUnescape(raw)
			out.add(raw, v)
		}
	}
	return out
}

// Credentials returns the values of c's variables named as credentials (API_KEY, DB_PASSWORD,
// ...): the daemon scrubs them from what the program prints.
func (c ExecConfig) Credentials() []string {
	var out credentials
	for name, v := range c.Env {
		if CredentialName(name) {
			out.add(v)
		}
	}
	return out
}
