// Command bench measures the hub's add-on manager (hub/addon): a hub API server with N
// simulated ManagedClusters (accepted, Available, with their namespaces; no klusterlet) in one
// bound set, the hub as its own process (bin/flotilla hub), a placement selecting every
// cluster, and a fake work agent in this process that reports each ManifestWork Applied and
// Available for its generation, with the WellKnownStatus feedback of its Deployments (ready
// and available replicas), as soon as it appears or changes.
//
// A template add-on (an AddOnTemplate with a ServiceAccount and a Deployment, an
// AddOnDeploymentConfig as default configuration) is installed by a Placements install
// strategy with an All rollout. install_s is the time from creating its
// ClusterManagementAddOn until every cluster's ManagedClusterAddOn is Available=True;
// upgrade_s the time from changing the AddOnDeploymentConfig's spec until every
// ManagedClusterAddOn's lastAppliedConfig of it has the new spec hash and its Progressing
// condition says UpgradeSucceed. Its last line is
//
//	addons-100 install_s=<…> upgrade_s=<…>
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
)

const (
	setName   = "bench"
	ns        = "bench-addons"
	placement = "all"
	addonName = "bench-addon"
	template  = "bench-addon-1"
	adcName   = "bench-config"
	agentNS   = "bench-addon-agent"
	leaseName = "managed-cluster-lease"
)

func main() {
	clusters := flag.Int("clusters", 100, "simulated ManagedClusters")
	hold := flag.Duration("hold", 0, "keep the hub running this long after the measurements (or until Ctrl-C), to inspect it with the printed kubeconfig")
	benchenv.Main("bench-addons", 10*time.Minute, func(ctx context.Context, binary string, verbose bool) (string, error) {
		return run(ctx, binary, *clusters, verbose, *hold)
	})
}

func run(ctx context.Context, binary string, n int, verbose bool, hold time.Duration) (line string, err error) {
	cp, err := benchenv.StartControlPlane(ctx, environment.ControlPlaneOptions{})
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	c := cp.Client
	hub, err := benchenv.StartHub(ctx, binary, cp, benchenv.Log(verbose),
		benchenv.HubOptions{FeatureGates: "DefaultClusterSet=false,AddonManagement=true", Metrics: true})
	if err != nil {
		return "", err
	}
	defer hub.Stop()

	fmt.Fprintf(os.Stderr, "creating %d clusters\n", n)
	if err := (benchenv.Clusters{Set: setName, Accepted: true}).Create(ctx, c, n); err != nil {
		return "", err
	}
	if err := benchenv.SelectAll(ctx, c, setName, ns, placement, n); err != nil {
		return "", err
	}
	if err := waitPlugins(ctx, c); err != nil {
		return "", err
	}
	actx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	go renewLeases(actx, c, n)
	if err := benchenv.FakeWorkAgent(actx, cp, reported, func(ctx context.Context, w *workv1.ManifestWork) { reportWork(ctx, c, w) }); err != nil {
		return "", err
	}

	if err := c.Create(ctx, deploymentConfig("1")); err != nil {
		return "", err
	}
	if err := c.Create(ctx, addOnTemplate()); err != nil {
		return "", err
	}

	fmt.Fprintln(os.Stderr, "creating the ClusterManagementAddOn")
	start := time.Now()
	if err := c.Create(ctx, clusterManagementAddOn()); err != nil {
		return "", err
	}
	if err := waitAll(ctx, c, n, "every ManagedClusterAddOn Available=True", func(m *addonv1alpha1.ManagedClusterAddOn) bool {
		return meta.IsStatusConditionTrue(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
	}); err != nil {
		return "", err
	}
	install := time.Since(start)
	fmt.Fprintf(os.Stderr, "%d add-ons available in %.2f s\n", n, install.Seconds())
	before := reconciles(ctx, hub)
	fmt.Fprintf(os.Stderr, "  install: %s\n", before)
	// The install is finished for the rollout too before the upgrade starts: every
	// lastAppliedConfig set, Progressing InstallSucceed.
	oldHash, err := adcHash(ctx, c)
	if err != nil {
		return "", err
	}
	if err := waitAll(ctx, c, n, "every ManagedClusterAddOn InstallSucceed", func(m *addonv1alpha1.ManagedClusterAddOn) bool {
		return applied(m, oldHash, addonv1alpha1.ProgressingReasonInstallSucceed)
	}); err != nil {
		return "", err
	}

	fmt.Fprintln(os.Stderr, "changing the AddOnDeploymentConfig")
	adc := &addonv1alpha1.AddOnDeploymentConfig{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: adcName}, adc); err != nil {
		return "", err
	}
	adc.Spec = deploymentConfig("2").Spec
	start = time.Now()
	if err := c.Update(ctx, adc); err != nil {
		return "", err
	}
	newHash, err := adcHash(ctx, c)
	if err != nil {
		return "", err
	}
	if newHash == oldHash {
		return "", errors.New("the AddOnDeploymentConfig's spec hash did not change")
	}
	if err := waitAll(ctx, c, n, "every ManagedClusterAddOn upgraded ("+newHash[:8]+", UpgradeSucceed)", func(m *addonv1alpha1.ManagedClusterAddOn) bool {
		return applied(m, newHash, addonv1alpha1.ProgressingReasonUpgradeSucceed)
	}); err != nil {
		return "", err
	}
	upgrade := time.Since(start)
	fmt.Fprintf(os.Stderr, "%d add-ons upgraded in %.2f s\n", n, upgrade.Seconds())
	fmt.Fprintf(os.Stderr, "  install and upgrade: %s\n", reconciles(ctx, hub))
	if hold > 0 {
		fmt.Fprintf(os.Stderr, "holding the hub for %s: flotilla get addons --kubeconfig %s\n", hold, cp.KubeconfigPath)
		select {
		case <-ctx.Done():
		case <-time.After(hold):
		}
	}
	return fmt.Sprintf("addons-%d install_s=%.2f upgrade_s=%.2f", n, install.Seconds(), upgrade.Seconds()), nil
}

// applied reports whether m's AddOnDeploymentConfig was last applied with hash and its
// Progressing condition has reason.
func applied(m *addonv1alpha1.ManagedClusterAddOn, hash, reason string) bool {
	p := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing)
	if p == nil || p.Reason != reason {
		return false
	}
	for _, ref := range m.Status.ConfigReferences {
		if ref.Group == addonv1alpha1.GroupVersion.Group && ref.Resource == "addondeploymentconfigs" {
			return ref.LastAppliedConfig != nil && ref.LastAppliedConfig.SpecHash == hash
		}
	}
	return false
}

// adcHash is the spec hash of the AddOnDeploymentConfig as OCM computes it: the SHA-256 of
// its spec as JSON, keys sorted.
func adcHash(ctx context.Context, c client.Client) (string, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(addonv1alpha1.GroupVersion.WithKind("AddOnDeploymentConfig"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: adcName}, u); err != nil {
		return "", err
	}
	spec, ok := u.Object["spec"]
	if !ok {
		spec = map[string]any{}
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

func deploymentConfig(logLevel string) *addonv1alpha1.AddOnDeploymentConfig {
	return &addonv1alpha1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: adcName},
		Spec: addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "LOG_LEVEL", Value: logLevel}}}}
}

func addOnTemplate() *addonv1alpha1.AddOnTemplate {
	sa := fmt.Sprintf(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"%s-agent","namespace":"%s"}}`, addonName, agentNS)
	deploy := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"%[1]s-agent","namespace":"%[2]s"},
"spec":{"replicas":1,"selector":{"matchLabels":{"app":"%[1]s"}},"template":{"metadata":{"labels":{"app":"%[1]s"}},
"spec":{"serviceAccountName":"%[1]s-agent","containers":[{"name":"agent","image":"quay.io/flotilla/bench-agent:latest",
"args":["--cluster={{CLUSTER_NAME}}","--v={{LOG_LEVEL}}"]}]}}}}`, addonName, agentNS)
	t := &addonv1alpha1.AddOnTemplate{ObjectMeta: metav1.ObjectMeta{Name: template}}
	t.Spec.AddonName = addonName
	for _, m := range []string{sa, deploy} {
		t.Spec.AgentSpec.Workload.Manifests = append(t.Spec.AgentSpec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
	}
	return t
}

func clusterManagementAddOn() *addonv1alpha1.ClusterManagementAddOn {
	return &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: addonName, Annotations: map[string]string{
			addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			AddOnMeta: addonv1alpha1.AddOnMeta{DisplayName: addonName},
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: "addontemplates"},
					DefaultConfig: &addonv1alpha1.ConfigReferent{Name: template}},
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: "addondeploymentconfigs"},
					DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: ns, Name: adcName}},
			},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements,
				Placements: []addonv1alpha1.PlacementStrategy{{PlacementRef: addonv1alpha1.PlacementRef{Namespace: ns, Name: placement},
					RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}}}},
		},
	}
}

// renewLeases renews every cluster's lease every 30 s, as their registration agents would, so
// that a slow run does not see the hub mark the clusters Unknown.
func renewLeases(ctx context.Context, c client.Client, n int) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(30 * time.Second):
		}
		now := metav1.NewMicroTime(time.Now())
		for i := range n {
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: benchenv.ClusterName(i), Name: leaseName}}
			patch := fmt.Sprintf(`{"spec":{"renewTime":%q}}`, now.Format(metav1.RFC3339Micro))
			_ = c.Patch(ctx, l, client.RawPatch("application/merge-patch+json", []byte(patch)))
		}
	}
}

// reconciles reads the add-on manager's reconcile counts and mean durations from the hub's
// metrics, for the bench's progress output.
func reconciles(ctx context.Context, hub *benchenv.Hub) string {
	sums, counts := map[string]float64{}, map[string]float64{}
	err := hub.Metrics(ctx, func(s benchenv.Sample) {
		var into map[string]float64
		switch s.Name {
		case "controller_runtime_reconcile_time_seconds_sum":
			into = sums
		case "controller_runtime_reconcile_time_seconds_count":
			into = counts
		default:
			return
		}
		if ctrl := s.Label("controller"); strings.HasPrefix(ctrl, "addon-") {
			into[ctrl] += s.Value
		}
	})
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, ctrl := range []string{"addon-install", "addon-config", "addon-deploy"} {
		if counts[ctrl] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d reconciles (mean %.1f ms)", ctrl, int(counts[ctrl]), sums[ctrl]/counts[ctrl]*1000))
		}
	}
	return strings.Join(parts, ", ")
}

// waitPlugins waits until the WasmPlugins the hub installs are all Ready, so that loading them
// (seconds of CPU) does not run during the measurements.
func waitPlugins(ctx context.Context, c client.Client) error {
	fmt.Fprintln(os.Stderr, "waiting for the hub's Wasm plugins")
	for {
		list := &flotillav1alpha1.WasmPluginList{}
		if err := c.List(ctx, list); err == nil && len(list.Items) > 0 {
			ready := 0
			for i := range list.Items {
				if meta.IsStatusConditionTrue(list.Items[i].Status.Conditions, flotillav1alpha1.ConditionReady) {
					ready++
				}
			}
			if ready == len(list.Items) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the hub's Wasm plugins did not become Ready: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitAll polls the add-on's ManagedClusterAddOns until there are n and every one satisfies
// done, printing progress every 5 s; when ctx ends first the error describes where they stand.
func waitAll(ctx context.Context, c client.Client, n int, what string, done func(*addonv1alpha1.ManagedClusterAddOn) bool) error {
	lastReport := time.Now()
	for {
		list := &addonv1alpha1.ManagedClusterAddOnList{}
		err := c.List(ctx, list, client.MatchingFields{"metadata.name": addonName})
		if err == nil {
			ok := 0
			for i := range list.Items {
				if done(&list.Items[i]) {
					ok++
				}
			}
			if ok == n && len(list.Items) == n {
				return nil
			}
			if time.Since(lastReport) > 5*time.Second {
				lastReport = time.Now()
				fmt.Fprintf(os.Stderr, "  %d ManagedClusterAddOns, %d with %s; %s\n", len(list.Items), ok, what, summary(list.Items))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w\n%s", what, ctx.Err(), diagnose(context.Background(), c, list.Items, done))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// summary counts the ManagedClusterAddOns by their conditions' status and reason.
func summary(items []addonv1alpha1.ManagedClusterAddOn) string {
	counts := map[string]int{}
	for i := range items {
		for _, t := range []string{addonv1alpha1.ManagedClusterAddOnConditionConfigured, addonv1alpha1.ManagedClusterAddOnConditionProgressing,
			addonv1alpha1.ManagedClusterAddOnManifestApplied, addonv1alpha1.ManagedClusterAddOnConditionAvailable} {
			if cnd := meta.FindStatusCondition(items[i].Status.Conditions, t); cnd != nil {
				counts[fmt.Sprintf("%s=%s/%s", t, cnd.Status, cnd.Reason)]++
			} else {
				counts[t+"=none"]++
			}
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, counts[k]))
	}
	return strings.Join(parts, " ")
}

// diagnose describes the first ManagedClusterAddOn not done (its status and its works'), and
// the ClusterManagementAddOn's status.
func diagnose(ctx context.Context, c client.Client, items []addonv1alpha1.ManagedClusterAddOn, done func(*addonv1alpha1.ManagedClusterAddOn) bool) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var b strings.Builder
	cma := &addonv1alpha1.ClusterManagementAddOn{}
	if err := c.Get(ctx, client.ObjectKey{Name: addonName}, cma); err == nil {
		data, _ := json.MarshalIndent(cma.Status, "", "  ")
		fmt.Fprintf(&b, "ClusterManagementAddOn %s status: %s\n", addonName, data)
	}
	for i := range items {
		m := &items[i]
		if done(m) {
			continue
		}
		data, _ := json.MarshalIndent(m.Status, "", "  ")
		fmt.Fprintf(&b, "ManagedClusterAddOn %s/%s status: %s\n", m.Namespace, m.Name, data)
		works := &workv1.ManifestWorkList{}
		if err := c.List(ctx, works, client.InNamespace(m.Namespace)); err == nil {
			for _, w := range works.Items {
				data, _ := json.MarshalIndent(w.Status.Conditions, "", "  ")
				fmt.Fprintf(&b, "ManifestWork %s/%s generation %d annotations %v conditions: %s\n", w.Namespace, w.Name, w.Generation, w.Annotations, data)
			}
		}
		break
	}
	return b.String()
}

// reportWork reports w Applied and Available for its generation, as the work agent of its
// cluster would: each manifest's resource status, and for Deployments the WellKnownStatus
// feedback of a ready Deployment (Replicas, ReadyReplicas and AvailableReplicas as its
// spec.replicas, 1 when unset), which the add-on manager's DeploymentAvailability health check
// reads. A conflict is retried (up to 5 times) on the work read again.
func reportWork(ctx context.Context, c client.Client, queued *workv1.ManifestWork) {
	key := client.ObjectKeyFromObject(queued)
	for attempt := 0; attempt < 5; attempt++ {
		w := &workv1.ManifestWork{}
		if err := c.Get(ctx, key, w); err != nil || reported(w) {
			break
		}
		report(w)
		if err := c.Status().Update(ctx, w); err == nil || !apierrors.IsConflict(err) {
			break
		}
	}
}

// reported says whether the work's status is the fake agent's for its generation.
func reported(w *workv1.ManifestWork) bool {
	a := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkAvailable)
	return a != nil && a.Status == metav1.ConditionTrue && a.ObservedGeneration == w.Generation &&
		len(w.Status.ResourceStatus.Manifests) == len(w.Spec.Workload.Manifests)
}

// report writes the status of an agent that applied w and found everything available.
func report(w *workv1.ManifestWork) {
	now := metav1.Now()
	cond := func(t, reason string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: "simulated",
			ObservedGeneration: w.Generation, LastTransitionTime: now}
	}
	benchenv.SetWorkAvailable(w)
	w.Status.ResourceStatus.Manifests = nil
	for i, m := range w.Spec.Workload.Manifests {
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Spec struct {
				Replicas *int64 `json:"replicas"`
			} `json:"spec"`
		}
		_ = json.Unmarshal(m.Raw, &o)
		gv, _ := schema.ParseGroupVersion(o.APIVersion)
		plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(o.Kind))
		mc := workv1.ManifestCondition{
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Group: gv.Group, Version: gv.Version, Kind: o.Kind,
				Resource: plural.Resource, Name: o.Metadata.Name, Namespace: o.Metadata.Namespace},
			Conditions: []metav1.Condition{cond(workv1.ManifestApplied, "AppliedManifestComplete"), cond(workv1.ManifestAvailable, "ResourceAvailable")},
		}
		if gv.Group == "apps" && o.Kind == "Deployment" {
			replicas := int64(1)
			if o.Spec.Replicas != nil {
				replicas = *o.Spec.Replicas
			}
			for _, name := range []string{workv1.WellKnownReplicas, workv1.WellKnownReadyReplicas, workv1.WellKnownAvailableReplicas} {
				v := replicas
				mc.StatusFeedbacks.Values = append(mc.StatusFeedbacks.Values, workv1.FeedbackValue{Name: name,
					Value: workv1.FieldValue{Type: workv1.Integer, Integer: &v}})
			}
			mc.Conditions = append(mc.Conditions, cond(workv1.ManifestStatusFeedbackSynced, "StatusFeedbackSynced"))
		}
		w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, mc)
	}
}
