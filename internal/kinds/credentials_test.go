package kinds

import (
	"slices"
	"testing"
)

// TestCredentials: the values a job's configuration holds as credentials, by their names, and
// nothing else.
func TestCredentials(t *testing.T) {
	h := HTTPConfig{
		URL: "https://user:p%40ss-word@api.example/v1/x?api_key=Q%2BSECRET&page=2&access_token=tok-123&sig=",
		Headers: map[string]string{"Authorization": "Bearer HEADER-SECRET", "X-Api-Key": "k-456789",
			"Content-Type": "application/json", "Cookie": "sid=abcdef", "X-Token": "ab"},
	}
	got := h.Credentials()
	for _, want := range []string{"Bearer HEADER-SECRET", "HEADER-SECRET", "k-456789", "sid=abcdef", "p@ss-word", "p%40ss-word",
		"Q%2BSECRET", "Q+SECRET", "tok-123"} {
		if !slices.Contains(got, want) {
			t.Errorf("HTTP credentials %q lack %q", got, want)
		}
	}
	for _, not := range []string{"application/json", "2", "ab", "Bearer", ""} {
		if slices.Contains(got, not) {
			t.Errorf("HTTP credentials %q hold %q, which is no credential", got, not)
		}
	}
	e := ExecConfig{Env: map[string]string{"API_KEY": "sk-live-123456", "DB_PASSWORD": "hunter22", "REGION": "eu-west-1", "GITHUB_TOKEN": "ghp"}}
	if got := e.Credentials(); !slices.Equal(sorted(got), []string{"hunter22", "sk-live-123456"}) {
		t.Errorf("exec credentials %q, want the API key and the password (not the region, not a value under 4 bytes)", got)
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
