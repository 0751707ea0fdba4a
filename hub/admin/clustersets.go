package admin

// The hub user's cluster-set operations behind `flotilla create clusterset`, `flotilla
// clusterset set|bind|unbind` and `flotilla get clustersets`, mirroring clusteradm's commands of
// the same names. They act with the caller's client (the user's kubeconfig), so the hub's
// admission policies decide: join (the cluster-set label) and bind (ManagedClusterSetBindings).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/hub/registration/clusterset"
)

// MaxClusterSetClusters bounds the clusters one `clusterset set` moves: each costs two
// requests (a server-side dry run of all first, then the writes).
const MaxClusterSetClusters = 500

// ValidateClusterSetName checks that name can name a ManagedClusterSet whose members carry it
// as the value of the label cluster.open-cluster-management.io/clusterset.
func ValidateClusterSetName(name string) error {
	if name == "" {
		return errors.New("the name of the clusterset must be specified")
	}
	errs := validation.IsDNS1123Subdomain(name)
	errs = append(errs, validation.IsValidLabelValue(name)...)
	if len(errs) > 0 {
		return fmt.Errorf("clusterset name %q is invalid: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// ValidateClusterNames checks the names given to `clusterset set --clusters` (each a
// ManagedCluster name, which is also its namespace's, so a DNS-1123 label) and returns them
// without repeats, in order.
func ValidateClusterNames(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, errors.New("at least one cluster must be given")
	}
	var out []string
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" {
			return nil, fmt.Errorf("cluster %d of %d is an empty name", i+1, len(names))
		}
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			return nil, fmt.Errorf("cluster name %q is invalid: %s", n, strings.Join(errs, "; "))
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) > MaxClusterSetClusters {
		return nil, fmt.Errorf("%d clusters given, at most %d at a time", len(out), MaxClusterSetClusters)
	}
	return out, nil
}

// ValidateNamespaceName checks the namespace of a ManagedClusterSetBinding.
func ValidateNamespaceName(ns string) error {
	if ns == "" {
		return errors.New("namespace name must be specified")
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("namespace name %q is invalid: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}

func dryRunOpts(dryRun bool) []client.CreateOption {
	if dryRun {
		return []client.CreateOption{client.DryRunAll}
	}
	return nil
}

// CreateClusterSet creates the ManagedClusterSet name with an empty spec (the API server
// defaults its selector to ExclusiveClusterSetLabel), as clusteradm does. created is false
// when it exists already. With dryRun the API server checks the request, admission included,
// and stores nothing.
func CreateClusterSet(ctx context.Context, c client.Client, name string, dryRun bool) (created bool, err error) {
	if err := ValidateClusterSetName(name); err != nil {
		return false, err
	}
	err = c.Get(ctx, client.ObjectKey{Name: name}, &clusterv1beta2.ManagedClusterSet{})
	switch {
	case err == nil:
		return false, nil
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("reading ManagedClusterSet %s: %w", name, err)
	}
	set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, set, dryRunOpts(dryRun)...); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return false, fmt.Errorf("creating ManagedClusterSet %s: %w", name, err)
	}
	return true, nil
}

// CreateClusterSetMessage is clusteradm's line for CreateClusterSet's outcome.
func CreateClusterSetMessage(name string, created bool) string {
	if created {
		return fmt.Sprintf("Clusterset %s is created", name)
	}
	return fmt.Sprintf("Clusterset %s is already created", name)
}

// ClusterSetMove is what SetClusters did to one cluster.
type ClusterSetMove struct {
	Cluster string
	// From is the set the cluster was in ("" for none); To the set it is in now.
	From, To string
}

// Message is clusteradm's line for the move.
func (m ClusterSetMove) Message() string {
	switch m.From {
	case m.To:
		return fmt.Sprintf("Cluster %s is already in Clusterset %s", m.Cluster, m.To)
	case "":
		return fmt.Sprintf("Cluster %s is set to Clusterset %s", m.Cluster, m.To)
	}
	return fmt.Sprintf("Cluster %s is set, from ClusterSet %s to Clusterset %s", m.Cluster, m.From, m.To)
}

// memberSet reads the ManagedClusterSet name and checks that the cluster-set label makes a
// cluster its member.
func memberSet(ctx context.Context, c client.Client, name string) error {
	set := &clusterv1beta2.ManagedClusterSet{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, set); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("ManagedClusterSet %s not found (create it with: flotilla create clusterset %s)", name, name)
		}
		return fmt.Errorf("reading ManagedClusterSet %s: %w", name, err)
	}
	if !set.DeletionTimestamp.IsZero() {
		return fmt.Errorf("ManagedClusterSet %s is being deleted", name)
	}
	if t := set.Spec.ClusterSelector.SelectorType; t != "" && t != clusterv1beta2.ExclusiveClusterSetLabel {
		return fmt.Errorf("ManagedClusterSet %s: spec.clusterSelector.selectorType is %s, so its members are chosen by "+
			"spec.clusterSelector.labelSelector and the label %s does not add a cluster to it", name, t, clusterv1beta2.ClusterSetLabel)
	}
	return nil
}

// SetClusters puts each cluster into the ManagedClusterSet set by setting its label
// cluster.open-cluster-management.io/clusterset, as `clusteradm clusterset set` does: a
// cluster in another set moves, and no other cluster leaves the set. Each label is written with
// a JSON merge patch guarded by the cluster's resourceVersion (re-read and retried on a
// conflict), never a whole-object update. Every patch is first sent as a server-side dry run,
// so a cluster that does not exist or a refusal by the hub's join policy (which needs "create"
// on managedclustersets/join of the new set and of the old one) changes no cluster; with
// dryRun only that pass runs. The moves are returned in the order of clusters.
func SetClusters(ctx context.Context, c client.Client, set string, clusters []string, dryRun bool) ([]ClusterSetMove, error) {
	if err := ValidateClusterSetName(set); err != nil {
		return nil, err
	}
	clusters, err := ValidateClusterNames(clusters)
	if err != nil {
		return nil, err
	}
	if err := memberSet(ctx, c, set); err != nil {
		return nil, err
	}
	moves := make([]ClusterSetMove, len(clusters))
	pass := func(dry bool) (int, error) {
		for i, name := range clusters {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				m, err := setLabel(ctx, c, set, name, dry)
				moves[i] = m
				return err
			})
			if err != nil {
				return i, err
			}
		}
		return len(clusters), nil
	}
	if _, err := pass(true); err != nil {
		return nil, fmt.Errorf("%w; no cluster was changed", err)
	}
	if dryRun {
		return moves, nil
	}
	n, err := pass(false)
	return moves[:n], err
}

// setLabel reads the ManagedCluster name and, unless it is in set already, patches its
// cluster-set label to set, guarded by the resourceVersion it read.
func setLabel(ctx context.Context, c client.Client, set, name string, dryRun bool) (ClusterSetMove, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return ClusterSetMove{}, fmt.Errorf("ManagedCluster %s not found", name)
		}
		return ClusterSetMove{}, fmt.Errorf("reading ManagedCluster %s: %w", name, err)
	}
	m := ClusterSetMove{Cluster: name, From: mc.Labels[clusterv1beta2.ClusterSetLabel], To: set}
	if m.From == set {
		return m, nil
	}
	orig := mc.DeepCopy()
	if mc.Labels == nil {
		mc.Labels = map[string]string{}
	}
	mc.Labels[clusterv1beta2.ClusterSetLabel] = set
	var opts []client.PatchOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := c.Patch(ctx, mc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), opts...); err != nil {
		// RetryOnConflict still sees a wrapped conflict, re-reads and tries again.
		return m, fmt.Errorf("ManagedCluster %s: setting label %s=%s: %w", name, clusterv1beta2.ClusterSetLabel, set, err)
	}
	return m, nil
}

// MaxManagedNamespaces bounds the namespaces one `clusterset set --namespaces` adds.
const MaxManagedNamespaces = 100

// ValidateManagedNamespaces checks the names given to `clusterset set --namespaces` and returns
// them without repeats, in order.
func ValidateManagedNamespaces(names []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for i, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, fmt.Errorf("namespace %d of %d is an empty name", i+1, len(names))
		}
		if err := ValidateNamespaceName(n); err != nil {
			return nil, err
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) > MaxManagedNamespaces {
		return nil, fmt.Errorf("%d namespaces given, at most %d at a time", len(out), MaxManagedNamespaces)
	}
	return out, nil
}

// ManagedNamespacesResult is what AddManagedNamespaces did.
type ManagedNamespacesResult struct {
	Set string
	// Requested are the namespaces asked for; Added those appended to spec.managedNamespaces,
	// Existing those already in it; Total is its length afterwards.
	Requested, Added, Existing []string
	Total                      int
}

// Messages are clusteradm's lines for the result.
func (r ManagedNamespacesResult) Messages() []string {
	lines := []string{fmt.Sprintf("Processing managed namespaces: %v", r.Requested)}
	for _, ns := range r.Existing {
		lines = append(lines, fmt.Sprintf("Managed namespace %s already exists in Clusterset %s", ns, r.Set))
	}
	switch {
	case len(r.Added) > 0:
		lines = append(lines, "", fmt.Sprintf("Successfully updated Clusterset %s", r.Set),
			fmt.Sprintf("Added %d managed namespace(s): %s", len(r.Added), strings.Join(r.Added, ", ")),
			fmt.Sprintf("Total managed namespaces in clusterset: %d", r.Total))
	case len(r.Existing) > 0:
		lines = append(lines, "", fmt.Sprintf("All specified namespaces already exist in Clusterset %s", r.Set))
	default:
		lines = append(lines, "", fmt.Sprintf("No changes made to Clusterset %s", r.Set))
	}
	return lines
}

// AddManagedNamespaces appends namespaces to the ManagedClusterSet set's spec.managedNamespaces
// (those not in it yet), as `clusteradm clusterset set --namespaces` does, with a JSON merge
// patch guarded by the set's resourceVersion (re-read and retried on a conflict). Flotilla's
// hub records them but does not act on them yet.
func AddManagedNamespaces(ctx context.Context, c client.Client, set string, namespaces []string, dryRun bool) (ManagedNamespacesResult, error) {
	res := ManagedNamespacesResult{Set: set}
	if err := ValidateClusterSetName(set); err != nil {
		return res, err
	}
	namespaces, err := ValidateManagedNamespaces(namespaces)
	if err != nil {
		return res, err
	}
	res.Requested = namespaces
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		res.Added, res.Existing = nil, nil
		s := &clusterv1beta2.ManagedClusterSet{}
		if err := c.Get(ctx, client.ObjectKey{Name: set}, s); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("ManagedClusterSet %s not found (create it with: flotilla create clusterset %s)", set, set)
			}
			return fmt.Errorf("reading ManagedClusterSet %s: %w", set, err)
		}
		orig := s.DeepCopy()
		for _, ns := range namespaces {
			if slices.ContainsFunc(s.Spec.ManagedNamespaces, func(m clusterv1.ManagedNamespaceConfig) bool { return m.Name == ns }) {
				res.Existing = append(res.Existing, ns)
				continue
			}
			s.Spec.ManagedNamespaces = append(s.Spec.ManagedNamespaces, clusterv1.ManagedNamespaceConfig{Name: ns})
			res.Added = append(res.Added, ns)
		}
		res.Total = len(s.Spec.ManagedNamespaces)
		if len(res.Added) == 0 {
			return nil
		}
		var opts []client.PatchOption
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := c.Patch(ctx, s, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), opts...); err != nil {
			return fmt.Errorf("ManagedClusterSet %s: adding %s to spec.managedNamespaces: %w", set, strings.Join(res.Added, ","), err)
		}
		return nil
	})
	return res, err
}

// BindClusterSet creates the ManagedClusterSetBinding named after set in namespace, as
// `clusteradm clusterset bind` does; the set must exist. already is true when that binding
// exists. The hub's bind policy needs "create" on managedclustersets/bind of the set.
func BindClusterSet(ctx context.Context, c client.Client, set, namespace string, dryRun bool) (already bool, err error) {
	if err := ValidateClusterSetName(set); err != nil {
		return false, err
	}
	if err := ValidateNamespaceName(namespace); err != nil {
		return false, err
	}
	if err := c.Get(ctx, client.ObjectKey{Name: set}, &clusterv1beta2.ManagedClusterSet{}); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("ManagedClusterSet %s not found (create it with: flotilla create clusterset %s)", set, set)
		}
		return false, fmt.Errorf("reading ManagedClusterSet %s: %w", set, err)
	}
	b := &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: set},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set},
	}
	if err := c.Create(ctx, b, dryRunOpts(dryRun)...); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return true, nil
		}
		return false, fmt.Errorf("creating ManagedClusterSetBinding %s/%s: %w", namespace, set, err)
	}
	return false, nil
}

// BindMessage is clusteradm's line for BindClusterSet's outcome.
func BindMessage(set, namespace string, already bool) string {
	if already {
		return fmt.Sprintf("Clusterset %s is already bound to Namespace %s", set, namespace)
	}
	return fmt.Sprintf("Clusterset %s is bound to Namespace %s", set, namespace)
}

// UnbindClusterSet deletes the ManagedClusterSetBinding named after set in namespace. A
// missing binding is no error (existed is false). Unlike clusteradm it does not require the
// set to exist, so the binding of a deleted set can be removed too.
func UnbindClusterSet(ctx context.Context, c client.Client, set, namespace string, dryRun bool) (existed bool, err error) {
	if err := ValidateClusterSetName(set); err != nil {
		return false, err
	}
	if err := ValidateNamespaceName(namespace); err != nil {
		return false, err
	}
	b := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: set}}
	var opts []client.DeleteOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := c.Delete(ctx, b, opts...); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("deleting ManagedClusterSetBinding %s/%s: %w", namespace, set, err)
	}
	return true, nil
}

// UnbindMessage is the line for UnbindClusterSet's outcome: clusteradm's when a binding was
// deleted.
func UnbindMessage(set, namespace string, existed bool) string {
	if existed {
		return fmt.Sprintf("Clusterset %s is unbind from namespace %s", set, namespace)
	}
	return fmt.Sprintf("Clusterset %s is not bound to namespace %s; nothing to unbind", set, namespace)
}

// ClusterSetRow is one line of `flotilla get clustersets`.
type ClusterSetRow struct {
	Name, SelectorType string
	BoundNamespaces    []string
	Clusters           []string
	// ManagedNamespaces are the names in spec.managedNamespaces.
	ManagedNamespaces []string
	Status            string
}

// ClusterSetHeader is the header of the cluster sets table.
var ClusterSetHeader = []string{"NAME", "SELECTOR", "BOUND NAMESPACES", "CLUSTERS", "MANAGED NAMESPACES", "STATUS"}

// ClusterSetRows lists every ManagedClusterSet with its bound namespaces (those of its
// bindings whose Bound condition is True), members and managed namespaces.
func ClusterSetRows(ctx context.Context, c client.Client) ([]ClusterSetRow, error) {
	sets := &clusterv1beta2.ManagedClusterSetList{}
	if err := c.List(ctx, sets); err != nil {
		return nil, fmt.Errorf("listing ManagedClusterSets: %w", err)
	}
	bindings := &clusterv1beta2.ManagedClusterSetBindingList{}
	if err := c.List(ctx, bindings); err != nil {
		return nil, fmt.Errorf("listing ManagedClusterSetBindings: %w", err)
	}
	clusters := &clusterv1.ManagedClusterList{}
	if err := c.List(ctx, clusters); err != nil {
		return nil, fmt.Errorf("listing ManagedClusters: %w", err)
	}
	rows := make([]ClusterSetRow, 0, len(sets.Items))
	for i := range sets.Items {
		rows = append(rows, clusterSetRow(&sets.Items[i], bindings.Items, clusters.Items))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return rows, nil
}

func clusterSetRow(s *clusterv1beta2.ManagedClusterSet, bindings []clusterv1beta2.ManagedClusterSetBinding, clusters []clusterv1.ManagedCluster) ClusterSetRow {
	row := ClusterSetRow{Name: s.Name, SelectorType: string(s.Spec.ClusterSelector.SelectorType)}
	if row.SelectorType == "" {
		row.SelectorType = string(clusterv1beta2.ExclusiveClusterSetLabel)
	}
	for _, b := range bindings {
		if b.Spec.ClusterSet == s.Name && meta.IsStatusConditionTrue(b.Status.Conditions, clusterv1beta2.ClusterSetBindingBoundType) {
			row.BoundNamespaces = append(row.BoundNamespaces, b.Namespace)
		}
	}
	sort.Strings(row.BoundNamespaces)
	for _, ns := range s.Spec.ManagedNamespaces {
		row.ManagedNamespaces = append(row.ManagedNamespaces, ns.Name)
	}
	sel, err := clusterset.Selector(s)
	if err != nil {
		row.Status = err.Error()
		return row
	}
	for _, mc := range clusters {
		if sel.Matches(labels.Set(mc.Labels)) {
			row.Clusters = append(row.Clusters, mc.Name)
		}
	}
	sort.Strings(row.Clusters)
	if c := meta.FindStatusCondition(s.Status.Conditions, clusterv1beta2.ManagedClusterSetConditionEmpty); c != nil {
		row.Status = c.Message
	}
	return row
}

// WriteClusterSets prints rows as an aligned table.
func WriteClusterSets(w io.Writer, rows []ClusterSetRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(ClusterSetHeader, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join([]string{r.Name, r.SelectorType, dash(strings.Join(r.BoundNamespaces, ",")),
			dash(strings.Join(r.Clusters, ",")), dash(strings.Join(r.ManagedNamespaces, ",")), dash(r.Status)}, "\t"))
	}
	return tw.Flush()
}
