// Package config is the scheduler command's configuration: the keys of its YAML file and their
// types and defaults, the reading of that file with the SCHEDULER_* environment (through a
// private viper, so that nothing under internal/ reads viper), the KEY_file secrets, and the
// validation that reports every problem with its key path.
//
// It reads a configuration once and builds the runner's table from it (LoadTable): `validate`
// checks, `run` starts with and a reload swaps in that one result, so the three cannot disagree.
// LoadForRun adds the one check of the process itself, whether it may run exec jobs as the users
// they name. Building the table connects nowhere: jobs write through the fenced transaction the
// runner binds to each attempt. The package lives under the command, so that only the command
// can import it.
package config
