package v1alpha1_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apis/internal/seedcheck"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// seedDir holds the documented example objects, relative to this package.
const seedDir = "../../../../e2e/testdata/seeds"

// seedKinds are the kinds the add-on seeds must cover.
var seedKinds = []string{"ClusterManagementAddOn", "ManagedClusterAddOn", "AddOnDeploymentConfig", "AddOnTemplate"}

func newValidator(t *testing.T) *seedcheck.Validator {
	t.Helper()
	return seedcheck.ForTest(t, "../../../crds/bases/addon.open-cluster-management.io_*.yaml", addonv1alpha1.AddToScheme)
}

// TestSeedsDecodeStrictly decodes every addon seed strictly into the Go types and
// validates it against the generated CRD as the API server would.
func TestSeedsDecodeStrictly(t *testing.T) {
	v := newValidator(t)
	kinds := seedcheck.CheckSeeds(t, v, filepath.Join(seedDir, "addon-*.yaml"), addonv1alpha1.GroupVersion)
	for _, k := range seedKinds {
		if kinds[k] == 0 {
			t.Errorf("no seed document of kind %s", k)
		}
	}
}

// TestSeedShapes pins decoded values where inline members (ConfigGroupResource,
// ConfigReferent, PlacementRef, RolloutConfig) could put a field in the wrong place.
func TestSeedShapes(t *testing.T) {
	cma := seedcheck.DecodeSeed(t, seedDir, "addon-addon-management-4-clustermanagementaddon.yaml", &addonv1alpha1.ClusterManagementAddOn{})
	if cma.Annotations[addonv1alpha1.AddonLifecycleAnnotationKey] != addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue {
		t.Errorf("lifecycle annotation: got %v", cma.Annotations)
	}
	is := cma.Spec.InstallStrategy
	if is.Type != addonv1alpha1.AddonInstallStrategyPlacements || len(is.Placements) != 1 {
		t.Fatalf("installStrategy: got %+v", is)
	}
	pl := is.Placements[0]
	if pl.Name != "placement-aws" || pl.Namespace != "default" || len(pl.Configs) != 1 ||
		pl.Configs[0].Resource != "addondeploymentconfigs" || pl.Configs[0].Name != "deploy-config" ||
		pl.Configs[0].Namespace != "open-cluster-management" {
		t.Errorf("placements[0]: got %+v", pl)
	}
	p := pl.RolloutStrategy.Progressive
	if pl.RolloutStrategy.Type != clusterv1alpha1.Progressive || p == nil || p.MaxConcurrency != intstr.FromString("25%") ||
		p.MaxFailures != intstr.FromInt32(2) || p.MinSuccessTime.Duration.Minutes() != 5 || p.ProgressDeadline != "10m" ||
		len(p.MandatoryDecisionGroups.MandatoryDecisionGroups) != 2 {
		t.Errorf("rolloutStrategy: got %+v", pl.RolloutStrategy)
	}

	defaults := seedcheck.DecodeSeed(t, seedDir, "addon-concepts-5-clustermanagementaddon.yaml", &addonv1alpha1.ClusterManagementAddOn{})
	sc := defaults.Spec.SupportedConfigs
	if len(sc) != 2 || sc[1].Group != "example.open-cluster-management.io" || sc[1].Resource != "exampleconfigs" ||
		sc[1].DefaultConfig == nil || sc[1].DefaultConfig.Name != "default-example-config" {
		t.Errorf("supportedConfigs: got %+v", sc)
	}

	mca := seedcheck.DecodeSeed(t, seedDir, "addon-scenarios-2-managedclusteraddon.yaml", &addonv1alpha1.ManagedClusterAddOn{})
	if mca.Spec.InstallNamespace != "open-cluster-management-agent-addon" || len(mca.Spec.Configs) != 1 ||
		mca.Spec.Configs[0].Name != "addon-proxy-settings" || mca.Spec.Configs[0].Group != "addon.open-cluster-management.io" {
		t.Errorf("ManagedClusterAddOn spec: got %+v", mca.Spec)
	}

	adc := seedcheck.DecodeSeed(t, seedDir, "addon-scenarios-1-addondeploymentconfig.yaml", &addonv1alpha1.AddOnDeploymentConfig{})
	if adc.Spec.ProxyConfig.NoProxy != ".cluster.local,.svc," || string(adc.Spec.ProxyConfig.CABundle) != "------\n" {
		t.Errorf("proxyConfig: got %+v", adc.Spec.ProxyConfig)
	}

	tmpl := seedcheck.DecodeSeed(t, seedDir, "addon-addon-gitops-upgrades-2-addontemplate.yaml", &addonv1alpha1.AddOnTemplate{})
	if tmpl.Spec.AddonName != "hello-template" || len(tmpl.Spec.AgentSpec.Workload.Manifests) != 3 {
		t.Fatalf("AddOnTemplate spec: got %+v", tmpl.Spec)
	}
	var sa struct {
		Kind     string            `json:"kind"`
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(tmpl.Spec.AgentSpec.Workload.Manifests[1].Raw, &sa); err != nil || sa.Kind != "ServiceAccount" ||
		sa.Metadata.Name != "hello-template-agent-sa" {
		t.Errorf("agentSpec manifest 1: got %+v (%v)", sa, err)
	}
}

// TestValidatorRejects shows the seed check has teeth, including for the seed
// mistakes the repairs in e2e/testdata/seeds fixed.
func TestValidatorRejects(t *testing.T) {
	v := newValidator(t)
	const cma = "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata: {name: a}\n"
	const mca = "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ManagedClusterAddOn\nmetadata: {name: a, namespace: cluster1}\n"
	const adc = "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata: {name: c, namespace: cluster1}\n"
	const tpl = "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnTemplate\nmetadata: {name: t}\n"
	seedcheck.ExpectRejected(t, v, []seedcheck.Rejection{
		{Name: "install strategy type Placement (seed typo)", Doc: cma + "spec: {installStrategy: {type: Placement}}", Want: "spec.installStrategy.type"},
		{Name: "misnamed field", Doc: cma + "spec: {addonMeta: {displayName: x}}", Want: "spec.addonMeta"},
		{Name: "placement without namespace", Doc: cma + "spec: {installStrategy: {type: Placements, placements: [{name: p}]}}", Want: "spec.installStrategy.placements[0].namespace"},
		{Name: "duplicate placement", Doc: cma + "spec: {installStrategy: {type: Placements, placements: [{name: p, namespace: d}, {name: p, namespace: d}]}}", Want: "spec.installStrategy.placements[1]"},
		{Name: "duplicate supported config", Doc: cma + "spec: {supportedConfigs: [{group: g, resource: r}, {group: g, resource: r}]}", Want: "spec.supportedConfigs[1]"},
		{Name: "config without resource", Doc: mca + "spec: {configs: [{group: g, name: cfg}]}", Want: "spec.configs[0].resource"},
		{Name: "install namespace not a DNS label", Doc: mca + "spec: {installNamespace: Agent_NS}", Want: "spec.installNamespace"},
		{Name: "ManagedClusterAddOn without namespace", Doc: "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ManagedClusterAddOn\nmetadata: {name: a}\nspec: {}", Want: "metadata.namespace"},
		{Name: "caBundle elided with ... (seed as written)", Doc: adc + "spec: {proxyConfig: {caBundle: LS0tLS...LS0tCg==}}", Want: "spec.proxyConfig.caBundle"},
		{Name: "customized variable name with a dash", Doc: adc + "spec: {customizedVariables: [{name: my-var, value: x}]}", Want: "spec.customizedVariables[0].name"},
		{Name: "container ID of an unknown resource type", Doc: adc + "spec: {resourceRequirements: [{containerID: 'services:a:b', resources: {}}]}", Want: "spec.resourceRequirements[0].containerID"},
		{Name: "AddOnTemplate without addonName (seed as written)", Doc: tpl + "spec: {agentSpec: {}}", Want: "spec.addonName"},
		{Name: "registration type outside the enum", Doc: tpl + "spec: {addonName: a, agentSpec: {}, registration: [{type: Token}]}", Want: "spec.registration[0].type"},
		{Name: "custom signer without signingCA", Doc: tpl + "spec: {addonName: a, agentSpec: {}, registration: [{type: CustomSigner, customSigner: {signerName: example.com/signer}}]}", Want: "signingCA"},
		{Name: "manifest without apiVersion (seed as written)", Doc: tpl + "spec: {addonName: a, agentSpec: {workload: {manifests: [{kind: Deployment, metadata: {name: d}}]}}}", Want: "spec.agentSpec.workload.manifests[0].apiVersion"},
	})
}

// TestCRDDefaults checks OCM's defaults are filled in by the API server.
func TestCRDDefaults(t *testing.T) {
	v := newValidator(t)
	u, err := v.Defaulted([]byte("apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\n" +
		"metadata: {name: a}\nspec:\n  supportedConfigs: [{resource: addondeploymentconfigs}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	spec := u["spec"].(map[string]any)
	if got := spec["installStrategy"].(map[string]any)["type"]; got != addonv1alpha1.AddonInstallStrategyManual {
		t.Errorf("installStrategy.type defaults to %v, want Manual", got)
	}
	if got, ok := spec["supportedConfigs"].([]any)[0].(map[string]any)["group"]; !ok || got != "" {
		t.Errorf("supportedConfigs[0].group defaults to %v (set %v), want \"\"", got, ok)
	}

	u, err = v.Defaulted([]byte("apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\n" +
		"metadata: {name: a}\nspec:\n  installStrategy:\n    type: Placements\n    placements: [{name: p, namespace: default}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	pl := u["spec"].(map[string]any)["installStrategy"].(map[string]any)["placements"].([]any)[0].(map[string]any)
	if got := pl["rolloutStrategy"].(map[string]any)["type"]; got != "All" {
		t.Errorf("placements[0].rolloutStrategy.type defaults to %v, want All", got)
	}

	u, err = v.Defaulted([]byte("apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ManagedClusterAddOn\n" +
		"metadata: {name: a, namespace: cluster1}\nspec: {}\nstatus: {healthCheck: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := u["spec"].(map[string]any)["installNamespace"]; got != "open-cluster-management-agent-addon" {
		t.Errorf("installNamespace defaults to %v", got)
	}
	if got := u["status"].(map[string]any)["healthCheck"].(map[string]any)["mode"]; got != string(addonv1alpha1.HealthCheckModeLease) {
		t.Errorf("healthCheck.mode defaults to %v, want Lease", got)
	}

	u, err = v.Defaulted([]byte("apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\n" +
		"metadata: {name: c, namespace: cluster1}\nspec: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := u["spec"].(map[string]any)["agentInstallNamespace"]; got != "open-cluster-management-agent-addon" {
		t.Errorf("agentInstallNamespace defaults to %v", got)
	}
}

// TestAgentSpecCarriesCurrentManifestConfigs: an AddOnTemplate's agentSpec is a
// ManifestWork spec, so it takes the current manifestConfigs fields and refuses
// the old ones under its own path.
func TestAgentSpecCarriesCurrentManifestConfigs(t *testing.T) {
	v := newValidator(t)
	v.CompareDefaulted = true
	const cfg = "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnTemplate\nmetadata: {name: t}\n" +
		"spec:\n  addonName: hello\n  agentSpec:\n    manifestConfigs:\n    - resourceIdentifier: {group: apps, resource: deployments, namespace: agent, name: hello-agent}\n"
	obj, err := v.Check([]byte(cfg + `      feedbackScrapeType: Watch
      feedbackRules: [{type: WellKnownStatus}]
      conditionRules:
      - {type: CEL, condition: Ready, celExpressions: ['object.status.readyReplicas == object.status.replicas'], messageExpression: 'result ? "ready" : "not ready"'}
      updateStrategy:
        type: ServerSideApply
        serverSideApply:
          ignoreFields:
          - condition: OnSpokePresent
            jsonPointers: [/spec/replicas]
          - condition: OnSpokeChange
            jqPathExpressions: ['.spec.template.metadata.annotations']
`))
	if err != nil {
		t.Fatal(err)
	}
	mc := obj.(*addonv1alpha1.AddOnTemplate).Spec.AgentSpec.ManifestConfigs[0]
	ignore := mc.UpdateStrategy.ServerSideApply.IgnoreFields
	if mc.FeedbackScrapeType != workv1.FeedbackWatchType || mc.ConditionRules[0].Type != workv1.CelConditionExpressionsType ||
		mc.ConditionRules[0].CelExpressions[0] != "object.status.readyReplicas == object.status.replicas" ||
		len(ignore) != 2 || ignore[0].JSONPointers[0] != "/spec/replicas" || ignore[1].JQPathExpressions[0] != ".spec.template.metadata.annotations" {
		t.Errorf("agentSpec.manifestConfigs[0]: got %+v", mc)
	}

	u, err := v.Defaulted([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	agent := u["spec"].(map[string]any)["agentSpec"].(map[string]any)
	if got := agent["manifestConfigs"].([]any)[0].(map[string]any)["feedbackScrapeType"]; got != string(workv1.FeedbackPollType) {
		t.Errorf("agentSpec.manifestConfigs[0].feedbackScrapeType defaults to %v, want Poll", got)
	}

	const path = "spec.agentSpec.manifestConfigs[0]"
	seedcheck.ExpectRejected(t, v, []seedcheck.Rejection{
		{Name: "old rule type WellKnownCompletions", Doc: cfg + "      conditionRules: [{type: WellKnownCompletions, condition: Complete}]", Want: path + ".conditionRules[0].type"},
		{Name: "celExpressions in the old object form", Doc: cfg + "      conditionRules: [{type: CEL, condition: Complete, celExpressions: [{expression: 'true'}]}]", Want: path + ".conditionRules[0].celExpressions[0]"},
		{Name: "feedbackScrapeType outside the enum", Doc: cfg + "      feedbackScrapeType: Stream", Want: path + ".feedbackScrapeType"},
		{Name: "ignore field selecting nothing", Doc: cfg + "      updateStrategy: {type: ServerSideApply, serverSideApply: {ignoreFields: [{condition: OnSpokeChange}]}}", Want: "at least one of jsonPaths, jsonPointers or jqPathExpressions must be set"},
	})
}
