package work

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/sarcache"
)

// executorCacheTTL bounds how long, under ExecutorValidatingCaches, an answer is kept when no
// RBAC change drops it first: for what RBAC events do not show (an authorization webhook).
const executorCacheTTL = 5 * time.Minute

// notAllowedError is a manifest the work's executor may not apply: it is not applied.
type notAllowedError struct{ msg string }

func (e *notAllowedError) Error() string { return e.msg }

// executorValidator asks the managed cluster whether a work's executor may apply a manifest:
// SubjectAccessReviews for the verbs applying (and, when the work owns it, deleting) needs,
// and for RBAC objects a dry-run create as the executor, since only the API server knows
// whether a Role or binding escalates beyond the executor's own permissions.
type executorValidator struct {
	// reviews is the managed cluster's SubjectAccessReviews, or with the
	// ExecutorValidatingCaches gate a sarcache.Cache over them that RBAC changes drop.
	reviews       sarcache.Reviewer
	managedConfig *rest.Config
	// statusSync is when a manifest its executor may not apply is tried again at the latest:
	// the work's next status sync (an RBAC change retries it at once).
	statusSync time.Duration
	// watchRBAC, when set, starts the RBAC watch (Agent.watchRBAC) before the first check.
	watchRBAC func() error
}

func serviceAccountUser(sa *workv1.ManifestWorkSubjectServiceAccount) string {
	return "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
}

// validate returns a *notAllowedError when the executor may not apply required, nil when it
// may or when the work has no executor (the agent's own identity applies it).
// A ReadOnly manifest needs only get.
func (v *executorValidator) validate(ctx context.Context, executor *workv1.ManifestWorkExecutor, gvr schema.GroupVersionResource,
	required *unstructured.Unstructured, owned, readOnly bool) error {
	if executor == nil {
		return nil
	}
	sa := executor.Subject.ServiceAccount
	if executor.Subject.Type != workv1.ExecutorSubjectTypeServiceAccount || sa == nil || sa.Name == "" || sa.Namespace == "" {
		return &notAllowedError{msg: fmt.Sprintf("spec.executor.subject: only type %s with serviceAccount namespace and name is supported",
			workv1.ExecutorSubjectTypeServiceAccount)}
	}
	if v.watchRBAC != nil {
		if err := v.watchRBAC(); err != nil {
			return err
		}
	}
	user := serviceAccountUser(sa)
	verbs := []string{"get", "create", "update", "patch"}
	switch {
	case readOnly:
		verbs = verbs[:1]
	case owned:
		// Deleting the work deletes what it owns: that permission is checked up front.
		verbs = append(verbs, "delete")
	}
	var denied []string
	for _, verb := range verbs {
		attrs := authorizationv1.ResourceAttributes{Namespace: required.GetNamespace(), Name: required.GetName(),
			Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Verb: verb}
		ok, err := v.allowed(ctx, sa, attrs)
		if err != nil {
			return fmt.Errorf("checking whether %s may %s %s: %w", user, verb, describe(gvr, required), err)
		}
		if !ok {
			denied = append(denied, verb)
		}
	}
	if len(denied) > 0 {
		return &notAllowedError{msg: fmt.Sprintf("executor %s may not %s %s on the managed cluster, %s",
			user, strings.Join(denied, ", "), describe(gvr, required), v.retry())}
	}
	if gvr.Group == "rbac.authorization.k8s.io" && !readOnly {
		return v.checkEscalation(ctx, sa, gvr, required)
	}
	return nil
}

// retry says when a refused manifest is tried again.
func (v *executorValidator) retry() string {
	return fmt.Sprintf("will try again when RBAC on the managed cluster changes or at the next status sync (about every %s)", v.statusSync)
}

func describe(gvr schema.GroupVersionResource, obj *unstructured.Unstructured) string {
	res := gvr.Resource
	if gvr.Group != "" {
		res += "." + gvr.Group
	}
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", res, ns, obj.GetName())
	}
	return fmt.Sprintf("%s %s", res, obj.GetName())
}

// checkEscalation creates required as the executor in dry-run: the API server refuses a
// Role with rules the executor does not hold (without escalate) or a binding to a role it
// does not hold (without bind), naming what is missing.
func (v *executorValidator) checkEscalation(ctx context.Context, sa *workv1.ManifestWorkSubjectServiceAccount, gvr schema.GroupVersionResource, required *unstructured.Unstructured) error {
	switch gvr.Resource {
	case "roles", "clusterroles", "rolebindings", "clusterrolebindings":
	default:
		return nil
	}
	cfg := rest.CopyConfig(v.managedConfig)
	// No groups: the API server gives an impersonated ServiceAccount its own, and naming them
	// would need impersonate on groups, which the work agent (OCM's roles) has not.
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccountUser(sa)}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	obj := required.DeepCopy()
	obj.SetResourceVersion("")
	_, err = resourceClient(dyn, gvr, obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		// The escalation check comes before the existence check, so an existing object
		// means the executor could have created it.
		return nil
	case apierrors.IsForbidden(err):
		return &notAllowedError{msg: fmt.Sprintf("executor %s may not create %s on the managed cluster (permission escalation): %s, %s",
			serviceAccountUser(sa), describe(gvr, required), apiMessage(err), v.retry())}
	}
	return fmt.Errorf("dry-run create of %s as %s: %w", describe(gvr, required), serviceAccountUser(sa), err)
}

func (v *executorValidator) allowed(ctx context.Context, sa *workv1.ManifestWorkSubjectServiceAccount, attrs authorizationv1.ResourceAttributes) (bool, error) {
	got, err := v.reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               serviceAccountUser(sa),
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"},
		ResourceAttributes: &attrs,
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return got.Status.Allowed, nil
}
