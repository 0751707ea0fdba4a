package csr

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
	flmetrics "github.com/flotilla-dev/flotilla/core/metrics"
	"github.com/flotilla-dev/flotilla/hub/registration/managedcluster"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Condition reasons the hub writes on CSRs it decides.
const (
	ReasonPluginApproved   = "FlotillaCSRApprovalPluginApproved"
	ReasonPluginDenied     = "FlotillaCSRApprovalPluginDenied"
	ReasonIdentityRejected = "FlotillaInvalidAgentIdentity"
	// ReasonAddonCSRPending is the Event reason on an add-on CSR no plugin approved or denied.
	ReasonAddonCSRPending = "AddonCSRPending"
	// ReasonAutoAccepted is the Event reason on a ManagedCluster accepted with its first CSR.
	ReasonAutoAccepted = "ManagedClusterAutoAccepted"
	// ReasonRenewalNotAuthorized is the Event reason on a renewal CSR whose requester may not
	// renew (no RBAC grants verb renew on managedclusters/clientcertificates): it stays pending.
	ReasonRenewalNotAuthorized = "CSRRenewalNotAuthorized"
)

// RenewalRecheck is how soon a renewal CSR its requester may not renew is looked at again,
// besides when the cluster's ClusterRole or ClusterRoleBinding changes: a grant through some
// other role is noticed that late.
const RenewalRecheck = 30 * time.Second

// authorizeTimeout bounds one SubjectAccessReview.
const authorizeTimeout = 10 * time.Second

// DefaultPluginTimeout bounds one review_csr call.
const DefaultPluginTimeout = 10 * time.Second

// Reconciler decides pending registration and add-on CSRs with the CSRApproval plugins.
type Reconciler struct {
	Client    client.Client
	Kube      kubernetes.Interface
	Reviewers Reviewers
	Recorder  events.EventRecorder
	// PluginTimeout bounds each plugin call; zero means DefaultPluginTimeout.
	PluginTimeout time.Duration
	// AutoAccept reports whether the ManagedClusterAutoApproval gate is on: a first-time CSR
	// the plugins approve then also accepts its cluster (managedcluster.AutoAccept). It is
	// asked at each decision; nil means off, so plugins approve CSRs only.
	AutoAccept func() bool

	failures *prometheus.CounterVec
}

// PluginFailuresMetric counts review_csr calls that trapped, timed out or answered garbage.
const PluginFailuresMetric = "flotilla_csr_approval_plugin_failures_total"

// registerFailures registers (or reuses, when several hubs share a process) the failure counter
// in controller-runtime's metrics registry.
func registerFailures() (*prometheus.CounterVec, error) {
	return flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PluginFailuresMetric,
		Help: "CSRApproval plugin calls that failed and so gave no decision, by plugin.",
	}, []string{"plugin"}))
}

// SetupWithManager watches CSRs, ManagedClusters (acceptance changes what renewal plugins
// decide), the per-cluster ClusterRoles and ClusterRoleBindings (they decide whether a renewal
// is authorized), ManagedClusterAddOns (an add-on enabled, removed or registered differently
// changes what add-on plugins decide) and plugin changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	f, err := registerFailures()
	if err != nil {
		return err
	}
	r.failures = f
	pluginEvents := make(chan event.GenericEvent, 1)
	if err := mgr.Add(ctrlRunnable(func(ctx context.Context) error {
		changed := r.Reviewers.Changed(ctx)
		for {
			select {
			case <-ctx.Done():
				return nil
			case _, ok := <-changed:
				if !ok {
					return nil
				}
				select {
				case pluginEvents <- event.GenericEvent{Object: &certificatesv1.CertificateSigningRequest{}}:
				default: // a re-evaluation of everything is already queued
				}
			}
		}
	})); err != nil {
		return err
	}
	// CSRs by cluster: a cluster's event looks up its own requests in the index instead of
	// filtering every CSR of the fleet (thousands, kept an hour after signing) by label.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &certificatesv1.CertificateSigningRequest{}, clusterIndex,
		func(o client.Object) []string {
			if c := o.GetLabels()[ClusterNameLabel]; c != "" {
				return []string{c}
			}
			return nil
		}); err != nil {
		return err
	}
	allPending := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return r.pendingRequests(ctx)
	})
	clusterRBAC := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		cluster := o.GetLabels()[ClusterNameLabel]
		if cluster == "" || o.GetName() != rbac.ClusterRoleName(cluster) {
			return nil
		}
		return r.pendingRequests(ctx, client.MatchingFields{clusterIndex: cluster})
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("registration-csr-approval").
		// Each decision is one CSR's plugin calls and writes, independent of the others: as
		// many at once as the cluster controller (a fleet joining at once queued minutes here).
		WithOptions(controller.Options{MaxConcurrentReconciles: managedcluster.Workers}).
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			c, ok := o.(*certificatesv1.CertificateSigningRequest)
			return ok && IsReviewedCSR(c) && IsPending(c)
		}))).
		// A decision reads the cluster's acceptance, existence and metadata, not the status
		// its agent reports (a joining fleet writes thousands of those a minute).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.pendingRequests(ctx, client.MatchingFields{clusterIndex: o.GetName()})
		}), builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&rbacv1.ClusterRole{}, clusterRBAC).
		Watches(&rbacv1.ClusterRoleBinding{}, clusterRBAC).
		Watches(&addonv1alpha1.ManagedClusterAddOn{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.pendingRequests(ctx, client.MatchingFields{clusterIndex: o.GetNamespace()}, client.MatchingLabels{AddonNameLabel: o.GetName()})
		}), builder.WithPredicates(addonDecisionChanged)).
		WatchesRawSource(source.Channel(pluginEvents, allPending)).
		// Accepting a cluster and approving a CSR are guarded by resourceVersion: a decision is
		// never made on a stale object, it is made again on the current one.
		Complete(apply.Quiet(r))
}

type ctrlRunnable func(context.Context) error

func (f ctrlRunnable) Start(ctx context.Context) error { return f(ctx) }

// clusterIndex indexes CSRs by the cluster their ClusterNameLabel names.
const clusterIndex = "registration.csr.cluster"

// pendingRequests are the pending registration and add-on CSRs that sel (none: all) lists.
func (r *Reconciler) pendingRequests(ctx context.Context, sel ...client.ListOption) []reconcile.Request {
	list := &certificatesv1.CertificateSigningRequestList{}
	opts := append([]client.ListOption{client.HasLabels{ClusterNameLabel}}, sel...)
	if err := r.Client.List(ctx, list, opts...); err != nil {
		log.FromContext(ctx).Error(err, "listing registration CSRs to re-evaluate")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if c := &list.Items[i]; IsReviewedCSR(c) && IsPending(c) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}

// Reconcile decides one CSR if it is a pending registration or add-on CSR.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := &certificatesv1.CertificateSigningRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !IsReviewedCSR(c) || !IsPending(c) {
		return reconcile.Result{}, nil
	}
	in, err := Parse(c)
	if err != nil {
		return reconcile.Result{}, r.decide(ctx, c, certificatesv1.CertificateDenied, ReasonIdentityRejected, err.Error())
	}
	if in.Addon != nil {
		return reconcile.Result{}, r.reconcileAddon(ctx, c, in)
	}
	if why := CheckIdentity(in); why != "" {
		return reconcile.Result{}, r.decide(ctx, c, certificatesv1.CertificateDenied, ReasonIdentityRejected,
			fmt.Sprintf("CertificateSigningRequest %s for cluster %s: %s", c.Name, in.ClusterName, why))
	}
	mc := &clusterv1.ManagedCluster{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: in.ClusterName}, mc); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("CertificateSigningRequest %s: reading ManagedCluster %s: %w", c.Name, in.ClusterName, err)
	default:
		in.ClusterExists = mc.DeletionTimestamp.IsZero()
		in.ClusterAccepted = in.ClusterExists && mc.Spec.HubAcceptsClient
	}

	if in.Renewal {
		// The host's rule, which no plugin can override: a renewal goes to the plugins only when
		// its requester may renew, as OCM's hub checks (soft revoke: removing the renew rule from
		// the cluster's ClusterRole stops rotation).
		allowed, err := r.authorizeRenewal(ctx, c)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !allowed {
			r.renewalNotAuthorized(ctx, c, in)
			return reconcile.Result{RequeueAfter: RenewalRecheck}, nil
		}
	}

	verdicts := r.review(ctx, c, in)
	out := Combine(verdicts)
	switch out.Decision {
	case abi.CSRDeny:
		return reconcile.Result{}, r.decide(ctx, c, certificatesv1.CertificateDenied, ReasonPluginDenied, out.describe())
	case abi.CSRApprove:
		if !in.Renewal && r.AutoAccept != nil && r.AutoAccept() {
			if !in.ClusterExists {
				// Approving now would leave nothing to accept; the ManagedCluster watch brings the CSR back.
				log.FromContext(ctx).Info("approved registration CSR waits for its ManagedCluster, which ManagedClusterAutoApproval accepts with it",
					"csr", c.Name, "cluster", in.ClusterName, "plugin", out.Plugin)
				return reconcile.Result{}, nil
			}
			// Accept before approving: if approval then fails the CSR stays pending and is retried,
			// whereas an approved CSR is never looked at again.
			if err := r.autoAccept(ctx, c, mc, out); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{}, r.decide(ctx, c, certificatesv1.CertificateApproved, ReasonPluginApproved, out.describe())
	}
	// No decision: the CSR waits for the admin, or for a plugin change.
	return reconcile.Result{}, nil
}

// authorizeRenewal asks a SubjectAccessReview whether the CSR's requester (user, UID, groups
// and extra as the API server recorded them) may renew its cluster's client certificate: verb
// renew on managedclusters/clientcertificates in register.open-cluster-management.io, OCM's
// check.
func (r *Reconciler) authorizeRenewal(ctx context.Context, c *certificatesv1.CertificateSigningRequest) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(c.Spec.Extra))
	for k, v := range c.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   c.Spec.Username,
		UID:    c.Spec.UID,
		Groups: c.Spec.Groups,
		Extra:  extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group:       rbac.RenewGroup,
			Resource:    rbac.RenewResource,
			Subresource: rbac.RenewSubresource,
			Verb:        rbac.RenewVerb,
		},
	}}
	actx, cancel := context.WithTimeout(ctx, authorizeTimeout)
	defer cancel()
	out, err := r.Kube.AuthorizationV1().SubjectAccessReviews().Create(actx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("CertificateSigningRequest %s: SubjectAccessReview of %s for renew on managedclusters/clientcertificates: %w",
			c.Name, c.Spec.Username, err)
	}
	return out.Status.Allowed, nil
}

// renewalNotAuthorized records why a renewal CSR stays pending.
func (r *Reconciler) renewalNotAuthorized(ctx context.Context, c *certificatesv1.CertificateSigningRequest, in Request) {
	msg := fmt.Sprintf("renewal CSR %s stays pending: %s may not renew the client certificate of cluster %s "+
		"(verb %s on %s/%s in %s; the %s rule of ClusterRole %s)", c.Name, c.Spec.Username, in.ClusterName,
		rbac.RenewVerb, rbac.RenewResource, rbac.RenewSubresource, rbac.RenewGroup, rbac.RenewVerb, rbac.ClusterRoleName(in.ClusterName))
	log.FromContext(ctx).V(1).Info("renewal CSR not authorized; it waits", "csr", c.Name, "cluster", in.ClusterName, "user", c.Spec.Username)
	if r.Recorder != nil {
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, ReasonRenewalNotAuthorized, "AuthorizeRenewal", "%s", msg)
	}
}

func (r *Reconciler) review(ctx context.Context, c *certificatesv1.CertificateSigningRequest, in Request) []Verdict {
	timeout := r.PluginTimeout
	if timeout <= 0 {
		timeout = DefaultPluginTimeout
	}
	var out []Verdict
	for _, p := range r.Reviewers.Reviewers() {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		v := Review(pctx, p, in)
		cancel()
		if v.Err != nil {
			log.FromContext(ctx).Error(v.Err, "CSRApproval plugin failed; it gives no decision", "plugin", v.Plugin, "csr", c.Name)
			if r.failures != nil {
				r.failures.WithLabelValues(v.Plugin).Inc()
			}
			if r.Recorder != nil {
				r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "CSRApprovalPluginFailed", "ReviewCSR",
					"CSRApproval plugin %s failed and gave no decision: %v", v.Plugin, v.Err)
			}
		}
		out = append(out, v)
	}
	return out
}

// autoAccept accepts the cluster of a first-time CSR the plugins approved, when it is a first
// join; otherwise (say the admin denied it) the CSR is approved alone.
func (r *Reconciler) autoAccept(ctx context.Context, c *certificatesv1.CertificateSigningRequest, mc *clusterv1.ManagedCluster, out Outcome) error {
	if ok, why := managedcluster.AutoAcceptable(mc); !ok {
		log.FromContext(ctx).V(1).Info("not accepting cluster automatically", "cluster", mc.Name, "csr", c.Name, "why", why)
		return nil
	}
	if err := managedcluster.AutoAccept(ctx, r.Client, mc, out.Plugin, time.Now()); err != nil {
		return fmt.Errorf("CertificateSigningRequest %s: %w", c.Name, err)
	}
	log.FromContext(ctx).Info("accepted cluster automatically", "cluster", mc.Name, "csr", c.Name, "plugin", out.Plugin)
	if r.Recorder != nil {
		r.Recorder.Eventf(mc, c, corev1.EventTypeNormal, ReasonAutoAccepted, "AcceptCluster",
			"ManagedClusterAutoApproval: accepted cluster %s because CSRApproval plugin %s approved its first registration CSR %s",
			mc.Name, out.Plugin, c.Name)
	}
	return nil
}

func (r *Reconciler) decide(ctx context.Context, c *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType, reason, msg string) error {
	c = c.DeepCopy()
	c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:               t,
		Status:             corev1.ConditionTrue,
		Reason:             reason,
		Message:            msg,
		LastUpdateTime:     metav1.Now(),
		LastTransitionTime: metav1.Now(),
	})
	if _, err := r.Kube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, c.Name, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("CertificateSigningRequest %s: setting %s: %w", c.Name, t, err)
	}
	log.FromContext(ctx).Info("decided registration CSR", "csr", c.Name, "decision", t, "reason", reason, "message", msg)
	return nil
}
