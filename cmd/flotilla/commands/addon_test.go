package commands

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/hub/addon"
)

// addonCLI runs `flotilla args...` from NewRoot, with `flotilla addon` attached when NewRoot
// does not attach it yet.
func addonCLI(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	root := NewRoot()
	if c, _, ferr := root.Find([]string{"addon"}); ferr != nil || c == root {
		root.AddCommand(newAddonCommand())
	}
	var out, errw bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(""))
	root.SetOut(&out)
	root.SetErr(&errw)
	err = root.ExecuteContext(ctx)
	return out.String(), errw.String(), err
}

// TestAddonCommandsHaveHelp checks that --help documents addon enable, addon disable and
// get addons with examples.
func TestAddonCommandsHaveHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"addon", "--help"}, []string{"enable ", "disable ", "ClusterManagementAddOn", "flotilla addon enable helloworld --clusters cluster1,cluster2"}},
		{[]string{"addon", "enable", "--help"}, []string{"Examples:", "--clusters", "--placement", "-n, --namespace", "--annotate", "--labels",
			"--config", "--rollout", "--max-concurrency", "--max-failures", "--progress-deadline", "--min-success-time", "--mandatory-groups",
			"--names", "--kubeconfig", "clusteradm addon enable", "supportedConfigs", "GROUP/RESOURCE/[NAMESPACE/]NAME",
			"flotilla addon enable helloworld --placement default/placement-aws",
			"addon.open-cluster-management.io/addondeploymentconfigs/open-cluster-management/deploy-config"}},
		{[]string{"addon", "disable", "--help"}, []string{"Examples:", "--clusters", "--all-clusters", "--placement", "--names",
			"flotilla addon disable helloworld --clusters cluster1,cluster2", "flotilla addon disable helloworld --placement default/placement-aws"}},
		{[]string{"get", "--help"}, []string{"addons "}},
		{[]string{"get", "addons", "--help"}, []string{"Examples:", "--cluster", "--kubeconfig", "Available, Degraded and Progressing",
			"spec hash", "AddOnTemplate", "flotilla get addons --cluster cluster1"}},
	} {
		out, _, err := addonCLI(t.Context(), tc.args...)
		if err != nil {
			t.Errorf("flotilla %v: %v", tc.args, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("flotilla %v does not show %q:\n%s", tc.args, w, out)
			}
		}
	}
}

// TestAddonCommandErrors checks the flag errors that come before the hub is contacted:
// nothing listens at the kubeconfig's server.
func TestAddonCommandErrors(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "hub.kubeconfig")
	if err := environment.WriteKubeconfig(kc, "hub", &rest.Config{Host: "https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"enable without a name", []string{"addon", "enable", "--clusters", "c1"}, "no add-on given"},
		{"enable without clusters", []string{"addon", "enable", "a"}, "--clusters or --placement is required"},
		{"enable with both", []string{"addon", "enable", "a", "--clusters", "c1", "--placement", "ns/p"}, "--clusters and --placement are mutually exclusive"},
		{"enable with a bad placement", []string{"addon", "enable", "a", "--placement", "p"}, `--placement: placement "p": want NAMESPACE/NAME`},
		{"enable --placement --namespace", []string{"addon", "enable", "a", "--placement", "ns/p", "--namespace", "x"}, "--namespace is for --clusters"},
		{"enable --placement --annotate", []string{"addon", "enable", "a", "--placement", "ns/p", "--annotate", "k=v"}, "--annotate is for --clusters"},
		{"enable --clusters --rollout", []string{"addon", "enable", "a", "--clusters", "c1", "--rollout", "All"}, "--rollout is for --placement"},
		{"enable a rollout setting without --rollout", []string{"addon", "enable", "a", "--placement", "ns/p", "--max-failures", "1"},
			"--max-failures is a setting of the rollout strategy: give --rollout too"},
		{"enable a bad rollout", []string{"addon", "enable", "a", "--placement", "ns/p", "--rollout", "Canary"}, `--rollout: rollout type "Canary"`},
		{"enable All with max concurrency", []string{"addon", "enable", "a", "--placement", "ns/p", "--rollout", "All", "--max-concurrency", "2"},
			"max concurrency is a setting of the Progressive rollout, not All"},
		{"enable a bad config", []string{"addon", "enable", "a", "--placement", "ns/p", "--config", "deploy-config"}, `--config: config "deploy-config": want GROUP/RESOURCE/[NAMESPACE/]NAME`},
		{"enable a bad annotation", []string{"addon", "enable", "a", "--clusters", "c1", "--annotate", "novalue"}, `--annotate "novalue": want KEY=VALUE`},
		{"enable a bad label", []string{"addon", "enable", "a", "--clusters", "c1", "--labels", "k=a b"}, `--labels "k=a b": invalid value`},
		{"disable without a name", []string{"addon", "disable", "--clusters", "c1"}, "no add-on given"},
		{"disable without clusters", []string{"addon", "disable", "a"}, "--clusters, --all-clusters or --placement is required"},
		{"disable with two", []string{"addon", "disable", "a", "--clusters", "c1", "--all-clusters"}, "mutually exclusive"},
		{"disable with a bad placement", []string{"addon", "disable", "a", "--placement", "a/b/c"}, `placement "a/b/c": want NAMESPACE/NAME`},
		{"get addons with two names", []string{"get", "addons", "a", "b"}, "accepts at most 1 arg(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			out, _, err := addonCLI(ctx, append(tc.args, "--kubeconfig", kc)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("flotilla %v: error %v, want one containing %q\nstdout:\n%s", tc.args, err, tc.want, out)
			}
		})
	}
}

// TestAddonCommands runs `flotilla addon enable/disable` and `flotilla get addons` against a
// real hub API server. No add-on manager runs: the test writes the ManagedClusterAddOns'
// status as the manager would.
func TestAddonCommands(t *testing.T) {
	fleet := fleettest.StartT(t, environment.Options{})
	c, _, err := hubClientsForConfig(fleet.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	run := func(args ...string) (string, string, error) {
		return addonCLI(ctx, append(args, "--kubeconfig", fleet.Hub.KubeconfigPath)...)
	}
	mustRun := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, err := run(args...)
		if err != nil {
			t.Fatalf("flotilla %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, errOut)
		}
		return out, errOut
	}
	mustFail := func(want string, args ...string) {
		t.Helper()
		out, _, err := run(args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("flotilla %v: error %v, want one containing %q\nstdout:\n%s", args, err, want, out)
		}
	}
	mustCreate := func(obj client.Object) {
		t.Helper()
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	getMCA := func(cluster, name string) *addonv1alpha1.ManagedClusterAddOn {
		t.Helper()
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, mca); err != nil {
			t.Fatalf("reading ManagedClusterAddOn %s/%s: %v", cluster, name, err)
		}
		return mca
	}
	getCMA := func(name string) *addonv1alpha1.ClusterManagementAddOn {
		t.Helper()
		cma := &addonv1alpha1.ClusterManagementAddOn{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, cma); err != nil {
			t.Fatalf("reading ClusterManagementAddOn %s: %v", name, err)
		}
		return cma
	}

	for _, name := range []string{"cluster1", "cluster2", "pending"} {
		mustCreate(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	for _, name := range []string{"cluster1", "cluster2", "apps"} {
		mustCreate(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	mustCreate(&addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "helloworld",
		Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: "addondeploymentconfigs"}}},
			InstallStrategy:  addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}}})
	mustCreate(&addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "policy"},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}}})
	mustCreate(&addonv1alpha1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "deploy-config"}})
	mustCreate(&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "aws"}})

	// Manual: refused for unknown clusters and add-ons, nothing written; then idempotent.
	mustFail("unknown clusters ghost, nowhere: no ManagedCluster of that name on the hub; no ManagedClusterAddOn was written",
		"addon", "enable", "helloworld", "--clusters", "cluster1,ghost,nowhere")
	mustFail("unknown add-on nope: no ClusterManagementAddOn of that name on the hub", "addon", "enable", "helloworld", "nope", "--clusters", "cluster1")
	mustFail("cluster pending is not accepted yet", "addon", "enable", "helloworld", "--clusters", "pending")
	if list := (&addonv1alpha1.ManagedClusterAddOnList{}); c.List(ctx, list) != nil || len(list.Items) != 0 {
		t.Fatalf("refused enables wrote ManagedClusterAddOns: %+v", list.Items)
	}
	out, _ := mustRun("addon", "enable", "--names", "helloworld,policy", "--clusters", "cluster1,cluster2",
		"--annotate", "addon.open-cluster-management.io/on-multicluster-hub=true")
	for _, want := range []string{"add-on helloworld enabled in cluster cluster1 (ManagedClusterAddOn created)", "add-on policy enabled in cluster cluster2 (ManagedClusterAddOn created)"} {
		if !strings.Contains(out, want) {
			t.Errorf("enable output lacks %q:\n%s", want, out)
		}
	}
	mca := getMCA("cluster1", "helloworld")
	if mca.Annotations["addon.open-cluster-management.io/on-multicluster-hub"] != "true" || mca.Spec.InstallNamespace != addon.DefaultInstallNamespace {
		t.Errorf("ManagedClusterAddOn cluster1/helloworld: annotations %v, installNamespace %q", mca.Annotations, mca.Spec.InstallNamespace)
	}
	out, _ = mustRun("addon", "enable", "helloworld", "--clusters", "cluster1")
	if want := "add-on helloworld is already enabled in cluster cluster1\n"; out != want {
		t.Errorf("enable again: %q, want %q", out, want)
	}
	out, _ = mustRun("addon", "enable", "helloworld", "--clusters", "cluster1", "-n", "hello", "--labels", "team=a",
		"--config", "addon.open-cluster-management.io/addondeploymentconfigs/deploy-config")
	if !strings.Contains(out, "(ManagedClusterAddOn updated)") {
		t.Errorf("enable with a namespace: %q", out)
	}
	mca = getMCA("cluster1", "helloworld")
	if mca.Spec.InstallNamespace != "hello" || mca.Labels["team"] != "a" || mca.Annotations["addon.open-cluster-management.io/on-multicluster-hub"] != "true" ||
		len(mca.Spec.Configs) != 1 || mca.Spec.Configs[0].Name != "deploy-config" || mca.Spec.Configs[0].Namespace != "" {
		t.Errorf("updated ManagedClusterAddOn: %+v %+v", mca.ObjectMeta, mca.Spec)
	}

	// get addons: the conditions, short hashes and template as the add-on manager writes them.
	hashA, hashT := strings.Repeat("a1", 32), strings.Repeat("b2", 32)
	mca.Status.Conditions = []metav1.Condition{
		{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionTrue, Reason: "ProbeAvailable", LastTransitionTime: metav1.Now()},
		{Type: addonv1alpha1.ManagedClusterAddOnConditionProgressing, Status: metav1.ConditionFalse, Reason: "InstallSucceed", LastTransitionTime: metav1.Now()},
	}
	mca.Status.ConfigReferences = []addonv1alpha1.ConfigReference{
		{ConfigGroupResource: addon.AddOnDeploymentConfigResource, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "apps", Name: "deploy-config"},
			DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "apps", Name: "deploy-config"}, SpecHash: hashA}},
		{ConfigGroupResource: addon.AddOnTemplateResource, ConfigReferent: addonv1alpha1.ConfigReferent{Name: "hello-1.2"},
			DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: "hello-1.2"}, SpecHash: hashT}},
	}
	if err := c.Status().Update(ctx, mca); err != nil {
		t.Fatal(err)
	}
	out, _ = mustRun("get", "addons")
	wantTable := [][]string{
		{"CLUSTER", "NAME", "AVAILABLE", "DEGRADED", "PROGRESSING", "CONFIG", "VERSION"},
		{"cluster1", "helloworld", "True", "-", "False", "a1a1a1a1,b2b2b2b2", "hello-1.2"},
		{"cluster1", "policy", "-", "-", "-", "-", "-"},
		{"cluster2", "helloworld", "-", "-", "-", "-", "-"},
		{"cluster2", "policy", "-", "-", "-", "-", "-"},
	}
	if got := addonTableFields(out); !reflect.DeepEqual(got, wantTable) {
		t.Errorf("get addons:\n%s\nwant %v", out, wantTable)
	}
	out, _ = mustRun("get", "addons", "helloworld", "--cluster", "cluster2")
	if got := addonTableFields(out); len(got) != 2 || got[1][0] != "cluster2" || got[1][1] != "helloworld" {
		t.Errorf("get addons helloworld --cluster cluster2:\n%s", out)
	}
	out, _ = mustRun("get", "mca", "--cluster", "cluster1")
	if got := addonTableFields(out); len(got) != 3 {
		t.Errorf("get mca --cluster cluster1:\n%s", out)
	}
	mustFail("unknown cluster ghost", "get", "addons", "--cluster", "ghost")
	mustFail("unknown add-on ghost", "get", "addons", "ghost")

	// Placements: added to the install strategy, other placements kept, settings updated.
	_, errOut := mustRun("addon", "enable", "helloworld", "--placement", "apps/aws",
		"--config", "addon.open-cluster-management.io/addondeploymentconfigs/deploy-config", "--rollout", "Progressive", "--max-concurrency", "25%")
	if errOut != "" {
		t.Errorf("enable by an existing placement and config warned:\n%s", errOut)
	}
	_, errOut = mustRun("addon", "enable", "helloworld", "--placement", "apps/gcp",
		"--config", "addon.open-cluster-management.io/addondeploymentconfigs/other/missing")
	for _, want := range []string{"warning: add-on helloworld: placement apps/gcp does not exist yet",
		"config addondeploymentconfigs.addon.open-cluster-management.io other/missing does not exist yet"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("enable by a missing placement: stderr lacks %q:\n%s", want, errOut)
		}
	}
	out, _ = mustRun("addon", "enable", "helloworld", "--placement", "apps/aws", "--rollout", "Progressive", "--max-concurrency", "25%")
	if want := "add-on helloworld: placement apps/aws is already in its install strategy\n"; out != want {
		t.Errorf("enable by the same placement again: %q, want %q", out, want)
	}
	is := getCMA("helloworld").Spec.InstallStrategy
	if is.Type != addonv1alpha1.AddonInstallStrategyPlacements || len(is.Placements) != 2 || is.Placements[0].Name != "aws" || is.Placements[1].Name != "gcp" {
		t.Fatalf("install strategy %+v", is)
	}
	aws := is.Placements[0]
	if aws.RolloutStrategy.Type != clusterv1alpha1.Progressive || aws.RolloutStrategy.Progressive == nil ||
		aws.RolloutStrategy.Progressive.MaxConcurrency != intstr.FromString("25%") || len(aws.Configs) != 1 || aws.Configs[0].Name != "deploy-config" {
		t.Errorf("placement aws: %+v", aws)
	}
	mustFail("add-on policy does not support configurations of addondeploymentconfigs.addon.open-cluster-management.io",
		"addon", "enable", "policy", "--placement", "apps/aws", "--config", "addon.open-cluster-management.io/addondeploymentconfigs/deploy-config")
	_, errOut = mustRun("addon", "enable", "policy", "--placement", "apps/aws")
	if !strings.Contains(errOut, "ClusterManagementAddOn policy is not annotated addon.open-cluster-management.io/lifecycle: addon-manager") {
		t.Errorf("enable a self-managed add-on by placement: stderr %q", errOut)
	}

	out, _ = mustRun("addon", "disable", "helloworld", "--placement", "apps/gcp")
	if want := "add-on helloworld: placement apps/gcp removed from its install strategy\n"; out != want {
		t.Errorf("disable --placement: %q, want %q", out, want)
	}
	out, _ = mustRun("addon", "disable", "helloworld", "--placement", "apps/gcp")
	if want := "add-on helloworld: placement apps/gcp is not in its install strategy\n"; out != want {
		t.Errorf("disable --placement again: %q, want %q", out, want)
	}
	if ps := getCMA("helloworld").Spec.InstallStrategy.Placements; len(ps) != 1 || ps[0].Name != "aws" {
		t.Errorf("placements after disable: %+v", ps)
	}

	// Manual disable: refused for unknown clusters, idempotent, --all-clusters.
	mustFail("unknown cluster ghost", "addon", "disable", "helloworld", "--clusters", "cluster1,ghost")
	out, _ = mustRun("addon", "disable", "helloworld", "--clusters", "cluster1")
	if want := "add-on helloworld disabled in cluster cluster1 (ManagedClusterAddOn deleted)\n"; out != want {
		t.Errorf("disable: %q, want %q", out, want)
	}
	out, _ = mustRun("addon", "disable", "helloworld", "--clusters", "cluster1")
	if want := "add-on helloworld is not enabled in cluster cluster1\n"; out != want {
		t.Errorf("disable again: %q, want %q", out, want)
	}
	out, _ = mustRun("addon", "disable", "--names", "policy", "--all-clusters")
	if want := "add-on policy disabled in cluster cluster1 (ManagedClusterAddOn deleted)\nadd-on policy disabled in cluster cluster2 (ManagedClusterAddOn deleted)\n"; out != want {
		t.Errorf("disable --all-clusters: %q, want %q", out, want)
	}
	for _, key := range []client.ObjectKey{{Namespace: "cluster1", Name: "helloworld"}, {Namespace: "cluster1", Name: "policy"}, {Namespace: "cluster2", Name: "policy"}} {
		if err := c.Get(ctx, key, &addonv1alpha1.ManagedClusterAddOn{}); !apierrors.IsNotFound(err) {
			t.Errorf("ManagedClusterAddOn %s: %v, want it deleted", key, err)
		}
	}
	getMCA("cluster2", "helloworld")
	mustFail("unknown add-on ghost", "addon", "disable", "ghost", "--all-clusters")
}

// addonTableFields splits a table into the fields of each line.
func addonTableFields(s string) [][]string {
	var out [][]string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, strings.Fields(l))
	}
	return out
}
