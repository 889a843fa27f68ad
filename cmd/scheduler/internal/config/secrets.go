package config

import (
	"scheduler/cmd/scheduler/internal/config/internal/secretfile"
	"scheduler/cmd/scheduler/internal/redact"
)

// secretKey is a configuration key that holds a secret. Each has a KEY_file form whose value is
// the path of a file holding the secret (systemd's LoadCredential= puts them in $CREDENTIALS_DIRECTORY),
// and every configured secret is scrubbed from the output of runs.
type secretKey struct {
	key   string                // the key path, such as store.dsn
	value func(*Config) string  // the secret as loaded
	parts func(string) []string // secrets inside the value, such as a DSN's password; may be nil
}

// secretKeys lists the configuration keys that hold secrets. A new secret key is one line here.
func secretKeys() []secretKey {
	return []secretKey{
		{key: "etcd.password", value: func(c *Config) string { return c.Etcd.Password }},
		{key: "store.dsn", value: func(c *Config) string { return c.Store.DSN }, parts: redact.DSNSecrets},
		{key: "store.job_dsn", value: func(c *Config) string { return c.Store.JobDSN }, parts: redact.DSNSecrets},
		{key: "redis.password", value: func(c *Config) string { return c.Redis.Password }},
		{key: "outbox.smtp.password", value: func(c *Config) string { return c.Outbox.SMTP.Password }},
	}
}

// secretFileSuffix turns a secret key into the key naming its file.
const secretFileSuffix = secretfile.Suffix

// setSecretFileDefaults makes viper know every KEY_file key, so that it also reads them from the
// environment (SCHEDULER_STORE_DSN_FILE).
func setSecretFileDefaults(set func(key string, value any)) {
	for _, s := range secretKeys() {
		set(s.key+secretFileSuffix, "")
	}
}

// resolveSecretFiles replaces every KEY_file setting of raw, the settings before decoding, by
// KEY set to the file's content (secretfile.Resolve), relative paths read from dir, the
// configuration file's directory, as every relative path of the configuration is (resolvePaths).
func resolveSecretFiles(raw map[string]any, dir string) (problems []Problem) {
	keys := make([]string, 0, len(secretKeys()))
	for _, s := range secretKeys() {
		keys = append(keys, s.key)
	}
	for _, p := range secretfile.Resolve(raw, dir, keys, secretLimit) {
		problems = append(problems, Problem(p))
	}
	return problems
}

// MaxSecretBytes is the largest secret file accepted (a password, a DSN): the same checks as the
// configuration file (filelimit.Read), with a bound fit for a secret.
const MaxSecretBytes = 64 << 10

// Secrets returns every configured secret value and the secrets inside them.
func (c *Config) Secrets() []string {
	seen := map[string]bool{}
	var out []string
	add := func(vs ...string) {
		for _, v := range vs {
			if v != "" && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	for _, s := range secretKeys() {
		switch v := s.value(c); {
		case v == "":
		case s.parts == nil:
			add(v)
		case len(s.parts(v)) > 0: // a DSN without a password is no secret
			add(append([]string{v}, s.parts(v)...)...)
		}
	}
	add(c.HTTP.AdminToken)
	return out
}

// Credentials returns the jobs' own credentials: their headers, URLs and variables named so
// (kinds.HTTPConfig.Credentials, kinds.ExecConfig.Credentials), scrubbed as the secrets are.
func (c *Config) Credentials() (out []string) {
	for _, j := range c.Jobs {
		out = append(append(out, httpConfig(j.JobSpec).Credentials()...), execConfig(j.JobSpec, nil).Credentials()...)
	}
	return out
}
