package kinds

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// credentialWords are the words of a header, query parameter or variable name that say its
// value is a credential (Authorization, X-Api-Key, access_token, DB_PASSWORD, ...).
var credentialWords = []string{"auth", "authorization", "token", "secret", "password", "passwd", "passphrase", "pass", "pwd",
	"key", "apikey", "cookie", "credential", "credentials", "signature", "session", "sessionid", "private", "jwt"}

// authSchemes are the schemes of an Authorization header, no credential on their own.
var authSchemes = []string{"basic", "bearer", "digest", "token", "negotiate"}

// minCredential is the shortest value taken for a credential: a shorter one would be replaced
// wherever it appears in a run's output, and protects little.
const minCredential = 6

// CredentialName reports whether a header, query parameter or environment variable of this name
// holds a credential: whether one of its words (split at anything not a letter or digit, and
// where a lower-case letter meets an upper-case one) is a credential word. AUTHOR, MONKEY_MODE
// and sort_key's neighbours are not; API_KEY, X-Api-Key and accessToken are.
func CredentialName(name string) bool {
	var words []string
	start := 0
	for i, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			words, start = append(words, name[start:i]), i+1
		case i > start && unicode.IsUpper(r) && unicode.IsLower(rune(name[i-1])):
			words, start = append(words, name[start:i]), i
		}
	}
	words = append(words, name[start:])
	return slices.ContainsFunc(words, func(w string) bool { return slices.Contains(credentialWords, strings.ToLower(w)) })
}

// credentials collects values that can be credentials, without repeats: of at least
// minCredential bytes, and not a number or a truth value (AUTH_ENABLED: true, SESSION_TTL: 3600).
type credentials []string

func (c *credentials) add(vs ...string) {
	for _, v := range vs {
		if _, err := strconv.ParseFloat(v, 64); err == nil || len(v) < minCredential || slices.Contains(*c, v) {
			continue
		}
		if _, err := strconv.ParseBool(v); err != nil {
			*c = append(*c, v)
		}
	}
}

// Credentials returns the credentials in c: the values of its headers named as credentials, and
// the token after an Authorization header's scheme; the URL's password, and the Basic
// credentials the client makes of it; and the values of its query parameters named as
// credentials, as written and decoded. The daemon scrubs them from what runs print and from
// their errors (which quote the URL) before anything is stored, logged or shown: a receiver
// that echoes its request gives none of them away.
func (c HTTPConfig) Credentials() []string {
	var out credentials
	for name, v := range c.Headers {
		if !CredentialName(name) || slices.ContainsFunc(authSchemes, func(s string) bool { return strings.EqualFold(strings.TrimSpace(v), s) }) {
			continue
		}
		out.add(v)
		if _, token, ok := strings.Cut(strings.TrimSpace(v), " "); ok && strings.HasSuffix(strings.ToLower(name), "authorization") {
			out.add(strings.TrimSpace(token))
		}
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return out
	}
	if p, ok := u.User.Password(); ok {
		// The client sends the URL's user and password as Basic credentials, which a receiver
		// may echo.
		out.add(p, url.QueryEscape(p), url.PathEscape(p), base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+p)))
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
