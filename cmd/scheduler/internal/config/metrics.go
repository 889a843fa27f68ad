package config

// MetricsConfig bounds the Prometheus series the daemon exports.
type MetricsConfig struct {
	// PerJob says whether the per-job series (labelled job) are exported: on, off, or auto,
	// which exports them while the table has at most status.PerJobAutoLimit jobs and
	// aggregates them under job="*" above that. Default: auto.
	PerJob string `mapstructure:"per_job"`
}
