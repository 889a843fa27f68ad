package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"scheduler/internal/status"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

// browser starts a headless Chromium for the test and returns a tab's context, bounded by
// timeout. Without the browser the test fails, naming the package to install.
func browser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("the console's browser tests need headless Chromium at %s: install the Debian package chromium (apt-get install chromium): %v", chromiumPath, err)
	}
	out := &syncBuffer{}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1280, 1600), chromedp.CombinedOutput(out))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	actx, stop := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(stop)
	tab, closeTab := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(closeTab)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chromium's output:\n%s", out)
		}
	})
	return tab
}

// markupJob prints markup, as a job's output may: the console must show it as text.
const markupJob = `
  - name: markup
    schedule: "* * * * * *"
    misfire: skip
    type: exec
    command: [/bin/sh, -c, "echo '<img id=injected src=x>'"]
`

// TestConsole_Browser opens the console of a running replica in a real Chromium and checks what
// a person sees: the leader's node and token, the jobs, a job's output shown as text and not
// as markup, and, after entering the admin token and clicking a job's trigger button, the
// manual run's outcome. It writes a screenshot of the page.
func TestConsole_Browser(t *testing.T) {
	forEachDaemonStore(t, markupJob, func(t *testing.T, c *cluster) {
		withAdminToken(t, c)
		r := c.start("console-a")
		var addr string
		var leader *status.Leader
		c.wait("console-a leads and serves http", func() bool {
			doc := c.status()
			for _, rep := range doc.Replicas {
				if rep.Node == r.node && doc.Leader != nil && doc.Leader.Node == r.node {
					addr, leader = rep.HTTPAddr, doc.Leader
				}
			}
			return addr != ""
		})
		tab := browser(t, 90*time.Second)
		url := "http://" + addr + "/"
		if err := chromedp.Do(tab, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#leader .leader-node"))); err != nil {
			t.Fatalf("open %s: %v", url, err)
		}
		see := func(sel string) string {
			t.Helper()
			text, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS(sel)))
			if err != nil {
				t.Fatalf("read %s: %v", sel, err)
			}
			return strings.TrimSpace(text)
		}
		if node, token := see("#leader .leader-node"), see("#leader .leader-token"); node != leader.Node || token != strconv.FormatInt(leader.Token, 10) {
			t.Fatalf("the page shows leader %q with token %q, want %q with %d", node, token, leader.Node, leader.Token)
		}
		for _, job := range []string{"tick", "yearly", "markup"} {
			if name := see(fmt.Sprintf(`article[data-job=%q] .job-name`, job)); name != job {
				t.Fatalf("job card %s shows the name %q", job, name)
			}
		}
		if words := see(`article[data-job="tick"] .words`); words != "every second" {
			t.Errorf("tick's schedule reads %q, want \"every second\"", words)
		}
		if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS(`article[data-job="markup"] tr.status-succeeded pre`))); err != nil {
			t.Fatalf("wait for markup's output: %v", err)
		}
		if out := see(`article[data-job="markup"] tr.status-succeeded pre`); out != "<img id=injected src=x>" {
			t.Errorf("markup's output reads %q, want the markup as text", out)
		}
		if n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("#injected, img").length`)); err != nil || n != 0 {
			t.Fatalf("%d elements made of a job's output (err %v), want 0", n, err)
		}
		// Read-only until the token is entered: no action buttons.
		if n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("button[data-action]").length`)); err != nil || n != 0 {
			t.Fatalf("%d action buttons before the token was entered (err %v), want 0", n, err)
		}
		trigger := chromedp.CSS(`article[data-job="yearly"] button[data-action="trigger"]`)
		manual := chromedp.CSS(`article[data-job="yearly"] tr.run-manual.status-succeeded`)
		if err := chromedp.Do(tab,
			chromedp.SendKeys(chromedp.CSS("#token"), consoleToken),
			chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
			chromedp.WaitVisible(trigger),
			chromedp.Click(trigger),
			chromedp.WaitVisible(manual),
		); err != nil {
			t.Fatalf("trigger yearly from the console: %v\nlogs:\n%s", err, r.logs)
		}
		row := see(`article[data-job="yearly"] tr.run-manual`)
		for _, want := range []string{"(manual)", "succeeded", strconv.FormatInt(leader.Token, 10), r.node} {
			if !strings.Contains(row, want) {
				t.Errorf("the triggered run's row reads %q, want %q in it", row, want)
			}
		}
		if msg := see("#message"); !strings.Contains(msg, "yearly triggered") {
			t.Errorf("the page says %q after the click, want \"yearly triggered\"", msg)
		}
		runs := c.history("yearly")
		if len(runs) != 1 || !runs[0].Manual || runs[0].Status != "succeeded" {
			t.Fatalf("yearly's history=%+v, want one manual run succeeded", runs)
		}
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		shot := filepath.Join(t.ArtifactDir(), "console.png")
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot of the console: %s (kept with go test -artifacts)", shot)
	})
}
