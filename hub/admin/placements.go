package admin

// The hub admin's placement operations behind `flotilla get placements` and
// `flotilla create work --placement`: reading a Placement's PlacementDecisions in decision
// order, resolving the clusters it selects, and tabulating placements.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// ErrNoDecisions is wrapped by PlacementClusters' error when the placement exists but its
// PlacementDecisions list no cluster.
var ErrNoDecisions = errors.New("no decisions")

// ParsePlacementRef splits "NAMESPACE/NAME" into its two parts.
func ParsePlacementRef(ref string) (namespace, name string, err error) {
	ns, n, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("placement %q: want NAMESPACE/NAME", ref)
	}
	return ns, n, nil
}

// SortDecisions orders the PlacementDecisions of one placement in decision order: the
// numbered pages <placement>-decision-<n> by n (the placement controller numbers them from
// 1 across the decision groups, in group order), then any other PlacementDecision carrying
// the placement label (written by another scheduler) by name.
func SortDecisions(placement string, ds []clusterv1beta1.PlacementDecision) {
	page := func(name string) (int, bool) {
		s, ok := strings.CutPrefix(name, placement+"-decision-")
		if !ok {
			return 0, false
		}
		n, err := strconv.Atoi(s)
		return n, err == nil && n > 0
	}
	sort.SliceStable(ds, func(i, j int) bool {
		ni, oki := page(ds[i].Name)
		nj, okj := page(ds[j].Name)
		switch {
		case oki && okj && ni != nj:
			return ni < nj
		case oki != okj:
			return oki
		}
		return ds[i].Name < ds[j].Name
	})
}

// PlacementDecisions lists the PlacementDecisions of the Placement namespace/name (those
// labelled cluster.open-cluster-management.io/placement=name in its namespace), in
// decision order (see SortDecisions). It does not check that the Placement exists.
func PlacementDecisions(ctx context.Context, c client.Client, namespace, name string) ([]clusterv1beta1.PlacementDecision, error) {
	list := &clusterv1beta1.PlacementDecisionList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: name}); err != nil {
		return nil, fmt.Errorf("placement %s/%s: listing its PlacementDecisions: %w", namespace, name, err)
	}
	SortDecisions(name, list.Items)
	return list.Items, nil
}

// DecidedClusters flattens PlacementDecisions (in decision order) into their cluster
// decisions, keeping the first of any cluster listed twice.
func DecidedClusters(ds []clusterv1beta1.PlacementDecision) []clusterv1beta1.ClusterDecision {
	var out []clusterv1beta1.ClusterDecision
	seen := map[string]bool{}
	for _, d := range ds {
		for _, cd := range d.Status.Decisions {
			if cd.ClusterName == "" || seen[cd.ClusterName] {
				continue
			}
			seen[cd.ClusterName] = true
			out = append(out, cd)
		}
	}
	return out
}

// PlacementClusters returns the names of the clusters the Placement namespace/name
// currently selects, as its PlacementDecisions list them, in decision order. It fails,
// naming the placement, when the Placement does not exist or is being deleted, and with an
// error wrapping ErrNoDecisions (saying why, from its PlacementSatisfied condition) when its
// decisions list no cluster.
func PlacementClusters(ctx context.Context, c client.Client, namespace, name string) ([]string, error) {
	p := &clusterv1beta1.Placement{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("placement %s/%s not found", namespace, name)
		}
		return nil, fmt.Errorf("reading Placement %s/%s: %w", namespace, name, err)
	}
	if !p.DeletionTimestamp.IsZero() {
		return nil, fmt.Errorf("placement %s/%s is being deleted", namespace, name)
	}
	ds, err := PlacementDecisions(ctx, c, namespace, name)
	if err != nil {
		return nil, err
	}
	decided := DecidedClusters(ds)
	if len(decided) == 0 {
		why := "no PlacementDecisions are labelled " + clusterv1beta1.PlacementLabel + "=" + name
		if len(ds) > 0 {
			names := make([]string, len(ds))
			for i := range ds {
				names[i] = ds[i].Name
			}
			why = "its PlacementDecisions " + strings.Join(names, ", ") + " list no cluster"
		}
		return nil, fmt.Errorf("placement %s/%s has %w, it selects no clusters: %s (%s)", namespace, name, ErrNoDecisions, why, satisfiedSummary(p))
	}
	out := make([]string, len(decided))
	for i, d := range decided {
		out[i] = d.ClusterName
	}
	return out, nil
}

// satisfiedSummary says what the placement's conditions say about its selection.
func satisfiedSummary(p *clusterv1beta1.Placement) string {
	if c := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionMisconfigured); c != nil && c.Status == metav1.ConditionTrue {
		return "PlacementMisconfigured: " + oneLine(c.Message)
	}
	c := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
	if c == nil {
		return "no PlacementSatisfied condition yet: is the hub's placement controller running? see flotilla get placements " + p.Name + " -n " + p.Namespace
	}
	s := fmt.Sprintf("PlacementSatisfied %s, %s", c.Status, dash(c.Reason))
	if m := oneLine(c.Message); m != "" {
		s += ": " + m
	}
	return s
}

// PlacementRow is one line of `flotilla get placements`.
type PlacementRow struct {
	Namespace, Name string
	// Satisfied is the status of the PlacementSatisfied condition, "" when not reported.
	Satisfied string
	// Reason is Misconfigured when PlacementMisconfigured is True, else the reason of
	// PlacementSatisfied.
	Reason string
	// Selected is status.numberOfSelectedClusters.
	Selected int32
	// Clusters are the clusters of the PlacementDecisions, in decision order.
	Clusters []string
}

// PlacementHeader is the header of the placements table.
var PlacementHeader = []string{"NAMESPACE", "NAME", "SATISFIED", "REASON", "SELECTED", "CLUSTERS"}

// MaxClustersWidth bounds the CLUSTERS cell of the placements table; the names that do not
// fit are counted as "+N more".
const MaxClustersWidth = 60

// PlacementRows lists the Placements of namespace (of every namespace when it is "") with
// the clusters their PlacementDecisions select, sorted by namespace and name.
func PlacementRows(ctx context.Context, c client.Client, namespace string) ([]PlacementRow, error) {
	var opts []client.ListOption
	where := "in every namespace"
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
		where = "in namespace " + namespace
	}
	placements := &clusterv1beta1.PlacementList{}
	if err := c.List(ctx, placements, opts...); err != nil {
		return nil, fmt.Errorf("listing Placements %s: %w", where, err)
	}
	decisions := &clusterv1beta1.PlacementDecisionList{}
	if err := c.List(ctx, decisions, opts...); err != nil {
		return nil, fmt.Errorf("listing PlacementDecisions %s: %w", where, err)
	}
	byPlacement := map[client.ObjectKey][]clusterv1beta1.PlacementDecision{}
	for _, d := range decisions.Items {
		if p := d.Labels[clusterv1beta1.PlacementLabel]; p != "" {
			k := client.ObjectKey{Namespace: d.Namespace, Name: p}
			byPlacement[k] = append(byPlacement[k], d)
		}
	}
	rows := make([]PlacementRow, 0, len(placements.Items))
	for i := range placements.Items {
		p := &placements.Items[i]
		ds := byPlacement[client.ObjectKeyFromObject(p)]
		SortDecisions(p.Name, ds)
		rows = append(rows, PlacementRowOf(p, ds))
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Namespace != rows[j].Namespace {
			return rows[i].Namespace < rows[j].Namespace
		}
		return rows[i].Name < rows[j].Name
	})
	return rows, nil
}

// PlacementRowOf tabulates one Placement with its PlacementDecisions, in decision order.
func PlacementRowOf(p *clusterv1beta1.Placement, ds []clusterv1beta1.PlacementDecision) PlacementRow {
	r := PlacementRow{Namespace: p.Namespace, Name: p.Name, Selected: p.Status.NumberOfSelectedClusters}
	if c := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied); c != nil {
		r.Satisfied, r.Reason = string(c.Status), c.Reason
	}
	if meta.IsStatusConditionTrue(p.Status.Conditions, clusterv1beta1.PlacementConditionMisconfigured) {
		r.Reason = clusterv1beta1.PlacementReasonMisconfigured
	}
	for _, d := range DecidedClusters(ds) {
		r.Clusters = append(r.Clusters, d.ClusterName)
	}
	return r
}

// WritePlacements prints rows as an aligned table.
func WritePlacements(w io.Writer, rows []PlacementRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(PlacementHeader, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join([]string{r.Namespace, r.Name, dash(r.Satisfied), dash(r.Reason),
			strconv.Itoa(int(r.Selected)), dash(TruncateClusters(r.Clusters, MaxClustersWidth))}, "\t"))
	}
	return tw.Flush()
}

// TruncateClusters joins names with commas, keeping as many as fit in width characters
// (at least one) and counting the others: "c1,c2,c3,+7 more".
func TruncateClusters(names []string, width int) string {
	if all := strings.Join(names, ","); len(all) <= width {
		return all
	}
	var b strings.Builder
	for i, n := range names {
		rest := len(names) - i
		more := ""
		if rest > 1 {
			more = fmt.Sprintf(",+%d more", rest-1)
		}
		sep := ""
		if i > 0 {
			sep = ","
		}
		// Keep this name if it fits together with the count of those after it.
		if i > 0 && b.Len()+len(sep)+len(n)+len(more) > width {
			fmt.Fprintf(&b, ",+%d more", rest)
			return b.String()
		}
		b.WriteString(sep + n)
	}
	return b.String()
}

// PlacementDetail is what `flotilla get placements NAME` shows.
type PlacementDetail struct {
	Namespace, Name string
	Created         time.Time
	// Requested is spec.numberOfClusters, nil for every feasible cluster.
	Requested *int32
	// Selected is status.numberOfSelectedClusters.
	Selected   int32
	Conditions []metav1.Condition
	Groups     []clusterv1beta1.DecisionGroupStatus
	// Decisions are the cluster decisions in decision order, each with the
	// PlacementDecision that lists it.
	Decisions []DecisionDetail
	// PlacementDecisions are the names of the placement's PlacementDecisions, in order.
	PlacementDecisions []string
}

// DecisionDetail is one selected cluster of a placement.
type DecisionDetail struct {
	clusterv1beta1.ClusterDecision
	// PlacementDecision is the name of the PlacementDecision listing the cluster.
	PlacementDecision string
}

// GetPlacementDetail reads the Placement namespace/name and its PlacementDecisions.
func GetPlacementDetail(ctx context.Context, c client.Client, namespace, name string) (PlacementDetail, error) {
	p := &clusterv1beta1.Placement{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return PlacementDetail{}, fmt.Errorf("placement %s/%s not found", namespace, name)
		}
		return PlacementDetail{}, fmt.Errorf("reading Placement %s/%s: %w", namespace, name, err)
	}
	ds, err := PlacementDecisions(ctx, c, namespace, name)
	if err != nil {
		return PlacementDetail{}, err
	}
	return PlacementDetailOf(p, ds), nil
}

// PlacementDetailOf describes a Placement with its PlacementDecisions, in decision order.
func PlacementDetailOf(p *clusterv1beta1.Placement, ds []clusterv1beta1.PlacementDecision) PlacementDetail {
	d := PlacementDetail{
		Namespace: p.Namespace, Name: p.Name, Created: p.CreationTimestamp.Time,
		Requested: p.Spec.NumberOfClusters, Selected: p.Status.NumberOfSelectedClusters,
		Conditions: p.Status.Conditions, Groups: p.Status.DecisionGroups,
	}
	seen := map[string]bool{}
	for _, pd := range ds {
		d.PlacementDecisions = append(d.PlacementDecisions, pd.Name)
		for _, cd := range pd.Status.Decisions {
			if cd.ClusterName == "" || seen[cd.ClusterName] {
				continue
			}
			seen[cd.ClusterName] = true
			d.Decisions = append(d.Decisions, DecisionDetail{ClusterDecision: cd, PlacementDecision: pd.Name})
		}
	}
	return d
}

// WritePlacementDetail prints d: the placement's conditions, its decision groups, then every
// decision with its score in decision order. Ages are relative to now.
func WritePlacementDetail(w io.Writer, d PlacementDetail, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", d.Name)
	fmt.Fprintf(tw, "Namespace:\t%s\n", d.Namespace)
	fmt.Fprintf(tw, "Age:\t%s\n", age(d.Created, now))
	requested := "all feasible clusters"
	if d.Requested != nil {
		requested = strconv.Itoa(int(*d.Requested))
	}
	fmt.Fprintf(tw, "Requested:\t%s\n", requested)
	fmt.Fprintf(tw, "Selected:\t%d\n", d.Selected)
	if len(d.Conditions) == 0 {
		fmt.Fprintln(tw, "Conditions: none reported yet (is the hub's placement controller running?)")
	} else {
		fmt.Fprintln(tw, "Conditions:")
		writeConditions(tw, "  ", d.Conditions)
	}
	if len(d.Groups) == 0 {
		fmt.Fprintln(tw, "Decision groups: none reported")
	} else {
		fmt.Fprintf(tw, "Decision groups: %d\n", len(d.Groups))
		fmt.Fprintln(tw, "  INDEX\tNAME\tCLUSTERS\tDECISIONS")
		for _, g := range d.Groups {
			fmt.Fprintf(tw, "  %d\t%s\t%d\t%s\n", g.DecisionGroupIndex, dash(g.DecisionGroupName), g.ClustersCount, dash(strings.Join(g.Decisions, ",")))
		}
	}
	if len(d.Decisions) == 0 {
		if len(d.PlacementDecisions) == 0 {
			fmt.Fprintln(tw, "Decisions: none (no PlacementDecisions)")
		} else {
			fmt.Fprintf(tw, "Decisions: none (PlacementDecisions %s list no cluster)\n", strings.Join(d.PlacementDecisions, ", "))
		}
	} else {
		fmt.Fprintf(tw, "Decisions: %d\n", len(d.Decisions))
		fmt.Fprintln(tw, "  CLUSTER\tSCORE\tPLACEMENTDECISION")
		for _, cd := range d.Decisions {
			fmt.Fprintf(tw, "  %s\t%d\t%s\n", cd.ClusterName, cd.Score, cd.PlacementDecision)
		}
	}
	return tw.Flush()
}

// PlacementWorkLabel marks a ManifestWork created for a placement's clusters (flotilla create
// work --placement) with the placement's "<namespace>.<name>", so that a later run can take the
// work away from clusters the placement no longer selects, and only that work.
const PlacementWorkLabel = "work.flotilla.dev/placement"

// LabelPlacementWork labels the ManifestWork name in each cluster's namespace as created for
// the placement namespace/placement.
func LabelPlacementWork(ctx context.Context, c client.Client, name, namespace, placement string, clusters []string) error {
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, PlacementWorkLabel, namespace+"."+placement)))
	var errs []error
	for _, cluster := range clusters {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name}}
		if err := c.Patch(ctx, w, patch); err != nil {
			errs = append(errs, fmt.Errorf("labelling manifestwork %s in %s: %w", name, cluster, err))
		}
	}
	return errors.Join(errs...)
}

// PruneWork deletes the ManifestWork name created for the placement namespace/placement from
// the namespaces of clusters not in keep, as clusteradm create work --placement --overwrite
// does when the placement moved, and returns the clusters it was deleted from.
func PruneWork(ctx context.Context, c client.Client, name, namespace, placement string, keep []string) ([]string, error) {
	list := &workv1.ManifestWorkList{}
	if err := c.List(ctx, list, client.MatchingLabels{PlacementWorkLabel: namespace + "." + placement}); err != nil {
		return nil, fmt.Errorf("listing the ManifestWorks of placement %s/%s: %w", namespace, placement, err)
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	var pruned []string
	var errs []error
	for i := range list.Items {
		w := &list.Items[i]
		if w.Name != name || kept[w.Namespace] {
			continue
		}
		if err := client.IgnoreNotFound(c.Delete(ctx, w)); err != nil {
			errs = append(errs, fmt.Errorf("deleting manifestwork %s in %s: %w", name, w.Namespace, err))
			continue
		}
		pruned = append(pruned, w.Namespace)
	}
	sort.Strings(pruned)
	return pruned, errors.Join(errs...)
}
