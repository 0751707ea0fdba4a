package install

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// TestApplyRateLimit: without a limit in the rest.Config, Apply's clients send a whole hub
// install (every object of the chart, its CRDs included, and the prune's lists) without
// client-side waits — client-go's default (burst 10, then 5/s) made the hub operator's first
// apply last seconds. A limit the caller sets is kept.
func TestApplyRateLimit(t *testing.T) {
	objs, err := Render(HubChart, HubChart, HubNamespace, map[string]any{"render": "components", "topology": "Split"})
	if err != nil {
		t.Fatalf("rendering the hub chart: %v", err)
	}
	c, err := newClients(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	requests := len(objs) + 10 // discovery, the prune's lists
	for i := range requests {
		if !c.limiter.TryAccept() {
			t.Fatalf("the clients of a rest.Config without a rate limit throttle request %d of the %d a hub install sends (%d objects)", i+1, requests, len(objs))
		}
	}

	c, err = newClients(&rest.Config{Host: "http://127.0.0.1:1", QPS: 1, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !c.limiter.TryAccept() || !c.limiter.TryAccept() || c.limiter.TryAccept() {
		t.Errorf("the clients of a rest.Config with QPS 1, burst 2 do not keep that limit")
	}
	own := flowcontrol.NewFakeAlwaysRateLimiter()
	if c, err = newClients(&rest.Config{Host: "http://127.0.0.1:1", RateLimiter: own}); err != nil || c.limiter != own {
		t.Errorf("the clients of a rest.Config with its own rate limiter do not use it (err %v)", err)
	}
}
