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
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
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
	binary := flag.String("flotilla", "", "the flotilla binary to run the hub with (default: flotilla in the control-plane bin directory)")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	verbose := flag.Bool("v", false, "log the hub's output to stderr")
	hold := flag.Duration("hold", 0, "keep the hub running this long after the measurements (or until Ctrl-C), to inspect it with the printed kubeconfig")
	flag.Parse()
	ctx, cancel := benchenv.Context(*timeout)
	defer cancel()
	bin, err := benchenv.Binary(*binary)
	if err != nil {
		benchenv.Exit("bench-addons", err)
	}
	line, err := run(ctx, bin, *clusters, *verbose, *hold)
	if err != nil {
		benchenv.Exit("bench-addons", err)
	}
	fmt.Println(line)
}

func run(ctx context.Context, binary string, n int, verbose bool, hold time.Duration) (line string, err error) {
	var logw io.Writer = io.Discard
	if verbose {
		logw = os.Stderr
	}
	ctrllog.SetLogger(logr.Discard())
	fmt.Fprintln(os.Stderr, "starting the hub API server")
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true})
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	c, cfg, scheme, err := benchenv.Client(cp)
	if err != nil {
		return "", err
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return "", err
	}
	hub, err := benchenv.StartHub(ctx, binary, cp.KubeconfigPath, logw,
		"--feature-gates", "DefaultClusterSet=false,AddonManagement=true", "--kube-api-qps", "1000", "--kube-api-burst", "2000",
		"--metrics-bind-address", metricsAddr)
	if err != nil {
		return "", err
	}
	defer hub.Stop()

	fmt.Fprintf(os.Stderr, "creating %d clusters\n", n)
	if err := fleet(ctx, c, n); err != nil {
		return "", err
	}
	if err := waitDecided(ctx, c, n); err != nil {
		return "", err
	}
	if err := waitPlugins(ctx, c); err != nil {
		return "", err
	}
	actx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	go renewLeases(actx, c, n)
	if err := fakeAgent(actx, cfg, scheme, c); err != nil {
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
	before := reconciles(ctx, metricsAddr)
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
	fmt.Fprintf(os.Stderr, "  install and upgrade: %s\n", reconciles(ctx, metricsAddr))
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

// fleet creates the set, its binding in ns, n accepted and Available clusters in the set with
// their namespaces, and a placement selecting all of them.
func fleet(ctx context.Context, c client.Client, n int) error {
	if err := c.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: setName}}); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	if err := c.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: setName},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: setName}}); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			name := clusterName(i)
			mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{clusterv1beta2.ClusterSetLabel: setName}},
				Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
			if err := c.Create(gctx, mc); err != nil {
				return err
			}
			orig := mc.DeepCopy()
			for _, t := range []string{clusterv1.ManagedClusterConditionJoined, clusterv1.ManagedClusterConditionAvailable} {
				meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: t,
					Status: metav1.ConditionTrue, Reason: "Simulated", Message: "simulated"})
			}
			if err := c.Status().Patch(gctx, mc, client.MergeFrom(orig)); err != nil {
				return err
			}
			if err := c.Create(gctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	all := int32(n)
	return c.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: placement},
		Spec: clusterv1beta1.PlacementSpec{NumberOfClusters: &all}})
}

func clusterName(i int) string { return fmt.Sprintf("cluster-%04d", i) }

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
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: clusterName(i), Name: leaseName}}
			patch := fmt.Sprintf(`{"spec":{"renewTime":%q}}`, now.Format(metav1.RFC3339Micro))
			_ = c.Patch(ctx, l, client.RawPatch("application/merge-patch+json", []byte(patch)))
		}
	}
}

// waitDecided waits until the placement selects every cluster.
func waitDecided(ctx context.Context, c client.Client, n int) error {
	fmt.Fprintln(os.Stderr, "waiting for the placement's decisions")
	for {
		p := &clusterv1beta1.Placement{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: placement}, p); err == nil && int(p.Status.NumberOfSelectedClusters) == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the placement did not select %d clusters: %w", n, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// reconciles reads the add-on manager's reconcile counts and mean durations from the hub's
// metrics, for the bench's progress output.
func reconciles(ctx context.Context, addr string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Sprintf("reading the hub's metrics: %v", err)
	}
	defer resp.Body.Close()
	sums, counts := map[string]float64{}, map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into map[string]float64
		switch {
		case strings.HasPrefix(line, "controller_runtime_reconcile_time_seconds_sum{"):
			into = sums
		case strings.HasPrefix(line, "controller_runtime_reconcile_time_seconds_count{"):
			into = counts
		default:
			continue
		}
		_, ctrl, _ := strings.Cut(line, `controller="`)
		ctrl, _, _ = strings.Cut(ctrl, `"`)
		if !strings.HasPrefix(ctrl, "addon-") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			into[ctrl] += v
		}
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

// fakeAgent reports every ManifestWork Applied and Available for its generation as soon as it
// sees it, as the work agents of the clusters would, with 16 workers: each manifest's
// resource status, and for Deployments the WellKnownStatus feedback of a ready Deployment
// (Replicas, ReadyReplicas and AvailableReplicas as its spec.replicas, 1 when unset), which
// the add-on manager's DeploymentAvailability health check reads.
func fakeAgent(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, c client.Client) error {
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	inf, err := ca.GetInformer(ctx, &workv1.ManifestWork{})
	if err != nil {
		return err
	}
	queue := make(chan client.ObjectKey, 4096)
	enqueue := func(obj any) {
		if w, ok := obj.(*workv1.ManifestWork); ok && !reported(w) {
			queue <- client.ObjectKeyFromObject(w)
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
				case key := <-queue:
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
			}
		}()
	}
	return nil
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
	for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		meta.SetStatusCondition(&w.Status.Conditions, cond(t, "Simulated"))
	}
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
