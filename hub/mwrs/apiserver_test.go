package mwrs

import (
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
)

// TestAgainstAPIServer runs the controller's writes and reads that the API server decides
// against a real hub API server (one for the subtests; each uses its own objects).
func TestAgainstAPIServer(t *testing.T) {
	fleet := fleettest.StartT(t, environment.Options{})
	scheme := runtime.NewScheme()
	if err := apischeme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("firstSeenSuccess writes only the work it read", func(t *testing.T) { testFirstSeenSuccess(t, c) })
	t.Run("byPlacement logs a failed list", func(t *testing.T) { testByPlacementLogsErrors(t, c) })
	t.Run("a rollback holds its template through the works it wrote", func(t *testing.T) { testRollbackHoldOnWorks(t, c) })
	t.Run("overrides", func(t *testing.T) { testOverridesWithManager(t, fleet.Hub.Config, scheme) })
}

// testRollbackHoldOnWorks: a rollback writes the reverted works before the replica set's
// status says RolledBack, and the next reconcile may read a cached status without it. The
// works it wrote must carry the hold (e2e saw the broken template rolled out again right after
// its rollback), and a work written again from the replica set's own template drops it.
func testRollbackHoldOnWorks(t *testing.T, c client.Client) {
	ctx := t.Context()
	const ns = "hold-cluster1"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c}
	rs := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}} // status: no RolledBack
	read := func() map[string]*workv1.ManifestWork {
		t.Helper()
		w := &workv1.ManifestWork{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, w); err != nil {
			t.Fatal(err)
		}
		return map[string]*workv1.ManifestWork{ns: w}
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := r.applyWork(ctx, rs, "p", ns, &workv1.ManifestWorkSpec{}, "v2", "v3", now, nil); err != nil {
		t.Fatalf("applyWork (rollback from v3 to v2): %v", err)
	}
	if got := read(); !holds(rs, got, "v3") || holds(rs, got, "v2") {
		t.Fatalf("after a rollback from v3 the work's annotations are %v: v3 must be held (and only v3)", got[ns].Annotations)
	}
	if _, err := r.applyWork(ctx, rs, "p", ns, &workv1.ManifestWorkSpec{}, "v4", "", now, nil); err != nil {
		t.Fatalf("applyWork (v4): %v", err)
	}
	if got := read(); holds(rs, got, "v3") {
		t.Fatalf("a work written again from the template keeps %s: %v", RolledBackFromAnnotation, got[ns].Annotations)
	}
}

// testFirstSeenSuccess: the controller records when it first saw a work succeed from the copy
// its cache served. When the work was deleted (or changed) since, the write must fail and
// leave nothing behind: an unguarded server-side apply would create a work holding only the
// annotation.
func testFirstSeenSuccess(t *testing.T, c client.Client) {
	ctx := t.Context()
	const ns = "soak-cluster1"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: c}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	newWork := func(name string) *workv1.ManifestWork {
		t.Helper()
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{TemplateHashAnnotation: "h1"}}}
		if err := c.Create(ctx, w); err != nil {
			t.Fatalf("creating ManifestWork %s/%s: %v", ns, name, err)
		}
		return w
	}

	t.Run("a work it read and nobody changed gets the annotation", func(t *testing.T) {
		w := newWork("current")
		if _, err := r.firstSeenSuccess(ctx, w, "h1", now); err != nil {
			t.Fatalf("firstSeenSuccess: %v", err)
		}
		got := &workv1.ManifestWork{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			t.Fatal(err)
		}
		if at, ok := recordedSuccess(got, "h1"); !ok || !at.Equal(now) {
			t.Fatalf("annotation %s = %q, want h1 at %v", SucceededAtAnnotation, got.Annotations[SucceededAtAnnotation], now)
		}
	})

	t.Run("a work deleted since it was read is not created again", func(t *testing.T) {
		w := newWork("deleted")
		cached := w.DeepCopy()
		if err := c.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		if _, err := r.firstSeenSuccess(ctx, cached, "h1", now); err == nil {
			t.Error("firstSeenSuccess on a deleted work reported no error")
		}
		err := c.Get(ctx, client.ObjectKeyFromObject(w), &workv1.ManifestWork{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("after recording a success on a deleted work, reading ManifestWork %s/%s = %v, want NotFound (an orphan work was created)", ns, w.Name, err)
		}
	})

	t.Run("a work changed since it was read is a conflict", func(t *testing.T) {
		w := newWork("changed")
		cached := w.DeepCopy()
		w.Labels = map[string]string{"changed": "yes"}
		if err := c.Update(ctx, w); err != nil {
			t.Fatal(err)
		}
		if _, err := r.firstSeenSuccess(ctx, cached, "h1", now); !apierrors.IsConflict(err) {
			t.Fatalf("firstSeenSuccess on a changed work = %v, want a Conflict (the reconcile reads it again)", err)
		}
	})
}

// testByPlacementLogsErrors: a placement's event maps to the replica sets that name it through
// the manager's index. A list that fails (here: an API server asked directly, which knows no
// such field selector) cannot be returned from a map function; it must be logged, not dropped.
func testByPlacementLogsErrors(t *testing.T, c client.Client) {
	var logged []string
	logger := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	ctx := log.IntoContext(t.Context(), logger)
	r := &Reconciler{Client: c}
	if got := r.byPlacement(ctx, "default", "p1"); len(got) != 0 {
		t.Fatalf("byPlacement = %v, want nothing", got)
	}
	for _, l := range logged {
		if strings.Contains(l, `"placement"="default/p1"`) && strings.Contains(l, "field label not supported") {
			return
		}
	}
	t.Fatalf("the failed list of placement default/p1 was not logged with its error; logged: %q", logged)
}
