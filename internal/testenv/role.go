package testenv

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// MustRole creates a login role named after name (made unique on the cluster) for the database of dsn, a
// DSN that MustDatabase returned, and runs setup there as the superuser, each statement with
// {role} replaced by the role's quoted name. It returns the database's DSN for the new role. In
// tb.Cleanup the role's objects and grants are dropped, and then the role.
func MustRole(tb testing.TB, dsn, name string, setup ...string) string {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatalf("testenv: role %s: parse dsn: %v", name, err)
	}
	// Roles belong to the cluster, not to the database: the database's
	// name, hashed, keeps the name unique and short.
	h := fnv.New32a()
	_, _ = h.Write([]byte(u.Path))
	role := fmt.Sprintf("%s_%08x", name, h.Sum32())
	quoted := pgx.Identifier{role}.Sanitize()
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	run := func(ctx context.Context, stmts ...string) error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		for _, s := range stmts {
			if _, err := conn.Exec(ctx, strings.ReplaceAll(s, "{role}", quoted)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := run(ctx, `CREATE ROLE `+quoted+` LOGIN`); err != nil {
		tb.Fatalf("testenv: create role %s: %v", role, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
		defer cancel()
		if err := run(ctx, `DROP OWNED BY `+quoted, `DROP ROLE `+quoted); err != nil {
			tb.Errorf("testenv: drop role %s: %v", role, err)
		}
	})
	if err := run(ctx, setup...); err != nil {
		tb.Fatalf("testenv: set up role %s: %v", role, err)
	}
	u.User = url.User(role)
	return u.String()
}

// MustPasswordRole creates a superuser login role named after name whose password is password,
// as MustRole creates and drops one, and returns the database's DSN for that role with its
// password. The test server trusts loopback connections, so it does not check the password;
// it is the secret a daemon holds all the same.
func MustPasswordRole(tb testing.TB, dsn, name, password string) string {
	tb.Helper()
	roleDSN := MustRole(tb, dsn, name, `ALTER ROLE {role} SUPERUSER PASSWORD '`+strings.ReplaceAll(password, "'", "''")+`'`)
	u, err := url.Parse(roleDSN)
	if err != nil {
		tb.Fatalf("testenv: role %s: parse dsn: %v", name, err)
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String()
}

// RoleName returns the name of the role a DSN of MustRole connects as.
func RoleName(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return ""
	}
	return u.User.Username()
}
