package msa

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/satoken"
)

// ControllerName names the token controller.
const ControllerName = "managed-serviceaccount-token"

// reviewTimeout bounds one TokenReview and one ServiceAccount call on the managed cluster.
const reviewTimeout = 30 * time.Second

// TokenReconciler projects the tokens of one cluster's ManagedServiceAccounts (see the
// package comment).
type TokenReconciler struct {
	// Hub reads the ManagedServiceAccounts and token Secrets of ClusterName's namespace
	// (cached) and writes them.
	Hub client.Client
	// Managed creates ServiceAccounts, tokens and TokenReviews on the managed cluster;
	// ManagedCache holds its labelled ServiceAccounts in Namespace.
	Managed      kubernetes.Interface
	ManagedCache cache.Cache
	ClusterName  string
	// Namespace is the install namespace, where the ServiceAccounts are.
	Namespace string
	// CAData is the managed cluster's CA bundle (the Secrets' ca.crt).
	CAData    []byte
	Clock     clock.PassiveClock
	Refreshes *prometheus.CounterVec
}

// SetupWithManager watches ManagedServiceAccounts, their Secrets and the labelled
// ServiceAccounts (a ServiceAccount without its ManagedServiceAccount is deleted; one
// deleted is created again with a new token).
func (r *TokenReconciler) SetupWithManager(mgr ctrl.Manager) error {
	byName := func(_ context.Context, o client.Object) []reconcile.Request {
		if o.GetLabels()[authv1beta1.LabelKeyIsManagedServiceAccount] != "true" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: r.ClusterName, Name: o.GetName()}}}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&authv1beta1.ManagedServiceAccount{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(byName)).
		WatchesRawSource(source.Kind(r.ManagedCache, &corev1.ServiceAccount{},
			handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, sa *corev1.ServiceAccount) []reconcile.Request {
				return byName(ctx, sa)
			}))).
		Complete(apply.Quiet(r))
}

// Reconcile brings one ManagedServiceAccount's ServiceAccount, token Secret and status in line.
func (r *TokenReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	msa := &authv1beta1.ManagedServiceAccount{}
	if err := r.Hub.Get(ctx, req.NamespacedName, msa); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.deleteServiceAccount(ctx, req.Name)
		}
		return reconcile.Result{}, fmt.Errorf("reading ManagedServiceAccount %s: %w", req.NamespacedName, err)
	}
	ref := msa.Namespace + "/" + msa.Name
	if err := validate(msa); err != nil {
		// Nothing is created for it; an edit brings it back.
		return reconcile.Result{}, r.reportFailure(ctx, msa, err)
	}
	res, err := r.sync(ctx, msa)
	if err != nil {
		r.Refreshes.WithLabelValues("error").Inc()
		return reconcile.Result{}, joinReport(err, r.reportFailure(ctx, msa, err))
	}
	log.FromContext(ctx).V(1).Info("ManagedServiceAccount in line", "managedServiceAccount", ref, "requeueAfter", res.RequeueAfter)
	return res, nil
}

// sync ensures the ServiceAccount and a current token, and reports it.
func (r *TokenReconciler) sync(ctx context.Context, msa *authv1beta1.ManagedServiceAccount) (reconcile.Result, error) {
	ref := msa.Namespace + "/" + msa.Name
	sa, err := r.ensureServiceAccount(ctx, msa.Name)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedServiceAccount %s: %w", ref, err)
	}
	secret := &corev1.Secret{}
	if err := r.Hub.Get(ctx, client.ObjectKeyFromObject(msa), secret); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("ManagedServiceAccount %s: reading its token Secret: %w", ref, err)
		}
		secret = nil
	}
	now := r.Clock.Now()
	reason := refreshReason(now, msa, secret, sa)
	if reason == "" {
		valid, err := r.review(ctx, string(secret.Data[authv1beta1.SecretKeyToken]))
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("ManagedServiceAccount %s: %w", ref, err)
		}
		if !valid {
			reason = "token no longer accepted by the managed cluster (TokenReview)"
		}
	}
	if reason == "" {
		// Current: the conditions are what a success reports (an earlier failure cleared).
		last, exp := msa.Status.TokenSecretRef.LastRefreshTimestamp, *msa.Status.ExpirationTimestamp
		return reconcile.Result{RequeueAfter: RequeueAfter(now, last.Time, exp.Time)}, r.reportSuccess(ctx, msa, exp, last)
	}
	token, expiry, err := satoken.Request(ctx, r.Managed, r.Namespace, msa.Name, int64(msa.Spec.Rotation.Validity.Seconds()))
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedServiceAccount %s: %w", ref, err)
	}
	if err := r.writeSecret(ctx, msa, token); err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedServiceAccount %s: %w", ref, err)
	}
	r.Refreshes.WithLabelValues("ok").Inc()
	refreshed := metav1.NewTime(now)
	log.FromContext(ctx).Info("Token issued", "managedServiceAccount", ref, "reason", reason, "expirationTimestamp", expiry)
	if err := r.reportSuccess(ctx, msa, metav1.NewTime(expiry), refreshed); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: RequeueAfter(now, now, expiry)}, nil
}

// ensureServiceAccount returns the ServiceAccount, created (labelled) unless it exists.
func (r *TokenReconciler) ensureServiceAccount(ctx context.Context, name string) (*corev1.ServiceAccount, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	sas := r.Managed.CoreV1().ServiceAccounts(r.Namespace)
	sa, err := sas.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return sa, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading ServiceAccount %s/%s: %w", r.Namespace, name, err)
	}
	sa, err = sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name,
		Labels: map[string]string{authv1beta1.LabelKeyIsManagedServiceAccount: "true"}}}, metav1.CreateOptions{})
	if err != nil {
		// AlreadyExists included: created meanwhile, the next reconcile reads it.
		return nil, fmt.Errorf("creating ServiceAccount %s/%s: %w", r.Namespace, name, err)
	}
	return sa, nil
}

// deleteServiceAccount deletes ServiceAccount name if this agent made it (labelled): its
// ManagedServiceAccount is gone.
func (r *TokenReconciler) deleteServiceAccount(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	sas := r.Managed.CoreV1().ServiceAccounts(r.Namespace)
	sa, err := sas.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ServiceAccount %s/%s: %w", r.Namespace, name, err)
	}
	if sa.Labels[authv1beta1.LabelKeyIsManagedServiceAccount] != "true" {
		return nil
	}
	uid := sa.UID
	if err := sas.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ServiceAccount %s/%s of a ManagedServiceAccount no longer there: %w", r.Namespace, name, err)
	}
	log.FromContext(ctx).Info("Deleted the ServiceAccount of a ManagedServiceAccount no longer there", "serviceAccount", r.Namespace+"/"+name,
		"managedServiceAccount", r.ClusterName+"/"+name)
	return nil
}

// review asks the managed cluster whether token still authenticates.
func (r *TokenReconciler) review(ctx context.Context, token string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	tr, err := r.Managed.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("reviewing its token on the managed cluster: %w", err)
	}
	return tr.Status.Authenticated, nil
}

// writeSecret applies the hub Secret: token, the managed cluster's CA, upstream's label and
// an owner reference to the ManagedServiceAccount (no controller flag, as upstream).
func (r *TokenReconciler) writeSecret(ctx context.Context, msa *authv1beta1.ManagedServiceAccount, token string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: msa.Namespace, Name: msa.Name}}
	err := apply.Fields(ctx, r.Hub, s, FieldManager, false, map[string]any{
		"metadata": map[string]any{
			"labels": map[string]string{authv1beta1.LabelKeyIsManagedServiceAccount: "true"},
			"ownerReferences": []metav1.OwnerReference{{
				APIVersion: authv1beta1.GroupVersion.String(), Kind: "ManagedServiceAccount", Name: msa.Name, UID: msa.UID,
			}},
		},
		"type": corev1.SecretTypeOpaque,
		"data": map[string][]byte{authv1beta1.SecretKeyCA: r.CAData, authv1beta1.SecretKeyToken: []byte(token)},
	})
	if err != nil {
		return fmt.Errorf("writing token Secret %s/%s on the hub: %w", msa.Namespace, msa.Name, err)
	}
	return nil
}

// reportSuccess sets upstream's success status: SecretCreated and TokenReported True, the
// token's expiry and the Secret's reference.
func (r *TokenReconciler) reportSuccess(ctx context.Context, msa *authv1beta1.ManagedServiceAccount, expiry, refreshed metav1.Time) error {
	st := msa.Status.DeepCopy()
	now := metav1.NewTime(r.Clock.Now())
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: authv1beta1.ConditionTypeSecretCreated, Status: metav1.ConditionTrue,
		Reason: authv1beta1.ReasonSecretCreated, LastTransitionTime: now})
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: authv1beta1.ConditionTypeTokenReported, Status: metav1.ConditionTrue,
		Reason: authv1beta1.ReasonTokenReported, LastTransitionTime: now})
	st.ExpirationTimestamp = &expiry
	st.TokenSecretRef = &authv1beta1.SecretRef{Name: msa.Name, LastRefreshTimestamp: refreshed}
	return r.writeStatus(ctx, msa, st)
}

// reportFailure sets TokenReported False (TokenReportFailed) with err as message.
func (r *TokenReconciler) reportFailure(ctx context.Context, msa *authv1beta1.ManagedServiceAccount, err error) error {
	st := msa.Status.DeepCopy()
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: authv1beta1.ConditionTypeTokenReported, Status: metav1.ConditionFalse,
		Reason: authv1beta1.ReasonTokenReportFailed, Message: err.Error(), LastTransitionTime: metav1.NewTime(r.Clock.Now())})
	return r.writeStatus(ctx, msa, st)
}

// writeStatus applies st unless it is what msa has. The conditions list is atomic in the
// CRD, so the write is guarded by the resourceVersion read (a conflict: read again).
func (r *TokenReconciler) writeStatus(ctx context.Context, msa *authv1beta1.ManagedServiceAccount, st *authv1beta1.ManagedServiceAccountStatus) error {
	if statusEqual(&msa.Status, st) {
		return nil
	}
	if err := apply.Guarded(ctx, r.Hub, msa, FieldManager, true, map[string]any{"status": st}); err != nil {
		return fmt.Errorf("ManagedServiceAccount %s/%s: writing status: %w", msa.Namespace, msa.Name, err)
	}
	return nil
}

// statusEqual compares statuses at the API server's precision (timestamps in seconds).
func statusEqual(a, b *authv1beta1.ManagedServiceAccountStatus) bool {
	sec := func(t *metav1.Time) int64 {
		if t == nil {
			return -1
		}
		return t.Unix()
	}
	if sec(a.ExpirationTimestamp) != sec(b.ExpirationTimestamp) || (a.TokenSecretRef == nil) != (b.TokenSecretRef == nil) ||
		len(a.Conditions) != len(b.Conditions) {
		return false
	}
	if a.TokenSecretRef != nil && (a.TokenSecretRef.Name != b.TokenSecretRef.Name ||
		a.TokenSecretRef.LastRefreshTimestamp.Unix() != b.TokenSecretRef.LastRefreshTimestamp.Unix()) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.LastTransitionTime.Unix() != y.LastTransitionTime.Unix() {
			return false
		}
	}
	return true
}

func joinReport(err, reportErr error) error {
	if reportErr == nil {
		return err
	}
	return fmt.Errorf("%w (and reporting it: %v)", err, reportErr)
}
