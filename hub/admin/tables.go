package admin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/hub/registration/clusterset"
)

// ClusterRow is one line of `flotilla get clusters`.
type ClusterRow struct {
	Name, Accepted, Joined, Available, ClusterSet, CPU, Memory, KubernetesVersion string
}

// ClusterHeader is the header of the clusters table.
var ClusterHeader = []string{"NAME", "ACCEPTED", "JOINED", "AVAILABLE", "CLUSTERSET", "CPU", "MEMORY", "KUBERNETES VERSION"}

// ClusterRows lists every ManagedCluster, sorted by name.
func ClusterRows(ctx context.Context, c client.Client) ([]ClusterRow, error) {
	list := &clusterv1.ManagedClusterList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing ManagedClusters: %w", err)
	}
	rows := make([]ClusterRow, 0, len(list.Items))
	for i := range list.Items {
		rows = append(rows, Row(&list.Items[i]))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return rows, nil
}

// Row tabulates one cluster.
func Row(mc *clusterv1.ManagedCluster) ClusterRow {
	cond := func(t string) string {
		if c := meta.FindStatusCondition(mc.Status.Conditions, t); c != nil {
			return string(c.Status)
		}
		return ""
	}
	qty := func(n clusterv1.ResourceName) string {
		if q, ok := mc.Status.Capacity[n]; ok {
			return q.String()
		}
		return ""
	}
	return ClusterRow{
		Name:              mc.Name,
		Accepted:          fmt.Sprint(mc.Spec.HubAcceptsClient),
		Joined:            cond(clusterv1.ManagedClusterConditionJoined),
		Available:         cond(clusterv1.ManagedClusterConditionAvailable),
		ClusterSet:        mc.Labels[clusterv1beta2.ClusterSetLabel],
		CPU:               qty("cpu"),
		Memory:            qty("memory"),
		KubernetesVersion: mc.Status.Version.Kubernetes,
	}
}

// WriteClusters prints rows as an aligned table.
func WriteClusters(w io.Writer, rows []ClusterRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(ClusterHeader, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join([]string{r.Name, r.Accepted, dash(r.Joined), dash(r.Available), dash(r.ClusterSet),
			dash(r.CPU), dash(r.Memory), dash(r.KubernetesVersion)}, "\t"))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ClusterSetRow is one line of `flotilla get clustersets`.
type ClusterSetRow struct {
	Name, SelectorType string
	BoundNamespaces    []string
	Clusters           []string
	Status             string
}

// ClusterSetHeader is the header of the cluster sets table.
var ClusterSetHeader = []string{"NAME", "SELECTOR", "BOUND NAMESPACES", "CLUSTERS", "STATUS"}

// ClusterSetRows lists every ManagedClusterSet with its bound namespaces and members.
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
		s := &sets.Items[i]
		row := ClusterSetRow{Name: s.Name, SelectorType: string(s.Spec.ClusterSelector.SelectorType)}
		if row.SelectorType == "" {
			row.SelectorType = string(clusterv1beta2.ExclusiveClusterSetLabel)
		}
		for _, b := range bindings.Items {
			if b.Spec.ClusterSet == s.Name && meta.IsStatusConditionTrue(b.Status.Conditions, clusterv1beta2.ClusterSetBindingBoundType) {
				row.BoundNamespaces = append(row.BoundNamespaces, b.Namespace)
			}
		}
		sort.Strings(row.BoundNamespaces)
		if sel, err := clusterset.Selector(s); err != nil {
			row.Status = err.Error()
		} else {
			for _, mc := range clusters.Items {
				if sel.Matches(labels.Set(mc.Labels)) {
					row.Clusters = append(row.Clusters, mc.Name)
				}
			}
			sort.Strings(row.Clusters)
			if c := meta.FindStatusCondition(s.Status.Conditions, clusterv1beta2.ManagedClusterSetConditionEmpty); c != nil {
				row.Status = c.Message
			}
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return rows, nil
}

// WriteClusterSets prints rows as an aligned table.
func WriteClusterSets(w io.Writer, rows []ClusterSetRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(ClusterSetHeader, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join([]string{r.Name, r.SelectorType, dash(strings.Join(r.BoundNamespaces, ",")),
			dash(strings.Join(r.Clusters, ",")), dash(r.Status)}, "\t"))
	}
	return tw.Flush()
}
