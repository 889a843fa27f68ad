package testenv

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ProcessGone reports whether process pid has exited: it no longer exists, or it is a zombie
// that nothing has reaped yet (an orphan whose new parent has not waited for it).
func ProcessGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := strings.LastIndexByte(string(b), ')')
	return err == nil && i > 0 && strings.HasPrefix(string(b[i+1:]), " Z")
}
