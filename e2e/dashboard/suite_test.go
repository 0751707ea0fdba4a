// Package dashboard is the dashboard's end-to-end suite in a real browser: a real hub and two
// real managed clusters with in-process klusterlets (e2e/internal/fleettest), the hub
// in-process, the dashboard server (hub/dashboard) in-process as `flotilla dashboard` runs
// it, with the hub admin's rest.Config, on a loopback listener, and one headless Chromium
// (core/environment/browser) that loads the page with its token and reads it through the
// DOM contract of issue 26 (data-* attributes), as a user's browser would.
package dashboard_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/browser"
	"github.com/flotilla-dev/flotilla/e2e/internal/fleettest"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/dashboard"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/klusterlet"
)

func TestDashboard(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Dashboard e2e (Chromium)")
}

const (
	cluster1 = "cluster1"
	cluster2 = "cluster2"
	// ScreenshotsEnv names the directory the screenshots spec writes its PNGs to (make
	// dashboard-screenshots: docs/dashboard, the README's images); unset, a temporary one.
	ScreenshotsEnv = "FLOTILLA_SCREENSHOTS_DIR"
	// The browser window: wide enough for the fleet table's columns.
	windowWidth, windowHeight = 1440, 900
)

var (
	suiteCtx  context.Context
	env       *fleettest.Env
	hubClient client.Client
	managed   = map[string]client.Client{}
	// browserCtx is the one Chromium's; every page is a tab of it.
	browserCtx context.Context
	// admin is the page of the dashboard served with the hub admin's rest.Config.
	admin *page
)

// On a failed spec, what the admin's page showed goes to the report.
var _ = ReportAfterEach(func(r SpecReport) {
	if !r.Failed() || admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(admin.tab, 10*time.Second)
	defer cancel()
	html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("main") || document.body).outerHTML.slice(0, 20000)`))
	if err != nil {
		html = "reading the page: " + err.Error()
	}
	AddReportEntry("the admin's page (main, first 20,000 characters)", html)
})

var _ = BeforeSuite(func(ctx SpecContext) {
	// Requests on suiteCtx (helpers, cleanups) end before go test's -timeout kills the binary,
	// so a blocked one fails naming what it waited for; specs bound theirs tighter.
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithTimeout(context.Background(), 35*time.Minute)
	DeferCleanup(cancel)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)

	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{})
	env = fleettest.Start(suiteCtx, fleettest.Options{
		// A KWOK Node per cluster: the fleet view has capacity to show, Deployments get Pods.
		Environment: environment.Options{ManagedClusters: 2, SimulatedNodes: 1},
		// managed-serviceaccount is the add-ons view's healthy built-in (Lease health, its agent
		// runs in the klusterlet).
		Hub: manager.Options{Addons: []string{builtin.ManagedServiceAccount},
			PluginCacheDir: filepath.Join(os.TempDir(), "flotilla-e2e-dashboard-wasm-cache")},
		Logger: logger,
		Klusterlet: func(string, *environment.ControlPlane) klusterlet.Options {
			// Work status quickly, so rollouts move in seconds.
			return klusterlet.Options{Work: klusterlet.WorkOptions{StatusSyncInterval: time.Second}}
		},
	})
	hubClient = env.HubClient
	for i, m := range env.Fleet.Managed {
		c, err := client.New(m.Config, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		managed[environment.ManagedClusterName(i)] = c
	}

	bctx, stop, err := browser.Start(suiteCtx, GinkgoT().TempDir(), windowWidth, windowHeight)
	Expect(err).NotTo(HaveOccurred(), "starting Chromium (make chromium)")
	DeferCleanup(stop)
	browserCtx = bctx

	url, token := serveDashboard(dashboard.Options{Config: env.Fleet.Hub.Config, Logger: logger.WithName("dashboard")})
	admin = openPage("admin", url, token, false)
}, NodeTimeout(6*time.Minute))

// serveDashboard runs a dashboard server with opts (and a fresh token) until the suite, or
// the spec that called it, ends, once it has synced, on a loopback listener; it returns the
// server's URL and token.
func serveDashboard(opts dashboard.Options) (url, token string) {
	GinkgoHelper()
	opts.Token = randomToken()
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	srv, err := dashboard.New(opts)
	Expect(err).NotTo(HaveOccurred())
	ctx, stop := context.WithCancel(suiteCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer GinkgoRecover()
		if err := srv.Start(ctx); err != nil && ctx.Err() == nil {
			Fail(fmt.Sprintf("dashboard server: %v", err))
		}
	}()
	DeferCleanup(func(ctx SpecContext) {
		stop()
		select {
		case <-done:
		case <-ctx.Done():
		}
	}, NodeTimeout(time.Minute))
	syncCtx, cancel := context.WithTimeout(suiteCtx, 2*time.Minute)
	defer cancel()
	Expect(srv.WaitForSync(syncCtx)).To(Succeed(), "the dashboard server's watches synced")
	hs := httptest.NewServer(srv.Handler())
	DeferCleanup(hs.Close)
	return hs.URL, opts.Token
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// page is a tab of the suite's Chromium showing a dashboard.
type page struct {
	name string
	tab  context.Context
}

// openPage opens a tab (in a browser context of its own when isolated, so its cookie is
// not another page's: cookies do not tell ports apart), visits url with the token, as the
// URL `flotilla dashboard` prints, and waits until the first snapshot is rendered.
func openPage(name, url, token string, isolated bool) *page {
	GinkgoHelper()
	var opts []chromedp.ContextOption
	if isolated {
		opts = append(opts, chromedp.WithNewBrowserContext())
	}
	tab, closeTab := chromedp.NewContext(browserCtx, opts...)
	DeferCleanup(closeTab)
	// The first Run opens the tab and ties it to tab (no deadline here: one would close it).
	Expect(chromedp.Do(tab)).To(Succeed(), "opening a tab for page %s", name)
	p := &page{name: name, tab: tab}
	p.do("visiting "+url+"/?token=…", chromedp.Navigate(url+"/?token="+token))
	p.waitFor("the first snapshot rendered (main#view[data-ready=true])", `document.querySelector('main#view[data-ready="true"]') !== null`, time.Minute)
	p.waitFor("the stream live (#conn[data-state=live])", `document.querySelector('#conn[data-state="live"]') !== null`, time.Minute)
	return p
}

// do runs actions in the page, each run bounded.
func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(p.tab, 30*time.Second)
	defer cancel()
	Expect(chromedp.Do(ctx, actions...)).To(Succeed(), "page %s: %s", p.name, what)
}

// eval evaluates a JavaScript expression in the page into T (bounded).
func eval[T any](p *page, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(p.tab, 15*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// mustEval is eval that fails the spec on an error.
func mustEval[T any](p *page, what, expr string) T {
	GinkgoHelper()
	v, err := eval[T](p, expr)
	Expect(err).NotTo(HaveOccurred(), "page %s: %s", p.name, what)
	return v
}

// waitFor waits until the JavaScript expression is true in the page, failing after timeout
// with what it waited for.
func (p *page) waitFor(what, expr string, timeout time.Duration) {
	GinkgoHelper()
	Eventually(func() (bool, error) { return eval[bool](p, expr) }).WithTimeout(timeout).
		Should(BeTrue(), "page %s: waited %s for %s", p.name, timeout, what)
}

// view goes to a view by its nav link (a click, as a user does) and waits until it shows.
func (p *page) view(name string) {
	GinkgoHelper()
	p.do("clicking the nav link of view "+name, chromedp.Click(chromedp.CSS(fmt.Sprintf(`nav[aria-label="Views"] a[data-view-link=%q]`, name))))
	p.waitFor("view "+name+" shown and ready", fmt.Sprintf(`document.querySelector('main#view[data-view=%s][data-ready="true"]') !== null && document.querySelector('a[data-view-link=%s][aria-current="page"]') !== null`, js(name), js(name)), 30*time.Second)
}

// click clicks the element the CSS selector selects (a real mouse click).
func (p *page) click(sel string) {
	GinkgoHelper()
	// A live delta may re-render the element between the query and the click ("Could not find
	// node with given id"): query and click again until it holds still, within the deadline.
	Eventually(p.tab, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
	}).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "page %s: clicking %s", p.name, sel)
}

// escape presses Escape in the page.
func (p *page) escape() {
	GinkgoHelper()
	p.do("pressing Escape", chromedp.KeyEvent(kb.Escape))
}

// screenshot writes a PNG of the viewport, scrolled to the top of the view, to dir/name.png
// (the page keeps the window's scroll across views: a click lower on an earlier view would
// otherwise hide the next view's heading).
func (p *page) screenshot(dir, name string) string {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(p.tab, 30*time.Second)
	defer cancel()
	top, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.scrollTo({top: 0, behavior: "instant"}), window.scrollY === 0`))
	Expect(err).NotTo(HaveOccurred(), "page %s: scrolling to the top for screenshot %s", p.name, name)
	Expect(top).To(BeTrue(), "page %s: window at the top (scrollY 0) for screenshot %s", p.name, name)
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	Expect(err).NotTo(HaveOccurred(), "page %s: screenshot %s", p.name, name)
	path := filepath.Join(dir, name+".png")
	Expect(os.WriteFile(path, png, 0o644)).To(Succeed())
	return path
}

// js quotes s as a JavaScript string literal (JSON's is one).
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// restConfigAs is the hub admin's rest.Config impersonating user.
func restConfigAs(user string) *rest.Config {
	cfg := rest.CopyConfig(env.Fleet.Hub.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}
