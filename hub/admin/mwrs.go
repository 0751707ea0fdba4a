package admin

// The hub admin's ManifestWorkReplicaSet views behind `flotilla get mwrs` and
// `flotilla rollout status`.

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/rollout"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
)

// MWRSHeader are the columns of `flotilla get mwrs`: OCM's printer columns (the
// PlacementVerified and ManifestworkApplied conditions), then the rollout and the counts.
var MWRSHeader = []string{"NAMESPACE", "NAME", "PLACEMENT", "FOUND", "MANIFESTWORKS", "APPLIED", "ROLLEDOUT", "WORKS", "APPLIED/DESIRED", "AVAILABLE", "DEGRADED"}

// WriteMWRS lists replica sets as a table.
func WriteMWRS(w io.Writer, items []workv1alpha1.ManifestWorkReplicaSet) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(MWRSHeader, "\t"))
	cond := func(rs *workv1alpha1.ManifestWorkReplicaSet, t string) (string, string) {
		c := meta.FindStatusCondition(rs.Status.Conditions, t)
		if c == nil {
			return "-", "-"
		}
		return c.Reason, string(c.Status)
	}
	for i := range items {
		rs := &items[i]
		pReason, pStatus := cond(rs, workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified)
		wReason, wStatus := cond(rs, workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied)
		rReason, _ := cond(rs, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)
		s := rs.Status.Summary
		fmt.Fprintln(tw, strings.Join([]string{rs.Namespace, rs.Name, pReason, pStatus, wReason, wStatus, rReason,
			strconv.Itoa(s.Total), fmt.Sprintf("%d/%d", s.Applied, s.DesiredTotal), strconv.Itoa(s.Available), strconv.Itoa(s.Degraded)}, "\t"))
	}
	return tw.Flush()
}

// ListMWRS lists the replica sets of namespace ("" for all), or the one named.
func ListMWRS(ctx context.Context, c client.Client, namespace, name string) ([]workv1alpha1.ManifestWorkReplicaSet, error) {
	if name != "" {
		rs := &workv1alpha1.ManifestWorkReplicaSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, rs); err != nil {
			return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: %w", namespace, name, err)
		}
		return []workv1alpha1.ManifestWorkReplicaSet{*rs}, nil
	}
	list := &workv1alpha1.ManifestWorkReplicaSetList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing ManifestWorkReplicaSets: %w", err)
	}
	return list.Items, nil
}

// RolloutStatus evaluates the rollouts of the replica set namespace/name now.
func RolloutStatus(ctx context.Context, c client.Client, namespace, name string, now time.Time) (*workv1alpha1.ManifestWorkReplicaSet, []mwrs.PlacementRollout, error) {
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, rs); err != nil {
		return nil, nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: %w", namespace, name, err)
	}
	// Transforms run locally, their modules read from their sources, as `flotilla render mwrs`;
	// a plugin that does not load (its source is being updated) fails only its clusters' renders.
	tr, closeEngine, err := localTransformer(ctx, c, rs, nil, nil, false)
	if err != nil {
		return nil, nil, err
	}
	defer closeEngine()
	prs, err := mwrs.Inspect(ctx, c, rs, now, &scheduler.CELMatcher{}, tr)
	return rs, prs, err
}

// WriteRolloutStatus prints, per placement, the rollout's verdict and each decision group's
// clusters with their state, since when and why.
func WriteRolloutStatus(w io.Writer, rs *workv1alpha1.ManifestWorkReplicaSet, prs []mwrs.PlacementRollout, now time.Time) error {
	fmt.Fprintf(w, "ManifestWorkReplicaSet %s/%s\n", rs.Namespace, rs.Name)
	for _, c := range rs.Status.Conditions {
		fmt.Fprintf(w, "  %s=%s (%s) %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	for i, pr := range prs {
		strategy := rs.Spec.PlacementRefs[i].RolloutStrategy.Type
		if strategy == "" {
			strategy = "All"
		}
		fmt.Fprintf(w, "\nPlacement %s (%s)", pr.Name, strategy)
		switch {
		case !pr.Found:
			fmt.Fprintln(w, ": not found")
			continue
		case pr.Err != nil:
			fmt.Fprintf(w, ": %v\n", pr.Err)
			continue
		}
		if mwrs.RolledBack(rs) {
			fmt.Fprintln(w, ": RolledBack (this template is not rolled out again; change it to start the next rollout)")
		} else {
			fmt.Fprintf(w, ": %s\n  %s\n", pr.Result.Phase, pr.Result.Message)
		}
		if pr.Result.RecheckAfter > 0 {
			fmt.Fprintf(w, "  next change by the clock in %s\n", pr.Result.RecheckAfter.Round(time.Second))
		}
		tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
		// While overrides name the replica set, each cluster has its own desired render.
		overridden := meta.FindStatusCondition(rs.Status.Conditions, mwrs.ConditionOverridesApplied) != nil
		// SHAPED-BY: the rules that shaped the work the cluster has now (its overrides annotation).
		if overridden {
			fmt.Fprintln(tw, "  GROUP\tCLUSTER\tSTATE\tSINCE\tDESIRED\tOVERRIDES\tSHAPED-BY\tWHY")
		} else {
			fmt.Fprintln(tw, "  GROUP\tCLUSTER\tSTATE\tSINCE\tSHAPED-BY\tWHY")
		}
		for _, c := range pr.Clusters {
			since := "-"
			if !c.Since.IsZero() && c.State != rollout.ToApply {
				since = now.Sub(c.Since).Round(time.Second).String() + " ago"
			}
			group := strings.TrimSpace(fmt.Sprintf("%d %s", c.Group.Index, c.Group.Name))
			if overridden {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", group, c.Cluster, c.State, since, dash(c.Desired), dash(c.Overrides), dash(c.ShapedBy), c.Why)
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", group, c.Cluster, c.State, since, dash(c.ShapedBy), c.Why)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
