// Package tokenfile reads a bearer token from a file that only its owner can read: the web
// console's admin token. Whoever holds the token can pause, resume and trigger every job, so a
// file its group or others can open, a token too short to resist guessing over the network,
// or one that cannot travel in an Authorization header is refused with the reason and the
// remedy. Errors name the file and never quote its content.
package tokenfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MinBytes is the shortest token accepted.
const MinBytes = 16

// maxBytes bounds what is read: a token is one line.
const maxBytes = 4 << 10

// Read returns the token in the file at path without its trailing line break; "" for an
// empty path, which configures no token. open opens the file as every file of the
// configuration is opened: non-blocking, a regular file only, with a deadline on a read that
// could wait (os.ErrDeadlineExceeded past it).
func Read(path string, open func(string) (*os.File, error)) (string, error) {
	if path == "" {
		return "", nil
	}
	// Stat before open, so that a device or a named pipe is refused without being opened.
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("cannot read the admin token: %w", err)
	}
	if err := check(path, st); err != nil {
		return "", err
	}
	// Non-blocking, and checked again once open, so that a pipe put in the file's place since
	// the stat does not wait for a writer.
	f, err := open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read the admin token: %w", err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return "", fmt.Errorf("cannot read the admin token: %w", err)
	}
	if err := check(path, st); err != nil {
		return "", err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// A file whose reads wait, which open did not already refuse as the kernel's (as it
		// does /proc/kmsg): without the deadline `validate` would wait on it for good.
		return "", fmt.Errorf("cannot read the admin token: %s gave no data: it is not a file on disk", path)
	}
	if err != nil {
		return "", fmt.Errorf("cannot read the admin token: %w", err)
	}
	token := strings.TrimRight(string(data), "\r\n")
	switch {
	case len(data) > maxBytes:
		return "", fmt.Errorf("%s is larger than %d bytes: it must hold the admin token alone", path, maxBytes)
	case token == "":
		return "", fmt.Errorf("%s is empty: write the admin token in it, or leave the key empty for a read-only console", path)
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", fmt.Errorf("%s holds spaces, line breaks or control characters: the admin token must be one word, as sent in an Authorization header", path)
	case len(token) < MinBytes:
		return "", fmt.Errorf("the admin token in %s is %d bytes long, shorter than %d: it could be guessed (make one with `openssl rand -hex 32`)", path, len(token), MinBytes)
	}
	return token, nil
}

// check refuses anything but a regular file that only its owner may read or write.
func check(path string, st os.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o, open to its group or others: the admin token must be readable by its owner only (chmod 600 %s)", path, perm, path)
	}
	return nil
}
