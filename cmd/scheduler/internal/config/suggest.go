package config

// Nearest returns the candidate nearest to name if it lies within a typo's distance, or "": the
// "did you mean" of a job name or a key.
func Nearest(name string, candidates []string) string { return closest(name, candidates) }
