package benchenv

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// FakeWorkAgent stands in for the work agents of the simulated clusters until ctx ends: as
// soon as a ManifestWork appears or changes and is not reported yet, one of 16 workers calls
// report with it (as the informer has it: report copies it before changing it). It returns
// once its informer has synced.
func FakeWorkAgent(ctx context.Context, cp *ControlPlane, reported func(*workv1.ManifestWork) bool,
	report func(context.Context, *workv1.ManifestWork)) error {
	ca, err := cache.New(cp.ClientConfig, cache.Options{Scheme: cp.Scheme})
	if err != nil {
		return err
	}
	inf, err := ca.GetInformer(ctx, &workv1.ManifestWork{})
	if err != nil {
		return err
	}
	queue := make(chan *workv1.ManifestWork, 4096)
	enqueue := func(obj any) {
		if w, ok := obj.(*workv1.ManifestWork); ok && !reported(w) {
			queue <- w
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }}); err != nil {
		return err
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return errors.New("work informer did not sync")
	}
	for range 16 {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case w := <-queue:
					report(ctx, w)
				}
			}
		}()
	}
	return nil
}

// SetWorkAvailable sets w's Applied and Available conditions True for its generation, as the
// work agent of a cluster that applied it and found it available would.
func SetWorkAvailable(w *workv1.ManifestWork) {
	now := metav1.Now()
	for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue,
			Reason: "Simulated", Message: "simulated", ObservedGeneration: w.Generation, LastTransitionTime: now})
	}
}
