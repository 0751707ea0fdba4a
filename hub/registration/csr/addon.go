package csr

import (
	"context"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// addonDecisionChanged passes the ManagedClusterAddOn events that can change what a plugin
// decides on the add-on's CSRs: it appears or goes, starts being deleted, or its registrations
// change. Condition updates (health, manifests) pass by.
var addonDecisionChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*addonv1alpha1.ManagedClusterAddOn)
		n, ok2 := e.ObjectNew.(*addonv1alpha1.ManagedClusterAddOn)
		if !ok1 || !ok2 {
			return true
		}
		return o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() ||
			!slices.EqualFunc(o.Status.Registrations, n.Status.Registrations, registrationEqual)
	},
}

func registrationEqual(a, b addonv1alpha1.RegistrationConfig) bool {
	return a.SignerName == b.SignerName && a.Subject.User == b.Subject.User &&
		slices.Equal(a.Subject.Groups, b.Subject.Groups) && slices.Equal(a.Subject.OrganizationUnits, b.Subject.OrganizationUnits)
}

// reconcileAddon decides an add-on CSR. Unlike a registration CSR it never accepts a cluster,
// and when no plugin decides it stays pending with an Event saying why: enabling the add-on or
// accepting the cluster brings it back (the watches above).
func (r *Reconciler) reconcileAddon(ctx context.Context, c *certificatesv1.CertificateSigningRequest, in Request) error {
	if why := CheckAddonIdentity(in); why != "" {
		return r.decide(ctx, c, certificatesv1.CertificateDenied, ReasonIdentityRejected,
			fmt.Sprintf("CertificateSigningRequest %s for add-on %s of cluster %s: %s", c.Name, in.Addon.Name, in.ClusterName, why))
	}
	mc := &clusterv1.ManagedCluster{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: in.ClusterName}, mc); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("CertificateSigningRequest %s: reading ManagedCluster %s: %w", c.Name, in.ClusterName, err)
	default:
		in.ClusterExists = mc.DeletionTimestamp.IsZero()
		in.ClusterAccepted = in.ClusterExists && mc.Spec.HubAcceptsClient
	}
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: in.ClusterName, Name: in.Addon.Name}, mca); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("CertificateSigningRequest %s: reading ManagedClusterAddOn %s/%s: %w", c.Name, in.ClusterName, in.Addon.Name, err)
	default:
		in.Addon.Enabled = mca.DeletionTimestamp.IsZero()
		for _, reg := range mca.Status.Registrations {
			in.Addon.Registrations = append(in.Addon.Registrations, abi.CSRAddonRegistration{
				SignerName: reg.SignerName, User: reg.Subject.User, Groups: slices.Clone(reg.Subject.Groups),
			})
		}
	}
	out := Combine(r.review(ctx, c, in))
	switch out.Decision {
	case abi.CSRDeny:
		return r.decide(ctx, c, certificatesv1.CertificateDenied, ReasonPluginDenied, out.describe())
	case abi.CSRApprove:
		return r.decide(ctx, c, certificatesv1.CertificateApproved, ReasonPluginApproved, out.describe())
	}
	log.FromContext(ctx).V(1).Info("no CSRApproval plugin decided add-on CSR; it waits",
		"csr", c.Name, "cluster", in.ClusterName, "addon", in.Addon.Name)
	if r.Recorder != nil {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, ReasonAddonCSRPending, "ReviewCSR",
			"no CSRApproval plugin approved add-on %s's CSR for cluster %s (cluster accepted: %t, add-on enabled: %t); it waits for the admin or for a change",
			in.Addon.Name, in.ClusterName, in.ClusterAccepted, in.Addon.Enabled)
	}
	return nil
}

var _ reconcile.Reconciler = (*Reconciler)(nil)
