//go:build !linux

package main

import "os"

// currentUserSwitch reads this process's uid; without Linux capabilities only root may switch.
func currentUserSwitch() userSwitch { return userSwitch{euid: os.Geteuid()} }
