package fence

import (
	"context"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"scheduler/internal/testenv"
)

// oneMessageRecipe is the README's one-message script pattern: the script, its psql command
// line, and the -c form.
type oneMessageRecipe struct {
	script, fileCommand, inlineCommand string
}

var (
	reOneMessageScript = regexp.MustCompile("(?s)\n( *)```sql\n(( *)BEGIN \\\\;\n.*?)\n *```\n")
	reFileCommand      = regexp.MustCompile("`(psql -X -v ON_ERROR_STOP=1 -v token=\"\\$SCHEDULER_FENCE_TOKEN\" -f job\\.sql)`")
	reInlineCommand    = regexp.MustCompile("`(psql -X -v ON_ERROR_STOP=1 -c \"BEGIN; SELECT scheduler\\.fence_verify[^`]*\")`")
)

// readOneMessageRecipe takes the one-message pattern from the README, exactly as written there
// (the code block without its indentation).
func readOneMessageRecipe(t *testing.T) oneMessageRecipe {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	m := reOneMessageScript.FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("README: no sql block beginning with BEGIN \\; (the one-message script pattern)")
	}
	var lines []string
	for _, l := range strings.Split(m[2], "\n") {
		lines = append(lines, strings.TrimPrefix(l, m[3]))
	}
	r := oneMessageRecipe{script: strings.Join(lines, "\n") + "\n"}
	if f := reFileCommand.FindStringSubmatch(readme); f != nil {
		r.fileCommand = f[1]
	} else {
		t.Fatal("README: no psql command line for the one-message script")
	}
	if c := reInlineCommand.FindStringSubmatch(readme); c != nil {
		r.inlineCommand = c[1]
	} else {
		t.Fatal("README: no psql -c form of the one-message pattern")
	}
	return r
}

// TestPostgres_OneMessageScript runs the README's one-message script pattern, its exact text
// and command lines, with the real psql as a job role set up by the README's recipe, through a
// counter of the messages psql sends: each form sends one message; a token that is not the
// fence (older, newer, or empty) commits nothing and psql exits non-zero (3 for the script, 1
// for -c); the fence's own token commits the row.
func TestPostgres_OneMessageScript(t *testing.T) {
	recipe := readOneMessageRecipe(t)
	s, dsn := mustPostgresStore(t, Config{})
	ctx := testCtx(t)
	if err := s.RaiseAll(ctx, []string{"nightly"}, 500); err != nil {
		t.Fatal(err)
	}
	roleDSN := testenv.MustRole(t, dsn, "nightly_job", jobRoleRecipe...)
	q := testenv.MustQueryCounter(t, roleDSN)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.sql"), []byte(recipe.script), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, form := range []struct {
		name, command string
		refusedExit   int
	}{
		{"File", recipe.fileCommand, 3},
		{"Inline", recipe.inlineCommand, 1},
	} {
		t.Run(form.name, func(t *testing.T) {
			pgExec(t, ctx, dsn, `DELETE FROM public.invoices`)
			for _, tok := range []string{"400", "501", ""} {
				before := q.Count('Q')
				out, code := runShell(t, ctx, dir, form.command, q.DSN(), tok)
				if code == 0 || (tok != "" && code != form.refusedExit) {
					t.Fatalf("token %q against fence 500: exit %d, want %d\n%s", tok, code, form.refusedExit, out)
				}
				if tok != "" && !strings.Contains(out, "fenced out") {
					t.Fatalf("token %q against fence 500: output %q, want fence_verify's refusal", tok, out)
				}
				if n := countInvoices(t, ctx, s); n != 0 {
					t.Fatalf("token %q against fence 500: %d invoices committed, want 0", tok, n)
				}
				if got := q.Count('Q') - before; got != 1 {
					t.Fatalf("token %q: psql sent %d messages, want 1", tok, got)
				}
			}
			before := q.Count('Q')
			if out, code := runShell(t, ctx, dir, form.command, q.DSN(), "500"); code != 0 {
				t.Fatalf("token 500, the fence: exit %d\n%s", code, out)
			}
			if n := countInvoices(t, ctx, s); n != 1 {
				t.Fatalf("token 500, the fence: %d invoices committed, want 1", n)
			}
			if got := q.Count('Q') - before; got != 1 {
				t.Fatalf("token 500: psql sent %d messages, want 1", got)
			}
		})
	}
}

// runShell runs command with sh in dir, as a job's script would run it: the token in
// SCHEDULER_FENCE_TOKEN, the server and role of dsn in psql's PG* variables. It returns the
// output and the exit status.
func runShell(t *testing.T, ctx context.Context, dir, command, dsn, token string) (string, int) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cmd := osexec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "SCHEDULER_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"SCHEDULER_FENCE_TOKEN="+token,
		"PGHOST="+u.Hostname(), "PGPORT="+u.Port(), "PGUSER="+u.User.Username(),
		"PGDATABASE="+strings.TrimPrefix(u.Path, "/"), "PGSSLMODE=disable")
	return outputAndStatus(t, cmd)
}
