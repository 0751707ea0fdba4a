package satoken_test

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/core/satoken"
)

// A caller that may request tokens of one ServiceAccount acts as it, and only as it.
func TestConfigActsAsTheServiceAccount(t *testing.T) {
	fleet := fleettest.StartT(t, environment.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(fleet.Hub.Config)
	const ns = "default"
	sa := func(name string) {
		t.Helper()
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sa("robot")
	sa("other")
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "robot-tokens"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{"robot"}, Verbs: []string{"create"}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "robot-tokens"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "robot-tokens"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "caller"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	caller, err := fleet.Hub.UserConfig("caller")
	if err != nil {
		t.Fatal(err)
	}
	whoami := func(kube kubernetes.Interface) (string, error) {
		r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return r.Status.UserInfo.Username, nil
	}
	// The role binding takes effect within moments.
	var cfg *rest.Config
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		cfg, err = satoken.Config(ctx, caller, ns, "robot", satoken.Options{UserAgent: "satoken-test"})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("acting as default/robot: %v", err)
	}
	if cfg.CertData != nil || cfg.KeyData != nil || cfg.UserAgent != "satoken-test" {
		t.Errorf("config keeps the caller's client certificate (%v) or lacks the user agent %q", cfg.CertData != nil, cfg.UserAgent)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	if user, err := whoami(kube); err != nil || user != "system:serviceaccount:default:robot" {
		t.Fatalf("acting as %q (%v), want system:serviceaccount:default:robot", user, err)
	}

	// Another ServiceAccount: refused up front, naming it.
	_, err = satoken.Config(ctx, caller, ns, "other", satoken.Options{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ServiceAccount default/other") {
		t.Errorf("acting as default/other: %v, want Forbidden naming the ServiceAccount", err)
	}
	if _, err := satoken.Config(ctx, caller, ns, "robot", satoken.Options{Lifetime: time.Minute}); err == nil || !strings.Contains(err.Error(), "minimum") {
		t.Errorf("a one-minute lifetime: %v, want an error naming the API server's minimum", err)
	}

	// The ServiceAccount made again invalidates its tokens: once the API server's
	// authentication cache lets go of the old one, a request gets a 401, and the next one a new
	// token.
	if err := admin.CoreV1().ServiceAccounts(ns).Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sa("robot")
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := whoami(kube)
		return apierrors.IsUnauthorized(err), nil
	})
	if err != nil {
		t.Fatalf("the old token was never refused: %v", err)
	}
	if user, err := whoami(kube); err != nil || user != "system:serviceaccount:default:robot" {
		t.Errorf("after a 401 the config acts as %q (%v), want a new token of default/robot", user, err)
	}
}
