// Package admin holds the hub admin's registration operations behind `flotilla accept` and
// `flotilla get`: accepting clusters and tabulating clusters and cluster sets.
package admin

import (
	"time"

	"context"
	"errors"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/hub/registration/csr"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

// ReasonAdminApproved is the Approved reason on CSRs approved through Accept.
const ReasonAdminApproved = "FlotillaHubAdminAccepted"

// AcceptResult says what Accept did for one cluster.
type AcceptResult struct {
	Cluster string
	// ApprovedCSRs are the pending CSRs Accept approved.
	ApprovedCSRs []string
	// SkippedCSRs are pending registration CSRs Accept left alone: their requester is neither
	// a bootstrap identity nor the cluster's own agent (see Approvable).
	SkippedCSRs []string
	// AlreadyAccepted is true when spec.hubAcceptsClient was already true.
	AlreadyAccepted bool
}

// ErrNoCSR is returned (wrapped) when a cluster has no registration CSR to approve yet.
var ErrNoCSR = errors.New("no registration CertificateSigningRequest yet")

// Approvable reports whether Accept may approve the registration CSR r of cluster: as with
// `clusteradm accept`, its requester must be a bootstrap identity (rbac.IsBootstrapIdentity:
// either bootstrap ServiceAccount or a bootstrap token in system:bootstrappers:managedcluster);
// a request by the cluster's own agent (a rotation that waited while the cluster was not
// accepted) is approvable too.
func Approvable(r *certificatesv1.CertificateSigningRequest, cluster string) bool {
	return rbac.IsBootstrapIdentity(r.Spec.Username, r.Spec.Groups) ||
		csr.RequesterCluster(r.Spec.Username, r.Spec.Groups) == cluster
}

// Accept is the hub admin's half of the double opt-in for each cluster: approve its pending
// registration CSRs (those Approvable) and set spec.hubAcceptsClient. Every cluster is
// attempted; the returned error joins the failures, each naming its cluster.
func Accept(ctx context.Context, c client.Client, kube kubernetes.Interface, clusters []string) ([]AcceptResult, error) {
	var results []AcceptResult
	var errs []error
	for _, name := range clusters {
		r, err := acceptOne(ctx, c, kube, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		results = append(results, r)
	}
	return results, errors.Join(errs...)
}

func acceptOne(ctx context.Context, c client.Client, kube kubernetes.Interface, name string) (AcceptResult, error) {
	res := AcceptResult{Cluster: name}
	mc := &clusterv1.ManagedCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return res, fmt.Errorf("cluster %q: no ManagedCluster of that name on the hub (has its klusterlet registered yet?)", name)
		}
		return res, fmt.Errorf("cluster %q: reading ManagedCluster: %w", name, err)
	}
	if !mc.DeletionTimestamp.IsZero() {
		return res, fmt.Errorf("cluster %q: ManagedCluster is being deleted", name)
	}
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := c.List(ctx, list, client.MatchingLabels{csr.ClusterNameLabel: name}); err != nil {
		return res, fmt.Errorf("cluster %q: listing CertificateSigningRequests: %w", name, err)
	}
	approvedBefore := false
	var pending []*certificatesv1.CertificateSigningRequest
	for i := range list.Items {
		r := &list.Items[i]
		if !csr.IsRegistrationCSR(r) {
			continue
		}
		switch {
		case csr.IsPending(r) && !Approvable(r, name):
			res.SkippedCSRs = append(res.SkippedCSRs, r.Name)
		case csr.IsPending(r):
			pending = append(pending, r)
		default:
			approvedBefore = approvedBefore || isApproved(r)
		}
	}
	if len(pending) == 0 && !approvedBefore && !joined(mc) {
		if len(res.SkippedCSRs) > 0 {
			return res, fmt.Errorf("cluster %q: %w from a bootstrap identity (pending CSRs %v were requested by someone else and are left alone)",
				name, ErrNoCSR, res.SkippedCSRs)
		}
		return res, fmt.Errorf("cluster %q: %w", name, ErrNoCSR)
	}
	// Accept before approving: the agent acts as soon as it has its certificate, and the hub
	// grants the cluster's RBAC on acceptance, so this order spares it a round of forbidden
	// errors.
	res.AlreadyAccepted = mc.Spec.HubAcceptsClient
	if !mc.Spec.HubAcceptsClient {
		patch := []byte(`{"spec":{"hubAcceptsClient":true}}`)
		if err := c.Patch(ctx, mc, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return res, fmt.Errorf("cluster %q: setting spec.hubAcceptsClient: %w", name, err)
		}
	}
	if len(pending) > 0 {
		waitGranted(ctx, c, name)
	}
	for _, r := range pending {
		r.Status.Conditions = append(r.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type:           certificatesv1.CertificateApproved,
			Status:         corev1.ConditionTrue,
			Reason:         ReasonAdminApproved,
			Message:        "approved by the hub admin (flotilla accept)",
			LastUpdateTime: metav1.Now(),
		})
		if _, err := kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, r.Name, r, metav1.UpdateOptions{}); err != nil {
			return res, fmt.Errorf("cluster %q: approving CertificateSigningRequest %s: %w", name, r.Name, err)
		}
		res.ApprovedCSRs = append(res.ApprovedCSRs, r.Name)
	}
	return res, nil
}

// grantWait bounds how long accept waits for the hub to grant an accepted cluster's RBAC.
const grantWait = 15 * time.Second

// waitGranted waits until the hub reports the cluster accepted (HubAcceptedManagedCluster,
// set once its RBAC is in place), so the agent's first request with the certificate about to
// be approved is not refused. Without a running hub it gives up after grantWait: approving
// is still what the admin asked for.
func waitGranted(ctx context.Context, c client.Client, name string) {
	ctx, cancel := context.WithTimeout(ctx, grantWait)
	defer cancel()
	for {
		mc := &clusterv1.ManagedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, mc); err == nil &&
			meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func isApproved(r *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range r.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return true
		}
	}
	return false
}

func joined(mc *clusterv1.ManagedCluster) bool {
	for _, c := range mc.Status.Conditions {
		if c.Type == clusterv1.ManagedClusterConditionJoined && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}
