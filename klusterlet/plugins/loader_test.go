package plugins

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// unreachable is an API server nobody listens on: loaders keep retrying in the background.
func unreachable(port string) Config {
	return Config{ManagedConfig: &rest.Config{Host: "https://127.0.0.1:" + port, Timeout: time.Second},
		Namespace: "open-cluster-management-agent", RetryInitial: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond}
}

func TestOneLoaderPerManagedClusterUntilTheLastRelease(t *testing.T) {
	a := unreachable("1")
	l1, release1, err := Start(a)
	if err != nil {
		t.Fatal(err)
	}
	// Another klusterlet of this process on the same API server shares it, even with
	// another rest.Config and namespace.
	b := unreachable("1")
	b.Namespace = "elsewhere"
	l2, release2, err := Start(b)
	if err != nil {
		t.Fatal(err)
	}
	if l1 != l2 || forCluster(b.ManagedConfig) != l1 || forCluster(a.ManagedConfig) != l1 {
		t.Fatal("klusterlets of one managed cluster got different loaders")
	}
	other, releaseOther, err := Start(unreachable("2"))
	if err != nil {
		t.Fatal(err)
	}
	if other == l1 {
		t.Fatal("two managed clusters share a loader")
	}
	releaseOther()
	if !l1.Builtin("feedback-wellknown") || l1.Builtin("certificates") {
		t.Fatal("Builtin does not name the klusterlet's own plugins")
	}
	if l1.Registry() == nil {
		t.Fatal("no registry")
	}

	release1()
	release1() // releasing twice counts once
	if forCluster(a.ManagedConfig) != l1 {
		t.Fatal("the loader stopped while a klusterlet still uses it")
	}
	release2()
	if forCluster(a.ManagedConfig) != nil {
		t.Fatal("the loader outlived its last klusterlet")
	}
	select {
	case <-l1.done:
	default:
		t.Fatal("the last release returned before the loader stopped")
	}
	// A new start gets a new loader.
	l3, release3, err := Start(a)
	if err != nil {
		t.Fatal(err)
	}
	defer release3()
	if l3 == l1 {
		t.Fatal("a stopped loader was reused")
	}
	if forCluster(nil) != nil {
		t.Fatal("forCluster(nil)")
	}
}

func TestInvalidOptions(t *testing.T) {
	if _, _, err := Start(Config{}); err == nil || !strings.Contains(err.Error(), "ManagedConfig is required") {
		t.Errorf("no ManagedConfig: %v", err)
	}
	c := unreachable("3")
	c.Namespace = ""
	if _, _, err := Start(c); err == nil || !strings.Contains(err.Error(), "Namespace is required") {
		t.Errorf("no namespace: %v", err)
	}
	c.SkipInstall = true
	l, release, err := Start(c)
	if err != nil {
		t.Fatal(err)
	}
	release()
	<-l.done
}
