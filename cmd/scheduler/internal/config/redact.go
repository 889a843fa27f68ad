package config

import (
	"net/url"
	"regexp"
	"strings"
)

// kvPassword matches password=... in a key=value DSN, quoted or not.
var kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// RedactDSN hides the password of a Postgres DSN, URL or key=value form, for logs and status.
func RedactDSN(dsn string) string {
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
