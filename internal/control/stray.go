package control

import (
	"strings"
	"unicode/utf8"
)

// maxShownKey bounds how much of a key a log line or a status warning shows: a key written by
// hand may be of any size, and a warning that repeats it whole buries everything else.
const maxShownKey = 200

// shownKey cuts key to what a log line or a warning shows.
func shownKey(key string) string {
	if len(key) <= maxShownKey {
		return key
	}
	return cut(key) + "…"
}

// cut returns the first maxShownKey bytes of key, ending on a whole character.
func cut(key string) string {
	n := maxShownKey
	for n > 0 && !utf8.RuneStart(key[n]) {
		n--
	}
	return key[:n]
}

// removeCommand returns the etcdctl command line that deletes key, quoted for a POSIX shell
// when it holds anything but plain path characters (as the election's reports do). A key too
// long to show gets the command that lists the keys beginning as it does, not a delete by that
// beginning, which could reach keys of the scheduler's own.
func removeCommand(key string) string {
	cmd, then := "etcdctl del ", ""
	if len(key) > maxShownKey {
		cmd, key, then = "etcdctl get --prefix --keys-only ", cut(key), longKeyThen
	}
	plain := key != ""
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/_.-:@+=,", r)) {
			plain = false
			break
		}
	}
	if plain {
		return cmd + key + then
	}
	return cmd + "'" + strings.ReplaceAll(key, "'", `'\''`) + "'" + then
}

// longKeyThen follows the listing of a key too long to show.
const longKeyThen = ", then etcdctl del the key it lists"
