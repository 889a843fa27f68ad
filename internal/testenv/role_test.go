package testenv

import (
	"context"
	"net/url"
	"testing"
	"time"
)

// TestMustPasswordRole: the DSN connects as a superuser role of its own and carries the
// password; the cleanup drops the role.
func TestMustPasswordRole(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := MustDatabase(t)
	const password = "it's-a-Pa55"
	var role string
	t.Run("Creates", func(t *testing.T) {
		roleDSN := MustPasswordRole(t, dsn, "secret", password)
		u, err := url.Parse(roleDSN)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := u.User.Password(); !ok || got != password {
			t.Fatalf("password in the DSN = %q, %v; want %q", got, ok, password)
		}
		role = RoleName(roleDSN)
		var user string
		var super bool
		if err := Connect(ctx, t, roleDSN).QueryRow(ctx,
			"SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&user, &super); err != nil {
			t.Fatalf("connect as the role: %v", err)
		}
		if user != role || !super {
			t.Fatalf("connected as %q (superuser %v), want %q, a superuser", user, super, role)
		}
	})
	var n int
	if err := Connect(ctx, t, dsn).QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = $1", role).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if role == "" || n != 0 {
		t.Fatalf("role %q: %d left after the cleanup, want none", role, n)
	}
}
