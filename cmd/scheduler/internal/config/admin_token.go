package config

import (
	"os"
	"strings"
)

// MinAdminTokenBytes is the shortest admin token accepted: whoever has it can pause, resume and
// trigger every job, so it must not be guessable over the network.
const MinAdminTokenBytes = 16

// validateAdminToken reads http.admin_token_file, when set, into the configuration. The file
// must be a regular file that neither its group nor others can read or write, the token one
// line of printable characters, long enough not to be guessed: it is sent as a bearer token.
func (c *Config) validateAdminToken(p *problems) {
	const key = "http.admin_token_file"
	c.HTTP.adminToken = ""
	path := c.HTTP.AdminTokenFile
	if path == "" {
		return
	}
	st, err := os.Stat(path)
	if err != nil {
		p.add(key, "cannot read the admin token: %v", err)
		return
	}
	if perm := st.Mode().Perm(); st.Mode().IsRegular() && perm&0o077 != 0 {
		p.add(key, "%s has mode %04o, open to its group or others: the admin token must be readable by its owner only (chmod 600 %s)", path, perm, path)
		return
	}
	data, err := readBoundedFile(path, secretLimit)
	if err != nil {
		// The error names the path; the content, a secret, is never quoted.
		p.add(key, "cannot read the admin token: %v", err)
		return
	}
	token := strings.TrimRight(string(data), "\r\n")
	switch {
	case token == "":
		p.add(key, "%s is empty: write the admin token in it, or leave the key empty for a read-only console", path)
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		p.add(key, "%s holds spaces, line breaks or control characters: the admin token must be one word, as sent in an Authorization header", path)
	case len(token) < MinAdminTokenBytes:
		p.add(key, "the admin token in %s is %d bytes long, shorter than %d: anyone could guess it (use `openssl rand -hex 32`)", path, len(token), MinAdminTokenBytes)
	default:
		c.HTTP.adminToken = token
	}
}
