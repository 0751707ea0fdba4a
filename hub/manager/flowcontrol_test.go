package manager

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// TestAgentFlowControl: a prepared hub has put the managed clusters' agents in API Priority
// and Fairness levels of their own: kube-apiserver classifies an agent's Lease request into
// the heartbeat schema, its other requests into the agents' schema, and anyone else's into
// neither (it says which schema in a response header of every request).
func TestAgentFlowControl(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	h, err := New(Options{Config: cp.Config, SkipCRDInstall: true, SkipPluginInstall: true,
		Webhook: webhook.Options{Disabled: true}, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(cp.Config)
	uid := map[string]string{}
	for _, name := range []string{rbac.HeartbeatsName, rbac.AgentsName, rbac.BootstrapName} {
		fs, err := admin.FlowcontrolV1().FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("FlowSchema %s: %v", name, err)
		}
		uid[string(fs.UID)] = name
	}

	// schemaOf makes one request as user in groups and returns the FlowSchema that classified it.
	schemaOf := func(user string, groups []string, request func(context.Context, kubernetes.Interface) error) string {
		t.Helper()
		cfg, err := cp.UserConfig(user, groups...)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var got string
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(r)
				if resp != nil {
					mu.Lock()
					got = resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID")
					mu.Unlock()
				}
				return resp, err
			})
		})
		// Forbidden or not found: classification comes before authorization.
		_ = request(ctx, kubernetes.NewForConfigOrDie(cfg))
		mu.Lock()
		defer mu.Unlock()
		if got == "" {
			t.Fatalf("%s: the response named no FlowSchema", user)
		}
		if name, ok := uid[got]; ok {
			return name
		}
		return "another schema"
	}
	agent := []string{"system:open-cluster-management:c1", clusterv1.ManagedClustersGroup}
	lease := func(ctx context.Context, k kubernetes.Interface) error {
		_, err := k.CoordinationV1().Leases("c1").Get(ctx, "managed-cluster-lease", metav1.GetOptions{})
		return err
	}
	other := func(ctx context.Context, k kubernetes.Interface) error {
		_, err := k.CoreV1().Secrets("c1").List(ctx, metav1.ListOptions{})
		return err
	}
	if got := schemaOf("system:open-cluster-management:c1:agent", agent, lease); got != rbac.HeartbeatsName {
		t.Errorf("an agent's Lease request went to %s, want %s", got, rbac.HeartbeatsName)
	}
	if got := schemaOf("system:open-cluster-management:c1:agent", agent, other); got != rbac.AgentsName {
		t.Errorf("an agent's other request went to %s, want %s", got, rbac.AgentsName)
	}
	if got := schemaOf("someone", nil, lease); got != "another schema" {
		t.Errorf("a user outside the agents' group went to %s", got)
	}
	// Joining agents: the bootstrap ServiceAccounts and the bootstrap tokens' group.
	csrs := func(ctx context.Context, k kubernetes.Interface) error {
		_, err := k.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		return err
	}
	for _, sa := range []string{rbac.BootstrapServiceAccount, rbac.LegacyBootstrapServiceAccount} {
		user := "system:serviceaccount:" + rbac.BootstrapNamespace + ":" + sa
		if got := schemaOf(user, []string{"system:serviceaccounts", "system:serviceaccounts:" + rbac.BootstrapNamespace}, csrs); got != rbac.BootstrapName {
			t.Errorf("a joining agent's request as %s went to %s, want %s", user, got, rbac.BootstrapName)
		}
	}
	if got := schemaOf("system:bootstrap:abcdef", []string{rbac.BootstrapGroup, "system:bootstrappers"}, csrs); got != rbac.BootstrapName {
		t.Errorf("a joining agent's request with a bootstrap token went to %s, want %s", got, rbac.BootstrapName)
	}
	if got := schemaOf("system:serviceaccount:apps:builder", []string{"system:serviceaccounts"}, csrs); got == rbac.BootstrapName {
		t.Errorf("another ServiceAccount's request went to %s", got)
	}

	// A hub running as an identity of its own (not system:masters) puts that identity's
	// requests in workload-high.
	const hubUser = "flotilla-hub-under-test"
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: hubUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: hubUser}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hubCfg, err := cp.UserConfig(hubUser)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := New(Options{Config: hubCfg, SkipCRDInstall: true, SkipPluginInstall: true, SkipWasmPluginController: true,
		Webhook: webhook.Options{Disabled: true}, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	fs, err := admin.FlowcontrolV1().FlowSchemas().Get(ctx, rbac.HubName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("FlowSchema %s after Prepare as %s: %v", rbac.HubName, hubUser, err)
	}
	uid[string(fs.UID)] = rbac.HubName
	if got := schemaOf(hubUser, nil, other); got != rbac.HubName {
		t.Errorf("the hub's own request went to %s, want %s", got, rbac.HubName)
	}
	if got := schemaOf("someone", nil, other); got == rbac.HubName {
		t.Errorf("another user's request went to the hub's schema %s", rbac.HubName)
	}
}

// TestHubFlowSchema: the hub's schema names a ServiceAccount as such, and none is made for an
// identity that API Priority and Fairness exempts anyway.
func TestHubFlowSchema(t *testing.T) {
	fs := rbac.HubFlowSchema("system:serviceaccount:open-cluster-management-hub:flotilla-hub", []string{"system:serviceaccounts"})
	if fs == nil || fs.Spec.PriorityLevelConfiguration.Name != "workload-high" {
		t.Fatalf("HubFlowSchema = %+v, want one in workload-high", fs)
	}
	sa := fs.Spec.Rules[0].Subjects[0].ServiceAccount
	if sa == nil || sa.Namespace != "open-cluster-management-hub" || sa.Name != "flotilla-hub" {
		t.Errorf("subject = %+v, want ServiceAccount open-cluster-management-hub/flotilla-hub", fs.Spec.Rules[0].Subjects[0])
	}
	if fs := rbac.HubFlowSchema("admin", []string{"system:masters"}); fs != nil {
		t.Errorf("HubFlowSchema for system:masters = %v, want none (exempt)", fs.Name)
	}
}
