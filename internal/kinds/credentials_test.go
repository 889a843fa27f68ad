package kinds

import (
	"encoding/base64"
	"slices"
	"testing"
)

// TestCredentials: the values a job's configuration holds as credentials, by the words of their
// names, and nothing else: no value of a name that merely contains a credential word (AUTHOR,
// MONKEY_MODE), no number or truth value, nothing under six bytes.
func TestCredentials(t *testing.T) {
	h := HTTPConfig{
		URL: "https://user:p%40ss-word@api.example/v1/x?api_key=Q%2BSECRET&page=2&accessToken=tok-123456&sort_key=name&sig=",
		Headers: map[string]string{"Authorization": "Bearer HEADER-SECRET", "X-Api-Key": "k-456789",
			"Content-Type": "application/json", "Cookie": "sid=abcdef", "X-Token": "ab", "X-Auth-Mode": "none",
			"X-Auth-Info": "user admin1", "Proxy-Authorization": "Bearer"},
	}
	got := h.Credentials()
	basic := base64.StdEncoding.EncodeToString([]byte("user:p@ss-word"))
	for _, want := range []string{"Bearer HEADER-SECRET", "HEADER-SECRET", "k-456789", "sid=abcdef", "p@ss-word", "p%40ss-word",
		basic, "Q%2BSECRET", "Q+SECRET", "tok-123456", "user admin1"} {
		if !slices.Contains(got, want) {
			t.Errorf("HTTP credentials %q lack %q", got, want)
		}
	}
	for _, not := range []string{"application/json", "2", "ab", "Bearer", "none", "name", "admin1", ""} {
		if slices.Contains(got, not) {
			t.Errorf("HTTP credentials %q hold %q, which is no credential", got, not)
		}
	}
	e := ExecConfig{Env: map[string]string{"API_KEY": "sk-live-123456", "DB_PASSWORD": "hunter22", "REGION": "eu-west-1",
		"GITHUB_TOKEN": "ghp", "AUTH_ENABLED": "true", "SESSION_TIMEOUT": "3600", "AUTHOR": "John Smith", "MONKEY_MODE": "json-mode",
		"secretKeyBase": "s3cr3t-base"}}
	if got, want := sorted(e.Credentials()), []string{"hunter22", "s3cr3t-base", "sk-live-123456"}; !slices.Equal(got, want) {
		t.Errorf("exec credentials %q, want %q", got, want)
	}
	if got := (HTTPConfig{URL: "http://[::1"}).Credentials(); len(got) != 0 {
		t.Errorf("credentials of an unparsable URL: %q", got)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
