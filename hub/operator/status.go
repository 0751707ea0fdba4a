package operator

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/operatorrun"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// FieldManager owns the ClusterManager status fields the hub writes.
const FieldManager = apply.FieldManagerPrefix + "hub-operator"

// DefaultStatusResync is how often the status is computed again without a change seen.
const DefaultStatusResync = time.Minute

// statusWriter writes the ClusterManager's status while the hub it belongs to leads: it is a
// manager Runnable needing leader election. It writes only while the ClusterManager asks for
// what this hub runs; otherwise RunHub is about to restart the hub, and the next one writes.
type statusWriter struct {
	watch   *watch
	c       client.Client
	reader  client.Reader
	base    manager.Options
	known   []string
	running running
	// related are the objects this hub manages, listed in status.relatedResources.
	related []operatorv1.RelatedResourceMeta
	// ready, when set, closes once the webhooks serve: before that the hub is not applied.
	ready  <-chan struct{}
	resync time.Duration
	log    logr.Logger
}

// Start writes the status once the webhooks serve, and after every change until ctx ends.
func (s *statusWriter) Start(ctx context.Context) error {
	if s.ready != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-s.ready:
		}
	}
	operatorrun.StatusLoop(ctx, s.watch, s.resync, nil, s.log, s.write)
	return nil
}

// write applies the status the ClusterManager should have, unless it has it already.
func (s *statusWriter) write(ctx context.Context) error {
	cm, found, err := s.watch.Get(ctx)
	if err != nil || !found {
		return err
	}
	set := readSettings(cm, s.known)
	if _, r, err := set.apply(s.base); err != nil || !r.equal(s.running) {
		return err // a restart is coming
	}
	dep, generations, err := operatorrun.DeploymentStatus(ctx, s.reader, s.watch.Deployment())
	if err != nil {
		return err
	}
	progressing := metav1.Condition{Type: operatorv1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: operatorv1.ReasonUpToDate,
		Message: "Components of cluster manager are up to date"}
	if dep != nil && rolling(dep) {
		progressing = metav1.Condition{Type: operatorv1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: operatorv1.ReasonDeploymentRolling,
			Message: fmt.Sprintf("Deployments %s is still rolling", dep.Name)}
	}
	conds := []metav1.Condition{
		{Type: operatorv1.ConditionClusterManagerApplied, Status: metav1.ConditionTrue, Reason: operatorv1.ReasonClusterManagerApplied,
			Message: "Components of cluster manager are applied: the hub runs with feature gates " + strings.Join(s.running.enabled(), ", ")},
		set.gates.Condition(),
		{Type: operatorv1.ConditionHubRegistrationDegraded, Status: metav1.ConditionFalse, Reason: operatorv1.ReasonRegistrationFunctional,
			Message: "Registration is managing credentials"},
		{Type: operatorv1.ConditionHubPlacementDegraded, Status: metav1.ConditionFalse, Reason: operatorv1.ReasonPlacementFunctional,
			Message: "Placement is scheduling placement decisions"},
		progressing,
	}
	have := operatorrun.Status{ObservedGeneration: cm.Status.ObservedGeneration, Conditions: cm.Status.Conditions,
		Generations: cm.Status.Generations, RelatedResources: cm.Status.RelatedResources}
	want := operatorrun.Status{ObservedGeneration: cm.Generation, Conditions: conds, Generations: generations, RelatedResources: s.related}
	if err := operatorrun.ApplyStatus(ctx, s.c, cm, FieldManager, have, want); err != nil {
		return fmt.Errorf("ClusterManager %s status: %w", cm.Name, err)
	}
	return nil
}

// rolling reports that a Deployment has not rolled out its latest spec to every replica.
func rolling(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != want || d.Status.ReadyReplicas != want
}

// relatedResources lists what a hub running with opts and r manages: the CRDs it installed,
// less those of controllers switched off (installed all the same, so that clients and agents
// find the API, but nothing on this hub acts on them), its webhook configurations and
// certificate Secret, its leader election Lease and its Deployment.
func relatedResources(opts manager.Options, r running, deployment types.NamespacedName) ([]operatorv1.RelatedResourceMeta, error) {
	var out []operatorv1.RelatedResourceMeta
	if !opts.SkipCRDInstall {
		objs, err := crds.Objects()
		if err != nil {
			return nil, err
		}
		for _, crd := range objs {
			if !r.gates[string(featuregates.ManifestWorkReplicaSet)] && crd.Name == mwrsCRD {
				continue
			}
			if !r.gates[string(featuregates.AddonManagement)] && crd.Spec.Group == addonGroup {
				continue
			}
			out = append(out, operatorrun.RelatedCRD(crd.Name))
		}
	}
	if w := opts.Webhook; !w.Disabled {
		out = append(out,
			operatorv1.RelatedResourceMeta{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations",
				Name: cmp.Or(w.ConfigurationName, webhook.DefaultConfigurationName)},
			// Of the same name: the ManifestWork finalizer handler, always registered with the
			// webhook server, is mutating.
			operatorv1.RelatedResourceMeta{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations",
				Name: cmp.Or(w.ConfigurationName, webhook.DefaultConfigurationName)},
			operatorv1.RelatedResourceMeta{Version: "v1", Resource: "secrets",
				Namespace: cmp.Or(w.Namespace, webhook.DefaultNamespace), Name: cmp.Or(w.SecretName, webhook.DefaultSecretName)})
	}
	if le := opts.LeaderElection; le.Enabled {
		out = append(out, operatorrun.RelatedLease(cmp.Or(le.Namespace, manager.DefaultLeaderElectionNamespace),
			cmp.Or(le.Name, manager.DefaultLeaderElectionName)))
	}
	if deployment.Name != "" {
		out = append(out, operatorrun.RelatedDeployment(deployment))
	}
	return out, nil
}

const (
	mwrsCRD    = "manifestworkreplicasets.work.open-cluster-management.io"
	addonGroup = "addon.open-cluster-management.io"
)

// component adapts the status writer to the hub's Components.
func (s *statusWriter) component() manager.Component {
	return manager.ComponentFunc(func(mgr ctrl.Manager) error {
		s.c, s.reader = mgr.GetClient(), mgr.GetAPIReader()
		return mgr.Add(s)
	})
}
