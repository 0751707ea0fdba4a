package operator

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/core/operatorrun"
)

// Values is what a Klusterlet asks of the klusterlet chart's components render, and what of
// its spec Flotilla does not act on. ValuesFor makes it; it reads no cluster.
type Values struct {
	// Chart are the chart values derived from the spec (render: components), to merge over
	// the chart's defaults and the install's own values.
	Chart map[string]any
	// Mode is spec.deployOption.mode, Default when unset.
	Mode operatorv1.InstallMode
	// AgentNamespace is the namespace to render the agents in: the Klusterlet's name in the
	// Hosted modes, else spec.namespace (default open-cluster-management-agent).
	AgentNamespace string
	// Unsupported lists the JSON paths (with list indexes) of the fields set that Flotilla
	// ignores: ValidConfiguration False, UnsupportedFields.
	Unsupported []string
	// Blocking says why nothing new may be applied (Applied False,
	// UnsupportedConfiguration); empty when the spec can be applied.
	Blocking []string
	// Images says which of OCM's images the spec names and Flotilla's image replaces, for
	// the Applied message.
	Images []string
	// Gates are the featureGates lists, for ValidFeatureGates.
	Gates operatorrun.FeatureGates
}

// ValidConfiguration is Flotilla's ValidConfiguration condition for v.
func (v Values) ValidConfiguration() metav1.Condition {
	if len(v.Unsupported) == 0 {
		return metav1.Condition{Type: operatorv1.ConditionValidConfiguration, Status: metav1.ConditionTrue,
			Reason: operatorv1.ReasonConfigurationValid, Message: "Flotilla acts on every field set"}
	}
	return metav1.Condition{Type: operatorv1.ConditionValidConfiguration, Status: metav1.ConditionFalse,
		Reason:  operatorv1.ReasonUnsupportedFields,
		Message: "Flotilla does not implement, and ignores: " + strings.Join(v.Unsupported, ", ")}
}

// NotApplied is the Applied condition when v blocks applying (ok false otherwise).
func (v Values) NotApplied() (c metav1.Condition, ok bool) {
	if len(v.Blocking) == 0 {
		return metav1.Condition{}, false
	}
	return metav1.Condition{Type: operatorv1.ConditionKlusterletApplied, Status: metav1.ConditionFalse,
		Reason: operatorv1.ReasonUnsupportedConfiguration, Message: strings.Join(v.Blocking, "; ")}, true
}

// Flag names of `flotilla klusterlet` the values carry (chart values specFlags.registration
// and specFlags.work; the singleton agent takes both).
const (
	flagClusterName         = "cluster-name"
	flagFeatureGates        = "feature-gates"
	flagCSRExpiration       = "csr-expiration-seconds"
	flagMaxClaims           = "max-custom-cluster-claims"
	flagReservedSuffixes    = "reserved-cluster-claim-suffixes"
	flagClusterAnnotations  = "cluster-annotations"
	flagClusterLabels       = "cluster-labels"
	flagKubeAPIQPS          = "kube-api-qps"
	flagKubeAPIBurst        = "kube-api-burst"
	flagWorkKubeAPIQPS      = "work-kube-api-qps"
	flagWorkKubeAPIBurst    = "work-kube-api-burst"
	flagHubKubeAPIQPS       = "hub-kube-api-qps"
	flagHubKubeAPIBurst     = "hub-kube-api-burst"
	flagHubHostAlias        = "hub-host-alias"
	flagHostingClusterClaim = "hosting-cluster-claim"
	flagExternalServerURLs  = "external-server-urls"
	flagEvictionGracePeriod = "appliedmanifestwork-eviction-grace-period"
	flagStatusSyncInterval  = "status-sync-interval"
)

const (
	// registrationFlags and workFlags key the agents in specFlags.
	registrationFlags = "registration"
	workFlags         = "work"
	// ocmImagePrefix is where OCM's images live (registration, work, registration-operator...):
	// an image pull spec naming one runs Flotilla's image, which does their jobs.
	ocmImagePrefix           = "quay.io/open-cluster-management/"
	ocmImageReplacedTemplate = "%s: OCM's image %s, running Flotilla's image instead"
)

// builder collects the values of one Klusterlet.
type builder struct {
	mode        operatorv1.InstallMode
	values      map[string]any
	flags       map[string]map[string]any // registration, work
	images      map[string]any
	imageNotes  []string
	unsupported []string
	blocking    []string
	gates       operatorrun.FeatureGates
}

func (b *builder) flag(agent, name string, v any) { b.flags[agent][name] = v }

// both sets a flag on the registration and the work agent.
func (b *builder) both(name string, v any) {
	b.flag(registrationFlags, name, v)
	b.flag(workFlags, name, v)
}

// image applies the image rule: empty, or one of OCM's images, runs the chart's image (noted
// when OCM's); anything else runs as given.
func (b *builder) image(path, key, spec string) {
	switch {
	case spec == "":
	case strings.HasPrefix(spec, ocmImagePrefix):
		b.imageNotes = append(b.imageNotes, fmt.Sprintf(ocmImageReplacedTemplate, path, spec))
	default:
		b.images[key] = spec
	}
}

func (b *builder) singleton() bool {
	return b.mode == operatorv1.InstallModeSingleton || b.mode == operatorv1.InstallModeSingletonHosted
}

// A mapping is a row of the fields Flotilla acts on: the CRD schema leaves it covers (lists
// as []) and what it sets.
type mapping struct {
	// does says what the fields change (README's list).
	does   string
	leaves []string
	apply  func(s *operatorv1.KlusterletSpec, b *builder)
}

// A refusal is a row of the fields Flotilla does not act on: its leaves and the JSON paths
// set in a spec (with list indexes). Blocking ones stop the apply.
type refusal struct {
	// does says what the fields ask for that Flotilla does not do (README's list).
	does     string
	leaves   []string
	blocking bool
	set      func(s *operatorv1.KlusterletSpec) []string
}

// maxKlusterletName is the longest Klusterlet name the klusterlet chart takes (values.schema.json).
const maxKlusterletName = 50

const (
	rc = "spec.registrationConfiguration."
	wc = "spec.workConfiguration."
)

// regConf and workConf read the optional sections.
func regConf(s *operatorv1.KlusterletSpec) operatorv1.RegistrationConfiguration {
	if s.RegistrationConfiguration == nil {
		return operatorv1.RegistrationConfiguration{}
	}
	return *s.RegistrationConfiguration
}

func workConf(s *operatorv1.KlusterletSpec) operatorv1.WorkAgentConfiguration {
	if s.WorkConfiguration == nil {
		return operatorv1.WorkAgentConfiguration{}
	}
	return *s.WorkConfiguration
}

// positive sets flag name on agent when v > 0 (0 is "unset": the agent's default).
func positive[T int32 | int64](b *builder, agent, name string, v T) {
	if v > 0 {
		b.flag(agent, name, int64(v))
	}
}

// mappings are the fields Flotilla acts on (design-24 §1.2, "plan").
var mappings = []mapping{
	// The agent namespace (Default, Singleton) or the klusterlet namespace on the managed
	// cluster (Hosted modes): ValuesFor.
	{does: "agent namespace (Default, Singleton); klusterlet namespace on the managed cluster (Hosted modes); a change moves the agents and prunes the old ones", leaves: []string{"spec.namespace"}},
	// deployOption.mode selects the Deployments; ValuesFor refuses a change after the first apply.
	{does: "Default: registration and work agent Deployments; Singleton: one agent; Hosted, SingletonHosted: the same on a management cluster; a change after the first apply is refused (blocking)", leaves: []string{"spec.deployOption.mode"}},
	{does: "--cluster-name of every agent", leaves: []string{"spec.clusterName"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		b.values["clusterName"] = s.ClusterName
		b.both(flagClusterName, s.ClusterName)
	}},
	// OCM's singleton agent runs imagePullSpec, its two agents the other two.
	{does: "images: imagePullSpec the Singleton agent, the other two the registration and work agents (OCM's image or empty: the chart's)", leaves: []string{"spec.imagePullSpec", "spec.registrationImagePullSpec", "spec.workImagePullSpec"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		if b.singleton() {
			b.image("spec.imagePullSpec", "agent", s.ImagePullSpec)
			return
		}
		b.image("spec.registrationImagePullSpec", "registration", s.RegistrationImagePullSpec)
		b.image("spec.workImagePullSpec", "work", s.WorkImagePullSpec)
	}},
	{does: "--external-server-urls of the registration agent", leaves: []string{"spec.externalServerURLs[].url"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		var urls []any
		for _, u := range s.ExternalServerURLs {
			urls = append(urls, u.URL)
		}
		if len(urls) > 0 {
			b.flag(registrationFlags, flagExternalServerURLs, urls)
		}
	}},
	{does: "nodeSelector and tolerations of every agent Deployment", leaves: []string{"spec.nodePlacement.nodeSelector", "spec.nodePlacement.tolerations"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		if len(s.NodePlacement.NodeSelector) > 0 {
			b.values["nodeSelector"] = toValue(s.NodePlacement.NodeSelector)
		}
		if len(s.NodePlacement.Tolerations) > 0 {
			b.values["tolerations"] = toValue(s.NodePlacement.Tolerations)
		}
	}},
	{does: "resources of every agent container (Default: the chart's; BestEffort: none; ResourceRequirement: resourceRequirements)", leaves: []string{"spec.resourceRequirement.type", "spec.resourceRequirement.resourceRequirements"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		r := s.ResourceRequirement
		if r == nil {
			return
		}
		switch r.Type {
		case operatorv1.ResourceQosClassBestEffort:
			b.values["resources"] = nil // drops the chart's requests and limits
		case operatorv1.ResourceQosClassResourceRequirement:
			var want map[string]any
			if r.ResourceRequirements != nil {
				want, _ = toValue(r.ResourceRequirements).(map[string]any)
			}
			b.values["resources"] = verbatim(want, chartDefault("resources"))
		}
		// Default: the chart's resources.
	}},
	{does: "priorityClassName of every agent Deployment", leaves: []string{"spec.priorityClassName"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		if s.PriorityClassName != "" {
			b.values["priorityClassName"] = s.PriorityClassName
		}
	}},
	{does: "Enable: --hosting-cluster-claim (managementClusterName, else clusterName) of the registration agent", leaves: []string{"spec.deployOption.reportHostingCluster", "spec.deployOption.hosted.managementClusterName"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		if s.DeployOption.ReportHostingCluster != operatorv1.ReportHostingClusterModeEnable {
			return
		}
		host := s.ClusterName // the agents run on the managed cluster itself
		if h := s.DeployOption.Hosted; h != nil && h.ManagementClusterName != "" {
			host = h.ManagementClusterName
		}
		b.flag(registrationFlags, flagHostingClusterClaim, host)
	}},
	{does: "--hub-host-alias of every agent", leaves: []string{"spec.hubApiServerHostAlias.ip", "spec.hubApiServerHostAlias.hostname"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		if a := s.HubApiServerHostAlias; a != nil && a.Hostname != "" {
			b.both(flagHubHostAlias, a.Hostname+"="+a.IP)
		}
	}},
	{does: "--csr-expiration-seconds of the registration agent", leaves: []string{rc + "clientCertExpirationSeconds"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		positive(b, registrationFlags, flagCSRExpiration, regConf(s).ClientCertExpirationSeconds)
	}},
	{does: "--feature-gates of the registration agent (registrationConfiguration) and the work agent (workConfiguration); unknown gates: ValidFeatureGates", leaves: []string{rc + "featureGates[].feature", rc + "featureGates[].mode", wc + "featureGates[].feature", wc + "featureGates[].mode"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		for _, sec := range []struct {
			component, agent string
			gates            []operatorv1.FeatureGate
			set              map[featuregate.Feature]featuregate.FeatureSpec
		}{
			{"Registration", registrationFlags, regConf(s).FeatureGates, featuregates.DefaultSpokeRegistrationFeatureGates()},
			{"Work", workFlags, workConf(s).FeatureGates, featuregates.DefaultSpokeWorkFeatureGates()},
		} {
			var read operatorrun.FeatureGates
			implemented := func(name string) bool {
				_, inSet := sec.set[featuregate.Feature(name)]
				return inSet && klusterletGates[featuregate.Feature(name)]
			}
			read.Read(sec.component, sec.gates, implemented)
			b.gates.Read(sec.component, sec.gates, implemented)
			if len(read.Overrides) > 0 {
				on := map[string]any{}
				for name, v := range read.Overrides {
					on[name] = v
				}
				b.flag(sec.agent, flagFeatureGates, on)
			}
		}
	}},
	// OCM passes only the keys with its agent prefix; so does Flotilla.
	{does: "--cluster-annotations of the registration agent (agent.open-cluster-management.io/ keys only, as OCM)", leaves: []string{rc + "clusterAnnotations"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		kept := map[string]any{}
		for k, v := range regConf(s).ClusterAnnotations {
			if strings.HasPrefix(k, operatorv1.ClusterAnnotationsKeyPrefix+"/") {
				kept[k] = v
			}
		}
		if len(kept) > 0 {
			b.flag(registrationFlags, flagClusterAnnotations, kept)
		}
	}},
	{does: "--cluster-labels of the registration agent", leaves: []string{rc + "clusterLabels"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		if l := regConf(s).ClusterLabels; len(l) > 0 {
			b.flag(registrationFlags, flagClusterLabels, toValue(l))
		}
	}},
	{does: "--kube-api-qps and --kube-api-burst of the registration agent", leaves: []string{rc + "kubeAPIQPS", rc + "kubeAPIBurst"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		positive(b, registrationFlags, flagKubeAPIQPS, regConf(s).KubeAPIQPS)
		positive(b, registrationFlags, flagKubeAPIBurst, regConf(s).KubeAPIBurst)
	}},
	{does: "--max-custom-cluster-claims and --reserved-cluster-claim-suffixes of the registration agent", leaves: []string{rc + "clusterClaimConfiguration.maxCustomClusterClaims", rc + "clusterClaimConfiguration.reservedClusterClaimSuffixes"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		c := regConf(s).ClusterClaimConfiguration
		if c == nil {
			return
		}
		b.flag(registrationFlags, flagMaxClaims, int64(c.MaxCustomClusterClaims))
		if len(c.ReservedClusterClaimSuffixes) > 0 {
			b.flag(registrationFlags, flagReservedSuffixes, toValue(c.ReservedClusterClaimSuffixes))
		}
	}},
	{does: "--work-kube-api-qps/-burst and --hub-kube-api-qps/-burst of the work agent", leaves: []string{wc + "kubeAPIQPS", wc + "kubeAPIBurst", wc + "hubKubeAPIQPS", wc + "hubKubeAPIBurst"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		w := workConf(s)
		positive(b, workFlags, flagWorkKubeAPIQPS, w.KubeAPIQPS)
		positive(b, workFlags, flagWorkKubeAPIBurst, w.KubeAPIBurst)
		positive(b, workFlags, flagHubKubeAPIQPS, w.HubKubeAPIQPS)
		positive(b, workFlags, flagHubKubeAPIBurst, w.HubKubeAPIBurst)
	}},
	{does: "--appliedmanifestwork-eviction-grace-period and --status-sync-interval of the work agent", leaves: []string{wc + "appliedManifestWorkEvictionGracePeriod", wc + "statusSyncInterval"}, apply: func(s *operatorv1.KlusterletSpec, b *builder) {
		w := workConf(s)
		if d := w.AppliedManifestWorkEvictionGracePeriod; d != nil {
			b.flag(workFlags, flagEvictionGracePeriod, d.Duration.String())
		}
		if d := w.StatusSyncInterval; d != nil {
			b.flag(workFlags, flagStatusSyncInterval, d.Duration.String())
		}
	}},
}

// refusals are the fields Flotilla does not act on (design-24 §1.2, "refuse").
var refusals = []refusal{
	// OCM never passes the CA bundle to its agent either (a TODO in its klusterlet controller).
	{does: "the CA bundle of an external server URL (OCM does not pass it either)", leaves: []string{"spec.externalServerURLs[].caBundle"}, set: func(s *operatorv1.KlusterletSpec) []string {
		var out []string
		for i, u := range s.ExternalServerURLs {
			if len(u.CABundle) > 0 {
				out = append(out, fmt.Sprintf("spec.externalServerURLs[%d].caBundle", i))
			}
		}
		return out
	}},
	// MultipleHubs: one bootstrap kubeconfig only. type None is the default and changes nothing.
	{does: "MultipleHubs: one bootstrap kubeconfig only (type None acts as the default)", leaves: []string{rc + "bootstrapKubeConfigs.type", rc + "bootstrapKubeConfigs.localSecretsConfig.kubeConfigSecrets[].name", rc + "bootstrapKubeConfigs.localSecretsConfig.hubConnectionTimeoutSeconds"}, set: func(s *operatorv1.KlusterletSpec) []string {
		bk := regConf(s).BootstrapKubeConfigs
		var out []string
		if bk.Type == operatorv1.LocalSecrets {
			out = append(out, rc+"bootstrapKubeConfigs.type")
		}
		if l := bk.LocalSecrets; l != nil {
			for i := range l.KubeConfigSecrets {
				out = append(out, fmt.Sprintf("%sbootstrapKubeConfigs.localSecretsConfig.kubeConfigSecrets[%d].name", rc, i))
			}
			if l.HubConnectionTimeoutSeconds != 0 {
				out = append(out, rc+"bootstrapKubeConfigs.localSecretsConfig.hubConnectionTimeoutSeconds")
			}
		}
		return out
	}},
	// Registration other than by CSR would leave the cluster without a hub identity.
	{does: "csr acts; awsirsa and grpc are refused (blocking: the cluster would have no hub identity)", leaves: []string{rc + "registrationDriver.authType"}, blocking: true, set: func(s *operatorv1.KlusterletSpec) []string {
		if t := regConf(s).RegistrationDriver.AuthType; t != "" && t != operatorv1.CSRAuthType {
			return []string{rc + "registrationDriver.authType"}
		}
		return nil
	}},
	{does: "AWS IRSA registration", leaves: []string{rc + "registrationDriver.awsIrsa.hubClusterArn", rc + "registrationDriver.awsIrsa.managedClusterArn"}, set: func(s *operatorv1.KlusterletSpec) []string {
		a := regConf(s).RegistrationDriver.AwsIrsa
		if a == nil {
			return nil
		}
		var out []string
		if a.HubClusterArn != "" {
			out = append(out, rc+"registrationDriver.awsIrsa.hubClusterArn")
		}
		if a.ManagedClusterArn != "" {
			out = append(out, rc+"registrationDriver.awsIrsa.managedClusterArn")
		}
		return out
	}},
	// Add-ons register by CSR; csr is what Flotilla does.
	{does: "add-on registration by token (csr acts)", leaves: []string{rc + "addOnKubeClientRegistrationDriver.authType", rc + "addOnKubeClientRegistrationDriver.token.expirationSeconds"}, set: func(s *operatorv1.KlusterletSpec) []string {
		d := regConf(s).AddOnKubeClientRegistrationDriver
		if d == nil {
			return nil
		}
		var out []string
		if d.AuthType != "" && d.AuthType != operatorv1.CSRAuthType {
			out = append(out, rc+"addOnKubeClientRegistrationDriver.authType")
		}
		if d.Token != nil && d.Token.ExpirationSeconds != 0 {
			out = append(out, rc+"addOnKubeClientRegistrationDriver.token.expirationSeconds")
		}
		return out
	}},
}

// klusterletGates are the gates `flotilla klusterlet` implements (cmd/flotilla's
// klusterletFeatureGates: OCM's work agent set and AddonManagement).
var klusterletGates = func() map[featuregate.Feature]bool {
	out := map[featuregate.Feature]bool{featuregates.AddonManagement: true}
	for f := range featuregates.DefaultSpokeWorkFeatureGates() {
		out[f] = true
	}
	return out
}()

// ValuesFor maps k's spec to the klusterlet chart's values (render: components) and lists
// what Flotilla refuses. appliedMode is the deployOption.mode the Klusterlet was first applied
// with ("" before the first apply): another mode blocks.
func ValuesFor(k *operatorv1.Klusterlet, appliedMode operatorv1.InstallMode) Values {
	s := &k.Spec
	b := &builder{
		mode:   normalMode(s.DeployOption.Mode),
		values: map[string]any{},
		flags:  map[string]map[string]any{registrationFlags: {}, workFlags: {}},
		images: map[string]any{},
	}
	for _, m := range mappings {
		if m.apply != nil {
			m.apply(s, b)
		}
	}
	for _, r := range refusals {
		paths := r.set(s)
		if len(paths) == 0 {
			continue
		}
		if r.blocking {
			for _, p := range paths {
				b.blocking = append(b.blocking, fmt.Sprintf("%s: %q is not supported by Flotilla, which registers with CSRs (csr)", p, regConf(s).RegistrationDriver.AuthType))
			}
			continue
		}
		b.unsupported = append(b.unsupported, paths...)
	}
	// The name prefixes the agents' cluster-scoped objects (and is the agent namespace in the
	// Hosted modes): the chart takes a DNS label of at most maxKlusterletName characters.
	if errs := validation.IsDNS1123Label(k.Name); len(errs) > 0 || len(k.Name) > maxKlusterletName {
		b.blocking = append(b.blocking, fmt.Sprintf("metadata.name: %q: Flotilla needs a DNS label of at most %d characters, as it prefixes the agents' objects", k.Name, maxKlusterletName))
	}
	if s.ClusterName == "" {
		b.blocking = append(b.blocking, "spec.clusterName: required by Flotilla (the name the cluster registers under)")
	}
	if appliedMode != "" && normalMode(appliedMode) != b.mode {
		b.blocking = append(b.blocking, fmt.Sprintf("spec.deployOption.mode: %s, but the klusterlet was applied in %s mode, which cannot change once applied: delete the Klusterlet and create it again", b.mode, normalMode(appliedMode)))
	}

	agentNS := cmp.Or(s.Namespace, operatorv1.KlusterletDefaultNamespace)
	klusterlet := map[string]any{
		"name":   k.Name,
		"create": false, // the operator owns the Klusterlet
		"spec":   map[string]any{"deployOption": map[string]any{"mode": string(b.mode)}},
	}
	if hosted(b.mode) {
		klusterlet["managedNamespace"] = agentNS
		agentNS = k.Name
	}
	b.values["render"] = "components"
	b.values["klusterlet"] = klusterlet
	b.values["images"] = b.images
	b.values["specFlags"] = map[string]any{registrationFlags: b.flags[registrationFlags], workFlags: b.flags[workFlags]}

	slices.Sort(b.unsupported)
	return Values{Chart: b.values, Mode: b.mode, AgentNamespace: agentNS, Unsupported: b.unsupported,
		Blocking: b.blocking, Images: b.imageNotes, Gates: b.gates}
}

// normalMode is m, with OCM's default for "".
func normalMode(m operatorv1.InstallMode) operatorv1.InstallMode {
	return cmp.Or(m, operatorv1.InstallModeDefault)
}

func hosted(m operatorv1.InstallMode) bool {
	return m == operatorv1.InstallModeHosted || m == operatorv1.InstallModeSingletonHosted
}

// toValue is v as chart values (maps, lists, strings, numbers), by its JSON form.
func toValue(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil // API types always marshal
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil
	}
	return out
}

// verbatim returns want with a nil for every key of def (the chart's default) that want
// lacks, so that Helm's merge of values drops the default instead of keeping it.
func verbatim(want map[string]any, def any) map[string]any {
	out := maps.Clone(want)
	if out == nil {
		out = map[string]any{}
	}
	defMap, _ := def.(map[string]any)
	for k, d := range defMap {
		w, ok := out[k]
		if !ok {
			out[k] = nil
			continue
		}
		if wm, ok := w.(map[string]any); ok {
			out[k] = verbatim(wm, d)
		}
	}
	return out
}

// chartDefault is the klusterlet chart's default for a top-level value.
func chartDefault(key string) any {
	c, err := install.Load(install.KlusterletChart)
	if err != nil {
		return nil // embedded, loaded by its tests; rendering reports the error
	}
	return c.Values[key]
}

// managementCRDs are the chart's CRDs whose objects live where the agents run in the Hosted
// modes: the Klusterlet, and the WasmPlugins the work agent's plugin loader reads there.
var managementCRDs = []string{"klusterlets.operator.open-cluster-management.io", "wasmplugins.flotilla.dev"}

// Target is the cluster the operator applies o to, o being rendered for a Hosted Klusterlet:
// its flotilla.dev/target label, or for the two kinds the chart cannot label, the CRDs (its
// crds/ directory: the managed cluster's APIs, but managementCRDs) and the release Namespace
// install.Render adds (the agent namespace, TargetManagement). "" for anything else unlabelled.
func Target(o *unstructured.Unstructured, agentNamespace string) string {
	if t := o.GetLabels()[operatorv1.TargetLabel]; t != "" {
		return t
	}
	switch {
	case o.GetKind() == "CustomResourceDefinition" && o.GroupVersionKind().Group == "apiextensions.k8s.io":
		if slices.Contains(managementCRDs, o.GetName()) {
			return operatorv1.TargetManagement
		}
		return operatorv1.TargetManaged
	case o.GetKind() == "Namespace" && o.GroupVersionKind().Group == "" && o.GetName() == agentNamespace:
		return operatorv1.TargetManagement
	}
	return ""
}
