package commands

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
)

func TestDashboardHelp(t *testing.T) {
	root := NewRoot()
	var out strings.Builder
	root.SetOut(&out)
	root.SetArgs([]string{"dashboard", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"--kubeconfig", "--address string", "127.0.0.1:8001", "-n, --namespace", "Fleet", "Placements", "Rollouts",
		"Add-ons", "Plugins", "RBAC", "list and watch", "Security", "token", "HttpOnly", "DNS rebinding", "GET only", "non-loopback IP"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("flotilla dashboard --help does not mention %q:\n%s", w, out.String())
		}
	}
}

func TestDashboardURL(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1:8001", "http://127.0.0.1:8001/?token=t"},
		{"[::]:9000", "http://127.0.0.1:9000/?token=t"},
		{"0.0.0.0:9000", "http://127.0.0.1:9000/?token=t"},
		{"[::1]:9000", "http://[::1]:9000/?token=t"},
	} {
		if got := dashboardURL(tc.addr, "t"); got != tc.want {
			t.Errorf("dashboardURL(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
}

// TestDashboardBoundIPs: a non-loopback bind IP is accepted as Host, and the printed URL
// names it; loopback and unspecified binds add nothing (the URL is 127.0.0.1's).
func TestDashboardBoundIPs(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want string
	}{
		{"127.0.0.1:8001", ""}, {"[::1]:9000", ""}, {"0.0.0.0:9000", ""}, {"[::]:9000", ""}, {"localhost:9000", ""},
		{"192.0.2.7:9000", "192.0.2.7"}, {"[2001:db8::1]:9000", "2001:db8::1"},
	} {
		if got := strings.Join(boundIPs(tc.addr), ","); got != tc.want {
			t.Errorf("boundIPs(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
	if got := dashboardURL("192.0.2.7:9000", "t"); got != "http://192.0.2.7:9000/?token=t" {
		t.Errorf("dashboardURL on 192.0.2.7 = %s, want the bound IP", got)
	}
}

// TestDashboardCommand runs `flotilla dashboard` against a hub API server: it prints the
// URL with its token, the URL opens the page and the event stream, and Ctrl-C (the
// context) ends it cleanly.
func TestDashboardCommand(t *testing.T) {
	fleet := fleettest.StartT(t, environment.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	root := NewRoot()
	root.SetOut(pw)
	root.SetErr(io.Discard)
	root.SetArgs([]string{"dashboard", "--kubeconfig", fleet.Hub.KubeconfigPath, "--address", "127.0.0.1:0", "-n", "team-a"})
	done := make(chan error, 1)
	go func() {
		done <- root.ExecuteContext(ctx)
		pw.Close()
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "Dashboard: "); ok {
				lines <- u
			}
		}
	}()
	var url string
	select {
	case url = <-lines:
	case err := <-done:
		t.Fatalf("flotilla dashboard ended before printing its URL: %v", err)
	case <-ctx.Done():
		t.Fatal("flotilla dashboard printed no URL within 2 minutes")
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/?token=") {
		t.Fatalf("printed URL %q: want http://127.0.0.1:PORT/?token=...", url)
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.RawQuery != "" {
		t.Fatalf("opening %s: %d at %s; want the page, redirected to drop the token", url, resp.StatusCode, resp.Request.URL)
	}
	base := strings.TrimSuffix(url[:strings.Index(url, "?")], "/")
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, base+"/api/stream", nil)
	stream, err := (&http.Client{Jar: jar}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("api/stream with the cookie: %d", stream.StatusCode)
	}
	br := bufio.NewReader(stream.Body)
	var events []string
	for len(events) < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading api/stream after events %v: %v", events, err)
		}
		if e, ok := strings.CutPrefix(strings.TrimSpace(line), "event: "); ok {
			events = append(events, e)
		}
	}
	if strings.Join(events, ",") != "hello,snapshot" {
		t.Fatalf("api/stream began with %v, want hello, snapshot", events)
	}
	noCookie, err := http.Get(base + "/api/stream")
	if err != nil {
		t.Fatal(err)
	}
	noCookie.Body.Close()
	if noCookie.StatusCode != http.StatusUnauthorized {
		t.Fatalf("api/stream without the cookie: %d, want 401", noCookie.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("flotilla dashboard ended with %v after Ctrl-C, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("flotilla dashboard did not end within 30s of its context")
	}
}
