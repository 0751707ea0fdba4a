package admin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
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
