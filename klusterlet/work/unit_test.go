package work

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

func TestOwnerMergeAddsAndRemovesOnlyItsReference(t *testing.T) {
	mine := metav1.OwnerReference{Kind: "AppliedManifestWork", Name: "h-w", UID: "u1"}
	other := metav1.OwnerReference{Kind: "AppliedManifestWork", Name: "h-x", UID: "u2"}
	refs, changed := owner{ref: mine, owned: true}.merge([]metav1.OwnerReference{other})
	if !changed || len(refs) != 2 {
		t.Fatalf("owned: %v %v", refs, changed)
	}
	if _, changed := (owner{ref: mine, owned: true}).merge(refs); changed {
		t.Fatal("adding an existing reference reported a change")
	}
	refs, changed = owner{ref: mine}.merge(refs)
	if !changed || len(refs) != 1 || refs[0].UID != "u2" {
		t.Fatalf("orphaned: %v %v", refs, changed)
	}
}

func TestApplyOrderPutsCRDsThenNamespacesFirst(t *testing.T) {
	m := func(apiVersion, kind string) workv1.Manifest {
		return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"` + apiVersion + `","kind":"` + kind + `","metadata":{"name":"x"}}`)}}
	}
	got := applyOrder([]workv1.Manifest{m("v1", "ConfigMap"), m("v1", "Namespace"), m("example.com/v1", "Widget"),
		m("apiextensions.k8s.io/v1", "CustomResourceDefinition"), {RawExtension: runtime.RawExtension{Raw: []byte("not json")}}, m("v1", "Namespace")})
	want := []int{3, 1, 5, 0, 2, 4}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func TestOwnedByWorkFollowsTheDeleteOption(t *testing.T) {
	gvr := schema.GroupVersionResource{Resource: "services", Version: "v1"}
	svc := workv1.ManifestResourceMeta{Name: "helloworld", Namespace: "default"}
	selective := &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
		SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{{Resource: "services", Namespace: "default", Name: "helloworld"}}}}
	for _, tc := range []struct {
		opt  *workv1.DeleteOption
		meta workv1.ManifestResourceMeta
		want bool
	}{
		{nil, svc, true},
		{&workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground}, svc, true},
		{&workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}, svc, false},
		{selective, svc, false},
		{selective, workv1.ManifestResourceMeta{Name: "other", Namespace: "default"}, true},
	} {
		if got := ownedByWork(tc.meta, gvr, tc.opt); got != tc.want {
			t.Errorf("%+v %+v: owned %v, want %v", tc.opt, tc.meta, got, tc.want)
		}
	}
}

func TestAnExecutorRefusalWaitsForRBACOrTheStatusSync(t *testing.T) {
	refused := manifestResult{err: fmt.Errorf("spec.workload.manifests[0]: %w", &notAllowedError{msg: "executor may not get"})}
	if failedTransiently([]manifestResult{refused}) {
		t.Fatal("a refused executor is retried within a second, not at the status sync its message promises")
	}
	if !failedTransiently([]manifestResult{refused, {err: errors.New("connection refused")}}) {
		t.Fatal("a transient failure beside a refusal is not retried soon")
	}
}

// The clients' rate limiters let one cluster's burst of 1,000 works through within the
// fan-out budget of make bench-work (18 s): one hub write per work, four managed requests.
func TestClientRatesFitOneClustersBurst(t *testing.T) {
	hub := &rest.Config{QPS: 50, Burst: 100} // the klusterlet's hub connection
	managed := &rest.Config{}
	clientRates(hub, managed, Config{})
	limited := func(c *rest.Config, requests int) time.Duration {
		return time.Duration(float64(max(0, requests-c.Burst)) / float64(c.QPS) * float64(time.Second))
	}
	const works = 1000
	if d := limited(hub, works); d > 5*time.Second {
		t.Errorf("hub client (QPS %v, burst %d) holds back %d status writes for %s", hub.QPS, hub.Burst, works, d)
	}
	if d := limited(managed, 4*works); d > 10*time.Second {
		t.Errorf("managed client (QPS %v, burst %d) holds back %d requests for %s", managed.QPS, managed.Burst, 4*works, d)
	}
	// A caller's higher hub rate and its own managed rate stay.
	hub, managed = &rest.Config{QPS: 1000, Burst: 2000}, &rest.Config{QPS: 20, Burst: 40}
	clientRates(hub, managed, Config{})
	if hub.QPS != 1000 || hub.Burst != 2000 || managed.QPS != 20 || managed.Burst != 40 {
		t.Errorf("caller's rates changed: hub %v/%d, managed %v/%d", hub.QPS, hub.Burst, managed.QPS, managed.Burst)
	}
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Config's rates (the klusterlet's --work-kube-api-qps/-burst and --hub-kube-api-qps/-burst)
// limit the clients built from the agent's configs: with a QPS that grants no token during the
// test, exactly Burst of the requests reach a counting RoundTripper; the rate limiter refuses
// the others at once, as their context's deadline comes before the next token.
func TestConfiguredRatesLimitRequests(t *testing.T) {
	hub, managed := &rest.Config{QPS: 50, Burst: 100}, &rest.Config{}
	clientRates(hub, managed, Config{HubQPS: 0.001, HubBurst: 3, ManagedQPS: 0.001, ManagedBurst: 5})
	for _, c := range []struct {
		name string
		cfg  *rest.Config
		want int
	}{{"hub", hub, 3}, {"managed", managed, 5}} {
		var sent atomic.Int32
		c.cfg.Host = "https://cluster.invalid"
		c.cfg.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sent.Add(1)
			return &http.Response{StatusCode: http.StatusOK, Request: r,
				Header: http.Header{"Content-Type": []string{"application/json"}},
				Body:   io.NopCloser(strings.NewReader(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}`))}, nil
		})
		kube, err := kubernetes.NewForConfig(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var wg sync.WaitGroup
		for range c.want + 5 {
			wg.Go(func() { _, _ = kube.CoreV1().Namespaces().Get(ctx, "x", metav1.GetOptions{}) })
		}
		wg.Wait()
		cancel()
		if got := int(sent.Load()); got != c.want {
			t.Errorf("%s client: %d of %d requests sent, want the burst of %d", c.name, got, c.want+5, c.want)
		}
	}
}

// The AppliedManifestWork record and the work's status are written at once: each write waits
// here until the other has started.
func TestRecordAndStatusWrittenAtOnce(t *testing.T) {
	recordStarted, statusStarted := make(chan struct{}), make(chan struct{})
	wait := func(other chan struct{}, what string) error {
		select {
		case <-other:
			return nil
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%s was not written while the other write ran", what)
		}
	}
	pending, err := both(
		func() (bool, error) { close(recordStarted); return true, wait(statusStarted, "the status") },
		func() error { close(statusStarted); return wait(recordStarted, "the AppliedManifestWork record") })
	if err != nil || !pending {
		t.Fatalf("pending %v, error %v", pending, err)
	}
	want := errors.New("status conflict")
	if _, err := both(func() (bool, error) { return false, nil }, func() error { return want }); !errors.Is(err, want) {
		t.Errorf("the status write's error was lost: %v", err)
	}
}

// Only an AppliedManifestWork's deletion wakes its work; the agent's own create and status
// writes do not (each cost a reconcile and often a conflicting status write).
func TestAppliedGoingPassesOnlyDeletion(t *testing.T) {
	amw := func(deleting bool, applied int) *workv1.AppliedManifestWork {
		a := &workv1.AppliedManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "h-w"}}
		if deleting {
			a.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}
		a.Status.AppliedResources = make([]workv1.AppliedManifestResourceMeta, applied)
		return a
	}
	if appliedGoing().Create(event.CreateEvent{Object: amw(false, 0)}) {
		t.Error("the agent's create of an AppliedManifestWork woke its work")
	}
	if appliedGoing().Update(event.UpdateEvent{ObjectOld: amw(false, 0), ObjectNew: amw(false, 1)}) {
		t.Error("the agent's record of applied resources woke its work")
	}
	if !appliedGoing().Update(event.UpdateEvent{ObjectOld: amw(false, 1), ObjectNew: amw(true, 1)}) {
		t.Error("the start of a deletion did not wake the work")
	}
	if !appliedGoing().Delete(event.DeleteEvent{Object: amw(true, 0)}) {
		t.Error("an AppliedManifestWork gone did not wake its work")
	}
}
