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
