package mwrs

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
)

// outcome is what the fake agent reports for a cluster's work.
type outcome int

const (
	// hold reports nothing: the work stays Progressing.
	hold outcome = iota
	// succeed reports Applied and Available True (Progressing False).
	succeed
	// degrade reports Applied True and Degraded True.
	degrade
	// failApply reports Applied False.
	failApply
)

func (o outcome) conditions(gen int64) []metav1.Condition {
	c := func(t string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: "fake agent", ObservedGeneration: gen}
	}
	switch o {
	case succeed:
		return []metav1.Condition{c(workv1.WorkApplied, "True", "AppliedManifestWorkComplete"),
			c(workv1.WorkAvailable, "True", "ResourcesAvailable"), c(workv1.WorkProgressing, "False", "AppliedManifestWorkComplete")}
	case degrade:
		return []metav1.Condition{c(workv1.WorkApplied, "True", "AppliedManifestWorkComplete"),
			c(workv1.WorkDegraded, "True", "ResourcesDegraded"), c(workv1.WorkProgressing, "False", "AppliedManifestWorkComplete")}
	case failApply:
		return []metav1.Condition{c(workv1.WorkApplied, "False", "AppliedManifestWorkFailed")}
	}
	return nil
}

// agent is a fake work agent for the works of one replica set: for each work, at its current
// generation, it reports the outcome the test chose for the work's cluster (or decide chose
// for the work), once: a work whose conditions already say so for its generation is left
// alone. It follows the works with one watch, so it also sees every change in order: it
// records the largest number of works in flight per template hash (a work carrying the hash
// that is not Applied and Available for its generation) and the order in which the clusters
// got a work of each hash.
type agent struct {
	owner string
	kick  chan struct{}
	done  chan struct{}

	mu       sync.Mutex
	outcomes map[string]outcome
	dflt     outcome
	decide   func(w *workv1.ManifestWork) outcome // when set, wins over outcomes
	mirror   map[string]*workv1.ManifestWork      // by cluster
	maxIn    map[string]int                       // template hash → largest number in flight
	order    map[string][]string                  // template hash → clusters in order of appearance
}

// startAgent starts a fake agent for replica set ns/name: clusters not in outcomes get dflt.
// It stops after the spec.
func startAgent(ns, name string, dflt outcome, outcomes map[string]outcome) *agent {
	a := &agent{owner: ns + "." + name, kick: make(chan struct{}, 1), done: make(chan struct{}),
		outcomes: map[string]outcome{}, dflt: dflt, maxIn: map[string]int{}, order: map[string][]string{}}
	for k, v := range outcomes {
		a.outcomes[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	go a.run(ctx)
	DeferCleanup(func(ctx SpecContext) {
		cancel()
		// The agent stops at its next watch event or kick; a stuck one fails the spec, naming
		// itself, rather than blocking the suite.
		stuck := time.NewTimer(30 * time.Second)
		defer stuck.Stop()
		select {
		case <-a.done:
		case <-stuck.C:
			Fail(fmt.Sprintf("the fake agent of replica set %s did not stop within 30s of its context's cancellation", a.owner))
		case <-ctx.Done():
			Fail(fmt.Sprintf("the fake agent of replica set %s did not stop before the cleanup's NodeTimeout", a.owner))
		}
	}, NodeTimeout(time.Minute))
	return a
}

// set changes the outcome of clusters; works already reported stay as they are unless the
// new outcome differs.
func (a *agent) set(o outcome, clusters ...string) {
	a.mu.Lock()
	for _, c := range clusters {
		a.outcomes[c] = o
	}
	a.mu.Unlock()
	a.poke()
}

// setDecide makes decide choose the outcome of every work.
func (a *agent) setDecide(decide func(w *workv1.ManifestWork) outcome) {
	a.mu.Lock()
	a.decide = decide
	a.mu.Unlock()
	a.poke()
}

func (a *agent) poke() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// maxInFlight is the largest number of works carrying hash that were in flight at once.
func (a *agent) maxInFlight(hash string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.maxIn[hash]
}

// appeared is the order in which clusters got a work carrying hash.
func (a *agent) appeared(hash string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.order[hash]...)
}

// hashesSeen are the template hashes the agent saw works carry.
func (a *agent) hashesSeen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.order))
	for h := range a.order {
		out = append(out, h)
	}
	return out
}

func (a *agent) run(ctx context.Context) {
	defer close(a.done)
	for ctx.Err() == nil {
		// A watch without resourceVersion starts with the current works as Added events.
		w, err := hubClient.Watch(ctx, &workv1.ManifestWorkList{}, client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: a.owner})
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(GinkgoWriter, "fake agent %s: watch: %v\n", a.owner, err)
			}
			select { // retry an API server error shortly
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		a.mu.Lock()
		a.mirror = map[string]*workv1.ManifestWork{}
		a.mu.Unlock()
		a.follow(ctx, w)
		w.Stop()
	}
}

// follow handles one watch until it ends or ctx is done.
func (a *agent) follow(ctx context.Context, w watch.Interface) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
			a.mu.Lock()
			all := make([]*workv1.ManifestWork, 0, len(a.mirror))
			for _, mw := range a.mirror {
				all = append(all, mw)
			}
			a.mu.Unlock()
			for _, mw := range all {
				a.report(ctx, mw)
			}
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			mw, isWork := ev.Object.(*workv1.ManifestWork)
			if !isWork {
				return // an Error event: watch again
			}
			a.observe(ev.Type, mw)
			if ev.Type != watch.Deleted {
				a.report(ctx, mw)
			}
		}
	}
}

// observe updates the mirror and the records.
func (a *agent) observe(typ watch.EventType, mw *workv1.ManifestWork) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if typ == watch.Deleted {
		delete(a.mirror, mw.Namespace)
	} else {
		hash := mw.Annotations[mwrs.TemplateHashAnnotation]
		if prev := a.mirror[mw.Namespace]; prev == nil || prev.Annotations[mwrs.TemplateHashAnnotation] != hash {
			if !slices.Contains(a.order[hash], mw.Namespace) {
				a.order[hash] = append(a.order[hash], mw.Namespace)
			}
		}
		a.mirror[mw.Namespace] = mw
	}
	inFlight := map[string]int{}
	for _, w := range a.mirror {
		if w.DeletionTimestamp.IsZero() && !succeeded(w) {
			inFlight[w.Annotations[mwrs.TemplateHashAnnotation]]++
		}
	}
	for h, n := range inFlight {
		a.maxIn[h] = max(a.maxIn[h], n)
	}
}

// report writes the outcome of mw's cluster into its status, unless it is there already for
// mw's generation.
func (a *agent) report(ctx context.Context, mw *workv1.ManifestWork) {
	a.mu.Lock()
	o, ok := a.outcomes[mw.Namespace]
	if !ok {
		o = a.dflt
	}
	if a.decide != nil {
		o = a.decide(mw)
	}
	a.mu.Unlock()
	want := o.conditions(mw.Generation)
	if len(want) == 0 || !mw.DeletionTimestamp.IsZero() {
		return
	}
	reported := true
	for _, c := range want {
		cur := meta.FindStatusCondition(mw.Status.Conditions, c.Type)
		if cur == nil || cur.Status != c.Status || cur.ObservedGeneration != mw.Generation {
			reported = false
		}
	}
	if reported {
		return
	}
	next := mw.DeepCopy()
	// As the work agent does: a condition that keeps its status keeps its transition time.
	for _, c := range want {
		meta.SetStatusCondition(&next.Status.Conditions, c)
	}
	if o != degrade {
		meta.RemoveStatusCondition(&next.Status.Conditions, workv1.WorkDegraded)
	}
	if o != succeed {
		meta.RemoveStatusCondition(&next.Status.Conditions, workv1.WorkAvailable)
	}
	// Guarded by resourceVersion: a conflict means a newer version is on its way to us.
	if err := hubClient.Status().Update(ctx, next); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		fmt.Fprintf(GinkgoWriter, "fake agent %s: reporting %s/%s: %v\n", a.owner, mw.Namespace, mw.Name, err)
	}
}
