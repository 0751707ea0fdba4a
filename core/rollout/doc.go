// Package rollout decides how a change spreads over the clusters a Placement
// selected, following a cluster/v1alpha1 RolloutStrategy. It is the engine
// behind ManifestWorkReplicaSet and add-on upgrades, and it is a pure
// function: Evaluate reads no clock, makes no API call and keeps no state.
//
// # Model
//
// The caller passes the strategy, the placement's decision groups (index,
// name, clusters), each cluster's Status for the current generation with the
// time it entered it, and Now. A cluster with no state is ToApply. At Now each
// cluster is one of:
//
//   - to apply: not updated yet;
//   - in flight: Progressing within progressDeadline, or Succeeded less than
//     minSuccessTime ago (soaking);
//   - done: Succeeded at least minSuccessTime ago, or Skip;
//   - failed: Failed, TimeOut, or Progressing past progressDeadline (returned
//     in Result.TimedOut for the caller to record as TimeOut).
//
// The strategies:
//
//   - All admits every cluster at once.
//   - Progressive rolls out the mandatory decision groups first, one group at
//     a time in index order, all clusters of a group at once (maxConcurrency
//     does not apply to them, as in OCM). Then the other clusters in decision
//     group order (names sorted within a group), keeping at most
//     maxConcurrency clusters in flight.
//   - ProgressivePerGroup rolls out the mandatory groups, then the others, one
//     group at a time in index order: a group starts only when every earlier
//     group is finished (nothing to apply, nothing in flight). Failed clusters
//     within the group's budget do not hold a group open.
//
// maxFailures counts failed clusters: over all clusters for All and
// Progressive, per group (a percentage of the group's size) for
// ProgressivePerGroup. A mandatory group tolerates no failure. When the count
// exceeds the limit (0 stops at the first failure; exactly the limit goes on)
// the Result is Stopped: nothing new is admitted, clusters in flight go on. Stop
// is not latched: it is recomputed from the states, so the rollout resumes if
// failed clusters recover or the strategy is relaxed.
//
// Percentages are of the relevant total, rounded up as OCM rounds them;
// maxConcurrency is at least 1. Left unset (0, "0" or "0%"), maxConcurrency is the size of the
// largest non-mandatory decision group. progressDeadline "None" or empty never
// expires; the deprecated Timeout is read when ProgressDeadline is empty.
// Result is Complete when every cluster is done (zero clusters is Complete);
// RecheckAfter is the time until the earliest deadline or soak end.
//
// Decision groups may change between evaluations. Progress is read from the
// clusters' states, never from a remembered group number, so a re-numbered
// group is neither restarted nor skipped; a new cluster in a finished group is
// ToApply and reopens that group (for ProgressivePerGroup it is rolled out
// before any later group's remaining clusters); a cluster that left every group
// is returned in Removed.
//
// # Differences from OCM
//
// OCM implements this in RolloutHandler.GetRolloutCluster
// (open-cluster-management-io/api cluster/v1alpha1/helpers.go, now sdk-go
// pkg/apis/cluster/v1alpha1/rollout.go). We differ where it is wrong or vague:
//
//   - A Failed cluster is a failure at once and frees its concurrency slot.
//     OCM keeps a Failed cluster among the clusters to roll out until
//     progressDeadline, so with the default deadline "None" one failure that
//     maxFailures tolerates holds a Progressive slot forever.
//   - Every cluster is examined each time. OCM stops scanning once the
//     concurrency window is full, so failures and timeouts of clusters sorted
//     later are neither counted nor reported and a breach can go unnoticed
//     (compare ocm issue 327: "the rollout doesn't stop when failures exceed
//     MaxFailures").
//   - RecheckAfter is exact: the earliest deadline or soak end. The other half
//     of issue 327 ("ProgressivePerGroup does not continue once MinSuccessTime
//     is met") was a missing requeue (ocm PR 337); OCM then requeued after the
//     whole minSuccessTime rather than what was left of it (ocm issue 1237).
//   - Progressive follows decision group order; OCM sorts the non-mandatory
//     clusters by name across groups, although its documentation promises
//     group order.
//   - maxConcurrency as a percentage is of all clusters; current OCM takes it
//     of the non-mandatory ones.
//   - A maxFailures larger than the number of clusters tolerates them all; OCM
//     falls back to 0 whenever the value exceeds the total.
//   - Unset maxConcurrency: OCM's API documents clustersPerDecisionGroup, its
//     code uses every non-mandatory cluster. The largest non-mandatory group is
//     both: clustersPerDecisionGroup when that split the clusters, everything
//     when the Placement has no decision strategy.
//   - A mandatory group with a recorded TimeOut stops the rollout; OCM moves
//     on to the other groups once the timeout is recorded. A mandatory group
//     that names or indexes no decision group is an error; OCM ignores it.
//   - Decision group indexes need not be contiguous; OCM walks 0..n-1 and so
//     never rolls out the groups past a gap.
//   - All honours maxFailures (a Stop keeps clusters that join later from
//     being updated) and minSuccessTime (for Complete); OCM ignores both for
//     All.
//   - A count written as a string ("2") is accepted, as the CRD pattern
//     allows; OCM rejects it.
package rollout
