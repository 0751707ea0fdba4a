// Package browser starts the headless Chromium the dashboard's browser tests and benchmark
// drive (chromedp over the DevTools protocol). Chromium comes from Debian's package
// (`make chromium` installs it); nothing is downloaded at run time.
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// Candidates are the executables tried, in order, when $FLOTILLA_CHROMIUM is unset.
var candidates = []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "chromium", "chromium-browser", "google-chrome"}

// ErrNotFound: no Chromium on this machine.
var ErrNotFound = errors.New("no Chromium found ($FLOTILLA_CHROMIUM, /usr/bin/chromium, chromium, chromium-browser, google-chrome): run `make chromium` (Debian's chromium package)")

// Path is the Chromium executable: $FLOTILLA_CHROMIUM, else the first of the usual names on
// this machine.
func Path() (string, error) {
	if p := os.Getenv("FLOTILLA_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("$FLOTILLA_CHROMIUM %q: %w", p, err)
		}
		return p, nil
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", ErrNotFound
}

// Start launches a headless Chromium with a fresh profile in userDataDir and returns a
// browser context (chromedp.NewContext's) and its cancel, which stops the browser. The
// flags keep Chromium off the network but for the pages it is sent to: a closed machine
// refuses its background connections, many at a time, and slows every start.
func Start(ctx context.Context, userDataDir string, width, height int) (context.Context, context.CancelFunc, error) {
	path, err := Path()
	if err != nil {
		return nil, nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(userDataDir),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(width, height),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("mute-audio", true),
	}
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox.
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	// The first Run starts the browser: fail here, naming it, rather than in a test's first step.
	if err := chromedp.Do(bctx); err != nil {
		bcancel()
		acancel()
		return nil, nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return bctx, func() { bcancel(); acancel() }, nil
}
