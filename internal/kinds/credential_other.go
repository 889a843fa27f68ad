//go:build !linux

package kinds

import "os"

// CurrentUserSwitch reads this process's uid; without Linux capabilities only root may switch.
func CurrentUserSwitch() UserSwitch { return UserSwitch{EUID: os.Geteuid()} }
