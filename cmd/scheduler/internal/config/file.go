package config

import "scheduler/cmd/scheduler/internal/config/internal/filelimit"

// MaxConfigBytes is the largest configuration file accepted. A cron table is small; the bound
// keeps `validate`, `run` and a SIGHUP reload fast and their memory bounded whatever the path
// names (a device, a runaway generator).
const MaxConfigBytes = 16 << 20

// MaxJobs is the most jobs a configuration may hold. Validating a job computes its next slots,
// so the bound keeps `validate` and a reload quick.
const MaxJobs = 100_000

var (
	configLimit = filelimit.Limit{Bytes: MaxConfigBytes, Kind: "configuration"}
	secretLimit = filelimit.Limit{Bytes: MaxSecretBytes, Kind: "secret"}
	// tlsLimit bounds a PEM file: a bundle of every public CA is a fifth of it.
	tlsLimit = filelimit.Limit{Bytes: 1 << 20, Kind: "TLS"}
)
