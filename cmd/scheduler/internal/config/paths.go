package config

import "path/filepath"

// resolvePaths makes the configuration's relative file paths relative to dir, the directory
// of the configuration file, so that a command means the same files from whichever directory
// it is started: data_dir, the etcd TLS files, the console's admin token file and an exec job's dir. A job's command is left
// as written: a bare program name is looked up in PATH, as a shell would.
func resolvePaths(c *Config, dir string) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		dir = abs
	}
	resolve := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	resolve(&c.DataDir)
	resolve(&c.Etcd.TLS.CAFile)
	resolve(&c.Etcd.TLS.CertFile)
	resolve(&c.Etcd.TLS.KeyFile)
	resolve(&c.HTTP.AdminTokenFile)
	resolve(&c.Defaults.Dir)
	for i := range c.Jobs {
		resolve(&c.Jobs[i].Dir)
	}
}
