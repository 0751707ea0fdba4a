package admin

// The hub admin's add-on operations behind `flotilla addon enable`, `flotilla addon disable`
// and `flotilla get addons`: ManagedClusterAddOns created and deleted by hand (the Manual
// install strategy, as clusteradm addon enable/disable do), placements added to and removed
// from a ClusterManagementAddOn's Placements install strategy, and a table of
// ManagedClusterAddOns with their status.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/hub/addon"
)

// ShortHashLen is how many hex digits of a configuration's spec hash `flotilla get addons`
// shows.
const ShortHashLen = 8

// ParseConfigRef parses a configuration reference written group/resource/name (a
// cluster-scoped configuration, or a namespaced one in the namespace of the placement or
// cluster it is given for) or group/resource/namespace/name. The core group is empty:
// /configmaps/ns/name.
func ParseConfigRef(s string) (addonv1alpha1.AddOnConfig, error) {
	parts := strings.Split(s, "/")
	var cfg addonv1alpha1.AddOnConfig
	switch len(parts) {
	case 3:
		cfg.Group, cfg.Resource, cfg.Name = parts[0], parts[1], parts[2]
	case 4:
		cfg.Group, cfg.Resource, cfg.Namespace, cfg.Name = parts[0], parts[1], parts[2], parts[3]
		if cfg.Namespace == "" {
			return cfg, fmt.Errorf("config %q: empty namespace; want GROUP/RESOURCE/[NAMESPACE/]NAME", s)
		}
	default:
		return cfg, fmt.Errorf("config %q: want GROUP/RESOURCE/[NAMESPACE/]NAME, e.g. addon.open-cluster-management.io/addondeploymentconfigs/open-cluster-management/deploy-config", s)
	}
	if cfg.Resource == "" || cfg.Name == "" {
		return cfg, fmt.Errorf("config %q: empty resource or name; want GROUP/RESOURCE/[NAMESPACE/]NAME", s)
	}
	return cfg, nil
}

// ParseKeyValues parses KEY=VALUE pairs of the flag named flag (annotations, or labels when
// labels is set, whose values are checked as label values). A later pair overrides an
// earlier one of the same key.
func ParseKeyValues(flag string, pairs []string, labels bool) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flag, p)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("%s %q: invalid key: %s", flag, p, strings.Join(errs, "; "))
		}
		if labels {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return nil, fmt.Errorf("%s %q: invalid value: %s", flag, p, strings.Join(errs, "; "))
			}
		}
		out[k] = v
	}
	return out, nil
}

// RolloutOptions are the settings of a placement's rollout strategy as flags give them;
// empty fields are left unset (the CRD's defaults apply).
type RolloutOptions struct {
	// Type is All, Progressive or ProgressivePerGroup.
	Type string
	// MaxConcurrency (Progressive only) and MaxFailures are a count or "N%".
	MaxConcurrency, MaxFailures string
	// ProgressDeadline is a duration (90s, 10m, 2h) or None.
	ProgressDeadline string
	// MinSuccessTime is a duration (Progressive and ProgressivePerGroup).
	MinSuccessTime time.Duration
	// MandatoryGroups are decision group names rolled out first (not with All).
	MandatoryGroups []string
}

var (
	countOrPercent = regexp.MustCompile(`^((100|[0-9]{1,2})%|[0-9]+)$`)
	deadline       = regexp.MustCompile(`^(([0-9]+[hms])+|None)$`)
)

// RolloutStrategy builds the rollout strategy o describes, refusing settings its type does
// not read.
func RolloutStrategy(o RolloutOptions) (clusterv1alpha1.RolloutStrategy, error) {
	var rs clusterv1alpha1.RolloutStrategy
	typ := clusterv1alpha1.RolloutType(o.Type)
	switch typ {
	case clusterv1alpha1.All, clusterv1alpha1.Progressive, clusterv1alpha1.ProgressivePerGroup:
	default:
		return rs, fmt.Errorf("rollout type %q: want All, Progressive or ProgressivePerGroup", o.Type)
	}
	rs.Type = typ
	if o.MaxConcurrency != "" && typ != clusterv1alpha1.Progressive {
		return rs, fmt.Errorf("max concurrency is a setting of the Progressive rollout, not %s", typ)
	}
	if len(o.MandatoryGroups) > 0 && typ == clusterv1alpha1.All {
		return rs, errors.New("mandatory decision groups are a setting of the Progressive and ProgressivePerGroup rollouts, not All")
	}
	if o.MinSuccessTime != 0 && typ == clusterv1alpha1.All {
		return rs, errors.New("min success time is a setting of the Progressive and ProgressivePerGroup rollouts, not All")
	}
	if o.MinSuccessTime < 0 {
		return rs, fmt.Errorf("min success time %s: must not be negative", o.MinSuccessTime)
	}
	var cfg clusterv1alpha1.RolloutConfig
	if o.MaxFailures != "" {
		if !countOrPercent.MatchString(o.MaxFailures) {
			return rs, fmt.Errorf("max failures %q: want a count or a percentage (N%%)", o.MaxFailures)
		}
		cfg.MaxFailures = intstr.Parse(o.MaxFailures)
	}
	if o.ProgressDeadline != "" {
		if !deadline.MatchString(o.ProgressDeadline) {
			return rs, fmt.Errorf("progress deadline %q: want a duration in hours, minutes and seconds (90s, 10m, 1h30m) or None", o.ProgressDeadline)
		}
		cfg.ProgressDeadline = o.ProgressDeadline
	}
	cfg.MinSuccessTime = metav1.Duration{Duration: o.MinSuccessTime}
	var groups clusterv1alpha1.MandatoryDecisionGroups
	for _, g := range o.MandatoryGroups {
		if g == "" {
			return rs, errors.New("empty mandatory decision group name")
		}
		groups.MandatoryDecisionGroups = append(groups.MandatoryDecisionGroups, clusterv1alpha1.MandatoryDecisionGroup{GroupName: g})
	}
	set := cfg != (clusterv1alpha1.RolloutConfig{}) || len(groups.MandatoryDecisionGroups) > 0 || o.MaxConcurrency != ""
	switch typ {
	case clusterv1alpha1.All:
		if set {
			rs.All = &clusterv1alpha1.RolloutAll{RolloutConfig: cfg}
		}
	case clusterv1alpha1.Progressive:
		if set {
			rs.Progressive = &clusterv1alpha1.RolloutProgressive{RolloutConfig: cfg, MandatoryDecisionGroups: groups}
			if o.MaxConcurrency != "" {
				if !countOrPercent.MatchString(o.MaxConcurrency) {
					return rs, fmt.Errorf("max concurrency %q: want a count or a percentage (N%%)", o.MaxConcurrency)
				}
				rs.Progressive.MaxConcurrency = intstr.Parse(o.MaxConcurrency)
			}
		}
	case clusterv1alpha1.ProgressivePerGroup:
		if set {
			rs.ProgressivePerGroup = &clusterv1alpha1.RolloutProgressivePerGroup{RolloutConfig: cfg, MandatoryDecisionGroups: groups}
		}
	}
	return rs, nil
}

// AddonEnable is what `flotilla addon enable --clusters` asks for.
type AddonEnable struct {
	// Names are the add-ons (ClusterManagementAddOn names).
	Names []string
	// Clusters are the managed clusters.
	Clusters []string
	// InstallNamespace is spec.installNamespace; "" leaves an existing one (the CRD
	// defaults a new one to open-cluster-management-agent-addon).
	InstallNamespace string
	// Annotations and Labels are merged into the ManagedClusterAddOn's.
	Annotations, Labels map[string]string
	// Configs, when not nil, replace spec.configs.
	Configs []addonv1alpha1.AddOnConfig
}

// AddonResult says what happened to one ManagedClusterAddOn.
type AddonResult struct {
	Cluster, Addon string
	// Action is created, updated, unchanged, deleted or absent.
	Action string
}

// Actions of AddonResult.
const (
	ActionCreated   = "created"
	ActionUpdated   = "updated"
	ActionUnchanged = "unchanged"
	ActionDeleted   = "deleted"
	ActionAbsent    = "absent"
)

// EnableAddons creates the ManagedClusterAddOn of each add-on in each cluster's namespace,
// as clusteradm addon enable does, or updates an existing one's install namespace,
// annotations, labels and configs (running it again changes nothing). Before anything is
// written it checks every add-on has a ClusterManagementAddOn and every cluster a
// ManagedCluster and a namespace on the hub, naming those that do not; each configuration
// must be of a kind the add-on supports. Every add-on and cluster is attempted; the error
// joins the failures.
func EnableAddons(ctx context.Context, c client.Client, req AddonEnable) ([]AddonResult, error) {
	names, err := uniqueNames(req.Names)
	if err != nil {
		return nil, err
	}
	clusters, err := uniqueClusters(req.Clusters)
	if err != nil {
		return nil, err
	}
	if ns := req.InstallNamespace; ns != "" {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("install namespace %q: %s", ns, strings.Join(errs, "; "))
		}
	}
	cmas, err := getCMAs(ctx, c, names)
	if err != nil {
		return nil, err
	}
	for _, cma := range cmas {
		if err := checkSupported(cma, req.Configs); err != nil {
			return nil, err
		}
	}
	if err := checkClusters(ctx, c, clusters); err != nil {
		return nil, fmt.Errorf("%w; no ManagedClusterAddOn was written", err)
	}
	var results []AddonResult
	var errs []error
	for _, name := range names {
		for _, cluster := range clusters {
			action, err := enableOne(ctx, c, cluster, name, req)
			if err != nil {
				errs = append(errs, fmt.Errorf("add-on %s in cluster %s: %w", name, cluster, err))
				continue
			}
			results = append(results, AddonResult{Cluster: cluster, Addon: name, Action: action})
		}
	}
	return results, errors.Join(errs...)
}

func enableOne(ctx context.Context, c client.Client, cluster, name string, req AddonEnable) (string, error) {
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name,
		Annotations: maps.Clone(req.Annotations), Labels: maps.Clone(req.Labels)}}
	mca.Spec.InstallNamespace = req.InstallNamespace
	mca.Spec.Configs = req.Configs
	err := c.Create(ctx, mca)
	if err == nil {
		return ActionCreated, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating ManagedClusterAddOn: %w", err)
	}
	action := ActionUnchanged
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &addonv1alpha1.ManagedClusterAddOn{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, cur); err != nil {
			return err
		}
		if !cur.DeletionTimestamp.IsZero() {
			return errors.New("its ManagedClusterAddOn is being deleted; enable it again once it is gone")
		}
		want := cur.DeepCopy()
		want.Annotations = mergeStrings(want.Annotations, req.Annotations)
		want.Labels = mergeStrings(want.Labels, req.Labels)
		if req.InstallNamespace != "" {
			want.Spec.InstallNamespace = req.InstallNamespace
		}
		if req.Configs != nil {
			want.Spec.Configs = req.Configs
		}
		if reflect.DeepEqual(want.Annotations, cur.Annotations) && reflect.DeepEqual(want.Labels, cur.Labels) {
			// The spec as the API server would store it (defaults filled in) decides.
			dry := want.DeepCopy()
			if err := c.Update(ctx, dry, client.DryRunAll); err != nil {
				return err
			}
			if reflect.DeepEqual(dry.Spec, cur.Spec) {
				action = ActionUnchanged
				return nil
			}
		}
		action = ActionUpdated
		return c.Update(ctx, want)
	})
	if err != nil {
		return "", fmt.Errorf("updating ManagedClusterAddOn: %w", err)
	}
	return action, nil
}

func mergeStrings(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	out := maps.Clone(dst)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, src)
	return out
}

func uniqueNames(names []string) ([]string, error) { return unique(names, "add-on name", "add-on") }

// getCMAs reads the ClusterManagementAddOn of each add-on, failing with the names of those
// the hub does not have.
func getCMAs(ctx context.Context, c client.Client, names []string) ([]*addonv1alpha1.ClusterManagementAddOn, error) {
	var out []*addonv1alpha1.ClusterManagementAddOn
	var unknown []string
	for _, n := range names {
		cma := &addonv1alpha1.ClusterManagementAddOn{}
		if err := c.Get(ctx, client.ObjectKey{Name: n}, cma); err != nil {
			if apierrors.IsNotFound(err) {
				unknown = append(unknown, n)
				continue
			}
			return nil, fmt.Errorf("add-on %s: reading its ClusterManagementAddOn: %w", n, err)
		}
		if !cma.DeletionTimestamp.IsZero() {
			return nil, fmt.Errorf("add-on %s: its ClusterManagementAddOn is being deleted", n)
		}
		out = append(out, cma)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown %s %s: no ClusterManagementAddOn of that name on the hub (kubectl get clustermanagementaddons lists them)",
			plural(len(unknown), "add-on", "add-ons"), strings.Join(unknown, ", "))
	}
	return out, nil
}

// checkClusters fails, naming them, when clusters have no ManagedCluster or no namespace on
// the hub (not accepted yet) or are being deleted.
func checkClusters(ctx context.Context, c client.Client, clusters []string) error {
	var unknown, notAccepted []string
	for _, cluster := range clusters {
		mc := &clusterv1.ManagedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
			if apierrors.IsNotFound(err) {
				unknown = append(unknown, cluster)
				continue
			}
			return fmt.Errorf("cluster %q: reading ManagedCluster: %w", cluster, err)
		}
		if !mc.DeletionTimestamp.IsZero() {
			return fmt.Errorf("cluster %q: ManagedCluster is being deleted", cluster)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: cluster}, &corev1.Namespace{}); err != nil {
			if apierrors.IsNotFound(err) {
				notAccepted = append(notAccepted, cluster)
				continue
			}
			return fmt.Errorf("cluster %q: reading its namespace: %w", cluster, err)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown %s %s: no ManagedCluster of that name on the hub",
			plural(len(unknown), "cluster", "clusters"), strings.Join(unknown, ", "))
	}
	if len(notAccepted) > 0 {
		return fmt.Errorf("%s %s %s not accepted yet: no cluster namespace on the hub (flotilla accept --clusters %s)",
			plural(len(notAccepted), "cluster", "clusters"), strings.Join(notAccepted, ", "), plural(len(notAccepted), "is", "are"),
			strings.Join(notAccepted, ","))
	}
	return nil
}

// checkSupported fails when a configuration is of a kind the add-on does not list in its
// supportedConfigs (the add-on manager would not use it).
func checkSupported(cma *addonv1alpha1.ClusterManagementAddOn, configs []addonv1alpha1.AddOnConfig) error {
	for _, cfg := range configs {
		ok := false
		var kinds []string
		for _, sc := range cma.Spec.SupportedConfigs {
			kinds = append(kinds, grString(sc.ConfigGroupResource))
			if sc.ConfigGroupResource == cfg.ConfigGroupResource {
				ok = true
			}
		}
		if !ok {
			supported := "none"
			if len(kinds) > 0 {
				supported = strings.Join(kinds, ", ")
			}
			return fmt.Errorf("add-on %s does not support configurations of %s (its supportedConfigs: %s)", cma.Name, grString(cfg.ConfigGroupResource), supported)
		}
	}
	return nil
}

func grString(gr addonv1alpha1.ConfigGroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Resource + "." + gr.Group
}

// managedByHub reports whether the hub's add-on manager acts on the add-on's install
// strategy: annotated for the addon-manager lifecycle, or a template add-on.
func managedByHub(cma *addonv1alpha1.ClusterManagementAddOn) bool {
	if cma.Annotations[addonv1alpha1.AddonLifecycleAnnotationKey] == addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue {
		return true
	}
	for _, sc := range cma.Spec.SupportedConfigs {
		if sc.ConfigGroupResource == addon.AddOnTemplateResource || sc.ConfigGroupResource == addon.WasmPluginResource {
			return true
		}
	}
	return false
}

// AddonPlacement is what `flotilla addon enable --placement` asks for.
type AddonPlacement struct {
	// Names are the add-ons.
	Names []string
	// Namespace and Name are the Placement's.
	Namespace, Name string
	// Configs, when not nil, replace the placement's configs.
	Configs []addonv1alpha1.AddOnConfig
	// Rollout, when not nil, replaces the placement's rollout strategy.
	Rollout *clusterv1alpha1.RolloutStrategy
}

// PlacementResult says what happened to one add-on's install strategy.
type PlacementResult struct {
	Addon string
	// Action is added, updated, unchanged, removed or absent.
	Action string
	// Warnings are what the user should know: a missing placement or configuration, an
	// add-on whose install strategy the hub's add-on manager does not act on.
	Warnings []string
}

// Actions of PlacementResult.
const (
	ActionAdded   = "added"
	ActionRemoved = "removed"
)

// EnableAddonPlacement adds the placement to the Placements install strategy of each
// add-on's ClusterManagementAddOn (the type becomes Placements; other placements stay), or
// updates its configs and rollout strategy when it is already listed. Every add-on must
// exist and support the configurations' kinds; a placement or configuration that does not
// exist yet is a warning (the add-on manager waits for it).
func EnableAddonPlacement(ctx context.Context, c client.Client, req AddonPlacement) ([]PlacementResult, error) {
	names, err := uniqueNames(req.Names)
	if err != nil {
		return nil, err
	}
	if req.Namespace == "" || req.Name == "" {
		return nil, errors.New("no placement given")
	}
	cmas, err := getCMAs(ctx, c, names)
	if err != nil {
		return nil, err
	}
	for _, cma := range cmas {
		if err := checkSupported(cma, req.Configs); err != nil {
			return nil, err
		}
	}
	var warnings []string
	p := &clusterv1beta1.Placement{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, p); {
	case apierrors.IsNotFound(err):
		warnings = append(warnings, fmt.Sprintf("placement %s/%s does not exist yet: the add-on is installed on the clusters it selects once it is created", req.Namespace, req.Name))
	case err != nil:
		return nil, fmt.Errorf("reading Placement %s/%s: %w", req.Namespace, req.Name, err)
	}
	for _, cfg := range req.Configs {
		if w := configWarning(ctx, c, cfg, req.Namespace); w != "" {
			warnings = append(warnings, w)
		}
	}
	var results []PlacementResult
	var errs []error
	for _, cma := range cmas {
		r := PlacementResult{Addon: cma.Name, Warnings: append([]string(nil), warnings...)}
		if !managedByHub(cma) {
			r.Warnings = append(r.Warnings, fmt.Sprintf("ClusterManagementAddOn %s is not annotated %s: %s nor a template add-on: the hub's add-on manager leaves its install strategy to the add-on's own manager",
				cma.Name, addonv1alpha1.AddonLifecycleAnnotationKey, addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue))
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &addonv1alpha1.ClusterManagementAddOn{}
			if err := c.Get(ctx, client.ObjectKey{Name: cma.Name}, cur); err != nil {
				return err
			}
			want := cur.DeepCopy()
			want.Spec.InstallStrategy.Type = addonv1alpha1.AddonInstallStrategyPlacements
			ref := addonv1alpha1.PlacementRef{Namespace: req.Namespace, Name: req.Name}
			i := placementIndex(want.Spec.InstallStrategy.Placements, ref)
			if i < 0 {
				want.Spec.InstallStrategy.Placements = append(want.Spec.InstallStrategy.Placements, addonv1alpha1.PlacementStrategy{PlacementRef: ref})
				i = len(want.Spec.InstallStrategy.Placements) - 1
				r.Action = ActionAdded
			} else {
				r.Action = ActionUpdated
			}
			ps := &want.Spec.InstallStrategy.Placements[i]
			if req.Configs != nil {
				ps.Configs = req.Configs
			}
			if req.Rollout != nil {
				ps.RolloutStrategy = *req.Rollout
			}
			// The spec as the API server would store it (the rollout's defaults filled in)
			// decides whether anything changes.
			dry := want.DeepCopy()
			if err := c.Update(ctx, dry, client.DryRunAll); err != nil {
				return err
			}
			if reflect.DeepEqual(dry.Spec, cur.Spec) {
				r.Action = ActionUnchanged
				return nil
			}
			return c.Update(ctx, want)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("add-on %s: adding placement %s/%s to its install strategy: %w", cma.Name, req.Namespace, req.Name, err))
			continue
		}
		results = append(results, r)
	}
	return results, errors.Join(errs...)
}

// configWarning says when a configuration cannot be found on the hub ("" when it is there).
// A namespaced configuration without namespace is looked up in defaultNamespace.
func configWarning(ctx context.Context, c client.Client, cfg addonv1alpha1.AddOnConfig, defaultNamespace string) string {
	what := grString(cfg.ConfigGroupResource) + " " + cfg.Name
	gvk, err := c.RESTMapper().KindFor(schema.GroupVersionResource{Group: cfg.Group, Resource: cfg.Resource})
	if err != nil {
		return fmt.Sprintf("config %s: the hub serves no resource %s", what, grString(cfg.ConfigGroupResource))
	}
	ns := cfg.Namespace
	if m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if ns == "" {
				ns = defaultNamespace
			}
		} else {
			ns = ""
		}
	}
	if ns != "" {
		what = grString(cfg.ConfigGroupResource) + " " + ns + "/" + cfg.Name
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	switch err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cfg.Name}, u); {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("config %s does not exist yet: the add-on is not configured (Configured=False) until it is created", what)
	case err != nil:
		return fmt.Sprintf("config %s: %v", what, err)
	}
	return ""
}

func placementIndex(ps []addonv1alpha1.PlacementStrategy, ref addonv1alpha1.PlacementRef) int {
	for i := range ps {
		if ps[i].PlacementRef == ref {
			return i
		}
	}
	return -1
}

// DisableAddonPlacement removes the placement from the install strategy of each add-on
// (nothing happens to an add-on that does not list it). The add-on manager then deletes the
// ManagedClusterAddOns it installed on clusters no remaining placement selects.
func DisableAddonPlacement(ctx context.Context, c client.Client, names []string, namespace, name string) ([]PlacementResult, error) {
	names, err := uniqueNames(names)
	if err != nil {
		return nil, err
	}
	cmas, err := getCMAs(ctx, c, names)
	if err != nil {
		return nil, err
	}
	ref := addonv1alpha1.PlacementRef{Namespace: namespace, Name: name}
	var results []PlacementResult
	var errs []error
	for _, cma := range cmas {
		r := PlacementResult{Addon: cma.Name, Action: ActionAbsent}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &addonv1alpha1.ClusterManagementAddOn{}
			if err := c.Get(ctx, client.ObjectKey{Name: cma.Name}, cur); err != nil {
				return err
			}
			i := placementIndex(cur.Spec.InstallStrategy.Placements, ref)
			if i < 0 {
				r.Action = ActionAbsent
				return nil
			}
			r.Action = ActionRemoved
			cur.Spec.InstallStrategy.Placements = append(cur.Spec.InstallStrategy.Placements[:i:i], cur.Spec.InstallStrategy.Placements[i+1:]...)
			return c.Update(ctx, cur)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("add-on %s: removing placement %s/%s from its install strategy: %w", cma.Name, namespace, name, err))
			continue
		}
		results = append(results, r)
	}
	return results, errors.Join(errs...)
}

// DisableResult is what DisableAddons did, with warnings for the user.
type DisableResult struct {
	Results  []AddonResult
	Warnings []string
}

// DisableAddons deletes the ManagedClusterAddOn of each add-on from each cluster's namespace,
// or with allClusters from every namespace holding one, as clusteradm addon disable does;
// one that is not there is reported absent (running it again changes nothing). Each add-on
// must have a ClusterManagementAddOn or at least one ManagedClusterAddOn (its leftovers), and
// each cluster a ManagedCluster, or nothing is deleted. An add-on a placement of its install
// strategy installed comes back while a placement selects the cluster: a warning says so.
func DisableAddons(ctx context.Context, c client.Client, names, clusters []string, allClusters bool) (DisableResult, error) {
	var res DisableResult
	names, err := uniqueNames(names)
	if err != nil {
		return res, err
	}
	if !allClusters {
		if clusters, err = uniqueClusters(clusters); err != nil {
			return res, err
		}
		var unknown []string
		for _, cluster := range clusters {
			if err := c.Get(ctx, client.ObjectKey{Name: cluster}, &clusterv1.ManagedCluster{}); err != nil {
				if apierrors.IsNotFound(err) {
					unknown = append(unknown, cluster)
					continue
				}
				return res, fmt.Errorf("cluster %q: reading ManagedCluster: %w", cluster, err)
			}
		}
		if len(unknown) > 0 {
			return res, fmt.Errorf("unknown %s %s: no ManagedCluster of that name on the hub; no ManagedClusterAddOn was deleted",
				plural(len(unknown), "cluster", "clusters"), strings.Join(unknown, ", "))
		}
	}
	// The add-ons' ManagedClusterAddOns by cluster, and their ClusterManagementAddOns.
	existing := map[string]map[string]*addonv1alpha1.ManagedClusterAddOn{}
	cmas := map[string]*addonv1alpha1.ClusterManagementAddOn{}
	var unknown []string
	for _, name := range names {
		mcas, err := listAddon(ctx, c, name)
		if err != nil {
			return res, err
		}
		existing[name] = map[string]*addonv1alpha1.ManagedClusterAddOn{}
		for i := range mcas {
			existing[name][mcas[i].Namespace] = &mcas[i]
		}
		cma := &addonv1alpha1.ClusterManagementAddOn{}
		switch err := c.Get(ctx, client.ObjectKey{Name: name}, cma); {
		case err == nil:
			cmas[name] = cma
		case !apierrors.IsNotFound(err):
			return res, fmt.Errorf("add-on %s: reading its ClusterManagementAddOn: %w", name, err)
		case len(mcas) == 0:
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		return res, fmt.Errorf("unknown %s %s: no ClusterManagementAddOn nor ManagedClusterAddOn of that name on the hub; no ManagedClusterAddOn was deleted",
			plural(len(unknown), "add-on", "add-ons"), strings.Join(unknown, ", "))
	}
	var errs []error
	for _, name := range names {
		targets := clusters
		if allClusters {
			targets = sortedKeys(existing[name])
		}
		var reinstalled []string
		for _, cluster := range targets {
			mca := existing[name][cluster]
			if mca == nil {
				res.Results = append(res.Results, AddonResult{Cluster: cluster, Addon: name, Action: ActionAbsent})
				continue
			}
			if err := c.Delete(ctx, mca); err != nil {
				if apierrors.IsNotFound(err) {
					res.Results = append(res.Results, AddonResult{Cluster: cluster, Addon: name, Action: ActionAbsent})
					continue
				}
				errs = append(errs, fmt.Errorf("add-on %s in cluster %s: deleting ManagedClusterAddOn: %w", name, cluster, err))
				continue
			}
			res.Results = append(res.Results, AddonResult{Cluster: cluster, Addon: name, Action: ActionDeleted})
			if cma := cmas[name]; cma != nil && mca.Labels[addon.InstallStrategyLabel] != "" &&
				cma.Spec.InstallStrategy.Type == addonv1alpha1.AddonInstallStrategyPlacements && len(cma.Spec.InstallStrategy.Placements) > 0 {
				reinstalled = append(reinstalled, cluster)
			}
		}
		if len(reinstalled) > 0 {
			var ps []string
			for _, p := range cmas[name].Spec.InstallStrategy.Placements {
				ps = append(ps, p.Namespace+"/"+p.Name)
			}
			res.Warnings = append(res.Warnings, fmt.Sprintf("add-on %s was installed in %s by its install strategy (placements %s): it comes back while a placement selects the %s; use flotilla addon disable %s --placement NAMESPACE/NAME",
				name, strings.Join(reinstalled, ", "), strings.Join(ps, ", "), plural(len(reinstalled), "cluster", "clusters"), name))
		}
	}
	return res, errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// listAddon lists the ManagedClusterAddOns named name in every namespace.
func listAddon(ctx context.Context, c client.Client, name string) ([]addonv1alpha1.ManagedClusterAddOn, error) {
	list := &addonv1alpha1.ManagedClusterAddOnList{}
	if err := c.List(ctx, list, client.MatchingFields{"metadata.name": name}); err != nil {
		return nil, fmt.Errorf("listing the ManagedClusterAddOns of %s: %w", name, err)
	}
	out := list.Items[:0]
	for _, m := range list.Items {
		if m.Name == name { // a client that ignores the field selector
			out = append(out, m)
		}
	}
	return out, nil
}

// AddonRow is one line of `flotilla get addons`.
type AddonRow struct {
	Cluster, Name string
	// Available, Degraded and Progressing are the statuses of those conditions, "" when
	// absent (OCM's printer columns).
	Available, Degraded, Progressing string
	// Configs are the short spec hashes of the desired configurations, in
	// status.configReferences order.
	Configs []string
	// Version is the name of the desired AddOnTemplate or WasmPlugin, "" if none.
	Version string
}

// AddonHeader is the header of the add-ons table.
var AddonHeader = []string{"CLUSTER", "NAME", "AVAILABLE", "DEGRADED", "PROGRESSING", "CONFIG", "VERSION"}

// AddonRowOf tabulates one ManagedClusterAddOn; its namespace is its cluster.
func AddonRowOf(mca *addonv1alpha1.ManagedClusterAddOn) AddonRow {
	cond := func(t string) string {
		if c := meta.FindStatusCondition(mca.Status.Conditions, t); c != nil {
			return string(c.Status)
		}
		return ""
	}
	r := AddonRow{
		Cluster:     mca.Namespace,
		Name:        mca.Name,
		Available:   cond(addonv1alpha1.ManagedClusterAddOnConditionAvailable),
		Degraded:    cond(addonv1alpha1.ManagedClusterAddOnConditionDegraded),
		Progressing: cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing),
	}
	for _, ref := range mca.Status.ConfigReferences {
		if ref.DesiredConfig == nil {
			continue
		}
		h := ref.DesiredConfig.SpecHash
		if len(h) > ShortHashLen {
			h = h[:ShortHashLen]
		}
		if h != "" {
			r.Configs = append(r.Configs, h)
		}
		if r.Version == "" && (ref.ConfigGroupResource == addon.AddOnTemplateResource || ref.ConfigGroupResource == addon.WasmPluginResource) {
			r.Version = ref.DesiredConfig.Name
		}
	}
	return r
}

// AddonRows lists the ManagedClusterAddOns of cluster ("" for every cluster), only those
// named name when it is not "", sorted by cluster and name. A cluster without add-ons and
// without ManagedCluster, or an add-on name without ManagedClusterAddOn nor
// ClusterManagementAddOn, is an error, to catch misspelt names.
func AddonRows(ctx context.Context, c client.Client, cluster, name string) ([]AddonRow, error) {
	var items []addonv1alpha1.ManagedClusterAddOn
	switch {
	case cluster != "" && name != "":
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, mca)
		switch {
		case err == nil:
			items = append(items, *mca)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading ManagedClusterAddOn %s/%s: %w", cluster, name, err)
		}
	case name != "":
		var err error
		if items, err = listAddon(ctx, c, name); err != nil {
			return nil, err
		}
	default:
		list := &addonv1alpha1.ManagedClusterAddOnList{}
		var opts []client.ListOption
		if cluster != "" {
			opts = append(opts, client.InNamespace(cluster))
		}
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("listing ManagedClusterAddOns: %w", err)
		}
		items = list.Items
	}
	if len(items) == 0 {
		if cluster != "" {
			if err := c.Get(ctx, client.ObjectKey{Name: cluster}, &clusterv1.ManagedCluster{}); apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("unknown cluster %s: no ManagedCluster of that name on the hub", cluster)
			}
		}
		if name != "" {
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &addonv1alpha1.ClusterManagementAddOn{}); apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("unknown add-on %s: no ClusterManagementAddOn nor ManagedClusterAddOn of that name on the hub", name)
			}
		}
	}
	rows := make([]AddonRow, 0, len(items))
	for i := range items {
		rows = append(rows, AddonRowOf(&items[i]))
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Cluster != rows[j].Cluster {
			return rows[i].Cluster < rows[j].Cluster
		}
		return rows[i].Name < rows[j].Name
	})
	return rows, nil
}

// WriteAddons prints rows as an aligned table, "-" for what is not reported.
func WriteAddons(w io.Writer, rows []AddonRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(AddonHeader, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join([]string{r.Cluster, r.Name, dash(r.Available), dash(r.Degraded), dash(r.Progressing),
			dash(strings.Join(r.Configs, ",")), dash(r.Version)}, "\t"))
	}
	return tw.Flush()
}
