package render

import (
	"fmt"
	"reflect"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// DefaultMaxManifestsSize is the manifests budget of one ManifestWork when Works
// is given none: OCM's add-on manager limits a work to 500 KiB and fills 80% of it.
const DefaultMaxManifestsSize = 500 * 1024 * 8 / 10

// DeployWorkNamePrefix is the name prefix of an add-on's deploy ManifestWorks.
func DeployWorkNamePrefix(addonName string) string { return "addon-" + addonName + "-deploy" }

// DeployWorkName is the name of an add-on's i-th deploy ManifestWork.
func DeployWorkName(addonName string, i int) string {
	return DeployWorkNamePrefix(addonName) + "-" + strconv.Itoa(i)
}

// PreDeleteHookWorkName is the name of an add-on's pre-delete hook ManifestWork.
func PreDeleteHookWorkName(addonName string) string { return "addon-" + addonName + "-pre-delete" }

// DeployHostingWorkNamePrefix is the name prefix of the deploy ManifestWorks, in its hosting
// cluster's namespace, of cluster clusterName's add-on in hosted mode (OCM's
// "addon-<addon>-deploy-hosting-<cluster>").
func DeployHostingWorkNamePrefix(addonName, clusterName string) string {
	return DeployWorkNamePrefix(addonName) + "-hosting-" + clusterName
}

// PreDeleteHookHostingWorkName is the name of the pre-delete hook ManifestWork, in its hosting
// cluster's namespace, of cluster clusterName's add-on in hosted mode (OCM's
// "addon-<addon>-pre-delete-hosting-<cluster>").
func PreDeleteHookHostingWorkName(addonName, clusterName string) string {
	return PreDeleteHookWorkName(addonName) + "-hosting-" + clusterName
}

// ManifestLocation is where a manifest goes when its add-on is hosted: its
// addon.open-cluster-management.io/hosted-manifest-location annotation, else the label of
// that name (OCM's deprecated form), else managed. Another value is an error naming it.
func ManifestLocation(m workv1.Manifest) (string, error) {
	o, err := decodeObject(m.Raw)
	if err != nil {
		return "", err
	}
	return manifestLocation(o)
}

func manifestLocation(o object) (string, error) {
	field := "annotation"
	loc, _ := o.annotations()[addonv1alpha1.HostedManifestLocationAnnotationKey].(string)
	if loc == "" {
		field = "label"
		loc, _ = o.labels()[addonv1alpha1.HostedManifestLocationLabelKey].(string)
	}
	switch loc {
	case "":
		return addonv1alpha1.HostedManifestLocationManagedValue, nil
	case addonv1alpha1.HostedManifestLocationManagedValue, addonv1alpha1.HostedManifestLocationHostingValue, addonv1alpha1.HostedManifestLocationNoneValue:
		return loc, nil
	}
	return "", fmt.Errorf("%s %s: not supported manifest location: %s", field, addonv1alpha1.HostedManifestLocationAnnotationKey, loc)
}

// SplitHosted splits an add-on rendered for hosted mode by each manifest's location
// (ManifestLocation), as OCM's add-on manager does: managed manifests (the default) stay on
// the managed cluster, hosting ones go to the hosting cluster, none go nowhere; a manifest
// with another location is an error naming it and the value. A manifestConfig goes with the
// manifests it matches, to both sides if it matches on both, else to the managed side (the
// hosting side when all manifests are hosting). DeleteOption and Executor go to both.
func SplitHosted(r Rendered) (managed, hosting Rendered, err error) {
	managed = Rendered{DeleteOption: r.DeleteOption, Executor: r.Executor, InstallNamespace: r.InstallNamespace}
	hosting = managed
	var managedObjs, hostingObjs []sized
	for i, m := range r.Manifests {
		o, err := decodeObject(m.Raw)
		if err == nil {
			err = o.checkIdentity()
		}
		if err != nil {
			return Rendered{}, Rendered{}, fmt.Errorf("manifest %d: %w", i, err)
		}
		loc, err := manifestLocation(o)
		if err != nil {
			return Rendered{}, Rendered{}, fmt.Errorf("manifest %d (%s): %w", i, o.describe(), err)
		}
		switch loc {
		case addonv1alpha1.HostedManifestLocationManagedValue:
			managed.Manifests = append(managed.Manifests, m)
			managedObjs = append(managedObjs, sized{obj: o})
		case addonv1alpha1.HostedManifestLocationHostingValue:
			hosting.Manifests = append(hosting.Manifests, m)
			hostingObjs = append(hostingObjs, sized{obj: o})
		}
	}
	for _, mc := range r.ManifestConfigs {
		inManaged, inHosting := holds(managedObjs, mc.ResourceIdentifier), holds(hostingObjs, mc.ResourceIdentifier)
		if !inManaged && !inHosting {
			inManaged = len(managedObjs) > 0 || len(hostingObjs) == 0
			inHosting = !inManaged
		}
		if inManaged {
			managed.ManifestConfigs = append(managed.ManifestConfigs, mc)
		}
		if inHosting {
			hosting.ManifestConfigs = append(hosting.ManifestConfigs, mc)
		}
	}
	return managed, hosting, nil
}

// IsPreDeleteHook reports whether a manifest is a pre-delete hook, as OCM decides:
// a Job or Pod labelled open-cluster-management.io/addon-pre-delete or annotated
// addon.open-cluster-management.io/addon-pre-delete.
func IsPreDeleteHook(m workv1.Manifest) bool {
	o, err := decodeObject(m.Raw)
	return err == nil && isPreDeleteHook(o)
}

func isPreDeleteHook(o object) bool {
	if k := o.kind(); k != "Job" && k != "Pod" {
		return false
	}
	_, label := o.labels()[addonv1alpha1.AddonPreDeleteHookLabelKey]
	_, annotation := o.annotations()[addonv1alpha1.AddonPreDeleteHookAnnotationKey]
	return label || annotation
}

type sized struct {
	obj object
	raw []byte
}

// Works puts a rendered add-on into the ManifestWorks deploying it in cluster
// clusterName's namespace, named and labelled as OCM's add-on manager does:
//
//   - pre-delete hooks (IsPreDeleteHook) go to PreDeleteHookWorkName, with a
//     WellKnownStatus feedback rule on each (what decides the hook has completed);
//     the caller applies that work only once the add-on is being deleted;
//   - the other manifests go, in order, to DeployWorkName(addon, 0), 1, …, a new
//     work starting when the next manifest would take the current one over
//     maxSize bytes of manifests (DefaultMaxManifestsSize when maxSize ≤ 0); a
//     manifest larger than maxSize, or hooks larger together, are an error naming it;
//   - each deploy work carries a WellKnownStatus feedback rule for each of its
//     Deployments and DaemonSets (what the DeploymentAvailability and
//     WorkloadAvailability health probes read), merged with the add-on's
//     manifestConfigs as OCM merges them, each in every work holding a resource it
//     matches ("*" matching any namespace or name), in work 0 if none does;
//   - manifests annotated addon.open-cluster-management.io/deletion-orphan are
//     orphaned on deletion (a SelectivelyOrphan rule in their work, unless the
//     add-on's own deleteOption orphans everything), r.DeleteOption otherwise
//     applies to every deploy work, r.Executor to every work;
//   - every work is labelled open-cluster-management.io/addon-name=<addon>.
//
// The caller sets owner references and the config-spec-hash annotation. The
// output only depends on the arguments. Unlike OCM, manifests keep their rendered
// order instead of being sorted by size and packed around the existing works.
func Works(addonName, clusterName string, r Rendered, maxSize int) ([]workv1.ManifestWork, error) {
	return buildWorks(addonName, r, maxSize, clusterName, map[string]string{addonv1alpha1.AddonLabelKey: addonName},
		DeployWorkNamePrefix(addonName), PreDeleteHookWorkName(addonName))
}

// HostingWorks puts the hosting part of cluster clusterName's add-on in hosted mode (see
// SplitHosted) into ManifestWorks in hosting cluster hostingCluster's namespace, as Works
// does, named as OCM names them (DeployHostingWorkNamePrefix(addon, cluster)-<i>,
// PreDeleteHookHostingWorkName) and labelled open-cluster-management.io/addon-name=<addon>
// and open-cluster-management.io/addon-namespace=<cluster>. The caller sets no owner
// reference (the add-on is in another namespace): the add-on's finalizer removes them.
func HostingWorks(addonName, clusterName, hostingCluster string, r Rendered, maxSize int) ([]workv1.ManifestWork, error) {
	return buildWorks(addonName, r, maxSize, hostingCluster,
		map[string]string{addonv1alpha1.AddonLabelKey: addonName, addonv1alpha1.AddonNamespaceLabelKey: clusterName},
		DeployHostingWorkNamePrefix(addonName, clusterName), PreDeleteHookHostingWorkName(addonName, clusterName))
}

func buildWorks(addonName string, r Rendered, maxSize int, namespace string, labels map[string]string, deployPrefix, hookName string) ([]workv1.ManifestWork, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxManifestsSize
	}
	var deploy [][]sized
	var hooks []sized
	size, hookSize := 0, 0
	for i, m := range r.Manifests {
		o, err := decodeObject(m.Raw)
		if err == nil {
			err = o.checkIdentity()
		}
		if err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		if len(m.Raw) > maxSize {
			return nil, fmt.Errorf("manifest %d (%s) is %d bytes, more than the %d bytes a ManifestWork of add-on %s may hold", i, o.describe(), len(m.Raw), maxSize, addonName)
		}
		s := sized{obj: o, raw: m.Raw}
		if isPreDeleteHook(o) {
			hookSize += len(m.Raw)
			if hookSize > maxSize {
				return nil, fmt.Errorf("the pre-delete hooks of add-on %s exceed the %d bytes a ManifestWork may hold (at manifest %d, %s)", addonName, maxSize, i, o.describe())
			}
			hooks = append(hooks, s)
			continue
		}
		if len(deploy) == 0 || size+len(m.Raw) > maxSize {
			deploy = append(deploy, nil)
			size = 0
		}
		deploy[len(deploy)-1] = append(deploy[len(deploy)-1], s)
		size += len(m.Raw)
	}

	meta := func(name string) metav1.ObjectMeta {
		l := make(map[string]string, len(labels))
		for k, v := range labels {
			l[k] = v
		}
		return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: l}
	}
	var works []workv1.ManifestWork
	for i, items := range deploy {
		w := workv1.ManifestWork{ObjectMeta: meta(deployPrefix + "-" + strconv.Itoa(i))}
		var orphans []workv1.OrphaningRule
		for _, it := range items {
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, manifest(it.raw))
			o := it.obj
			if o.group() == "apps" && (o.kind() == "Deployment" || o.kind() == "DaemonSet") {
				w.Spec.ManifestConfigs = append(w.Spec.ManifestConfigs, wellKnown(o.identifier()))
			}
			if _, ok := o.annotations()[addonv1alpha1.DeletionOrphanAnnotationKey]; ok {
				orphans = append(orphans, workv1.OrphaningRule(o.identifier()))
			}
		}
		w.Spec.DeleteOption = deleteOption(r.DeleteOption, orphans)
		w.Spec.Executor = r.Executor.DeepCopy()
		works = append(works, w)
	}
	if len(works) > 0 {
		for _, mc := range r.ManifestConfigs {
			placed := false
			for i := range works {
				if holds(deploy[i], mc.ResourceIdentifier) {
					works[i].Spec.ManifestConfigs = mergeManifestConfig(works[i].Spec.ManifestConfigs, mc)
					placed = true
				}
			}
			if !placed {
				works[0].Spec.ManifestConfigs = mergeManifestConfig(works[0].Spec.ManifestConfigs, mc)
			}
		}
	}
	if len(hooks) > 0 {
		w := workv1.ManifestWork{ObjectMeta: meta(hookName)}
		for _, it := range hooks {
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, manifest(it.raw))
			w.Spec.ManifestConfigs = append(w.Spec.ManifestConfigs, wellKnown(it.obj.identifier()))
		}
		w.Spec.Executor = r.Executor.DeepCopy()
		works = append(works, w)
	}
	return works, nil
}

func manifest(raw []byte) workv1.Manifest {
	var m workv1.Manifest
	m.Raw = append([]byte(nil), raw...)
	return m
}

func wellKnown(id workv1.ResourceIdentifier) workv1.ManifestConfigOption {
	return workv1.ManifestConfigOption{ResourceIdentifier: id, FeedbackRules: []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}}
}

func holds(items []sized, id workv1.ResourceIdentifier) bool {
	for _, it := range items {
		if identifierMatches(it.obj.identifier(), id) {
			return true
		}
	}
	return false
}

// identifierMatches reports whether resource is selected by id, whose namespace
// and name may contain "*" wildcards (OCM's probe matching).
func identifierMatches(resource, id workv1.ResourceIdentifier) bool {
	return resource.Group == id.Group && resource.Resource == id.Resource &&
		wildcardMatch(resource.Namespace, id.Namespace) && wildcardMatch(resource.Name, id.Name)
}

// wildcardMatch matches s against pattern, where "*" stands for any run of characters.
func wildcardMatch(s, pattern string) bool {
	if pattern == s || pattern == "*" {
		return true
	}
	// Classic glob matching with backtracking on the last star.
	si, pi, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(pattern) && pattern[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(pattern) && pattern[pi] == s[si]:
			si++
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

// mergeManifestConfig merges mc into configs as OCM merges an add-on's
// manifestConfigs into the generated ones: a config for the same resource gets
// mc's feedback rules (a WellKnownStatus rule once, JSONPaths not already there
// by name) and mc's updateStrategy when set; Flotilla also carries mc's condition
// rules (new conditions only) and feedbackScrapeType. Otherwise mc is appended.
func mergeManifestConfig(configs []workv1.ManifestConfigOption, mc workv1.ManifestConfigOption) []workv1.ManifestConfigOption {
	for i := range configs {
		if configs[i].ResourceIdentifier != mc.ResourceIdentifier {
			continue
		}
		c := &configs[i]
		for _, rule := range mc.FeedbackRules {
			c.FeedbackRules = mergeFeedbackRule(c.FeedbackRules, rule)
		}
		if mc.UpdateStrategy != nil {
			c.UpdateStrategy = mc.UpdateStrategy.DeepCopy()
		}
		for _, cr := range mc.ConditionRules {
			dup := false
			for _, have := range c.ConditionRules {
				dup = dup || have.Condition == cr.Condition
			}
			if !dup {
				c.ConditionRules = append(c.ConditionRules, *cr.DeepCopy())
			}
		}
		if mc.FeedbackScrapeType != "" {
			c.FeedbackScrapeType = mc.FeedbackScrapeType
		}
		return configs
	}
	return append(configs, *mc.DeepCopy())
}

func mergeFeedbackRule(rules []workv1.FeedbackRule, rule workv1.FeedbackRule) []workv1.FeedbackRule {
	var paths []workv1.JsonPath
	wellKnown := false
	for _, r := range rules {
		switch r.Type {
		case workv1.WellKnownStatusType:
			wellKnown = true
		case workv1.JSONPathsType:
			paths = append(paths, r.JsonPaths...)
		}
	}
	switch rule.Type {
	case workv1.WellKnownStatusType:
		if !wellKnown {
			rules = append(rules, rule)
		}
		return rules
	case workv1.JSONPathsType:
		var add []workv1.JsonPath
		for _, p := range rule.JsonPaths {
			found := false
			for _, have := range paths {
				found = found || have.Name == p.Name
			}
			if !found {
				add = append(add, p)
			}
		}
		if len(add) > 0 {
			rules = append(rules, workv1.FeedbackRule{Type: workv1.JSONPathsType, JsonPaths: add})
		}
		return rules
	}
	return append(rules, *rule.DeepCopy())
}

// deleteOption is base with the orphaning rules of a work's deletion-orphan
// manifests: Foreground (or unset) becomes SelectivelyOrphan, SelectivelyOrphan
// gets the rules it lacks, Orphan already keeps everything.
func deleteOption(base *workv1.DeleteOption, orphans []workv1.OrphaningRule) *workv1.DeleteOption {
	out := base.DeepCopy()
	if len(orphans) == 0 {
		return out
	}
	if out == nil {
		out = &workv1.DeleteOption{}
	}
	switch out.PropagationPolicy {
	case workv1.DeletePropagationPolicyTypeOrphan:
		return out
	case workv1.DeletePropagationPolicyTypeSelectivelyOrphan:
	default:
		out.PropagationPolicy = workv1.DeletePropagationPolicyTypeSelectivelyOrphan
		out.SelectivelyOrphan = nil
	}
	if out.SelectivelyOrphan == nil {
		out.SelectivelyOrphan = &workv1.SelectivelyOrphan{}
	}
	for _, r := range orphans {
		dup := false
		for _, have := range out.SelectivelyOrphan.OrphaningRules {
			dup = dup || reflect.DeepEqual(have, r)
		}
		if !dup {
			out.SelectivelyOrphan.OrphaningRules = append(out.SelectivelyOrphan.OrphaningRules, r)
		}
	}
	return out
}
