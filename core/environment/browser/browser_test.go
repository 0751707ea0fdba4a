package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A page served on loopback is loaded and its script runs: the flags leave local pages working.
func TestStartLoadsALocalPage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>t</title><p id="p">before</p><script>document.getElementById("p").textContent = "ran"</script>`)
	}))
	defer srv.Close()
	bctx, stop, err := Start(ctx, t.TempDir(), 800, 600)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatalf("loading %s: %v", srv.URL, err)
	}
	text, err := chromedp.Run(bctx, chromedp.Text("#p"))
	if err != nil {
		t.Fatalf("reading #p of %s: %v", srv.URL, err)
	}
	if text != "ran" {
		t.Fatalf("#p = %q, want %q (the page's script did not run)", text, "ran")
	}
}
