package admission

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/policies"
)

// EmbeddedSource is the default policies built into the hub (policies/ and policies/lib/).
func EmbeddedSource() (policy.Source, error) {
	files, err := policy.FilesFromFS(policies.Defaults(), ".")
	if err != nil {
		return policy.Source{}, fmt.Errorf("embedded policies: %w", err)
	}
	return policy.Source{Name: policy.EmbeddedSourceName, Files: files}, nil
}

// Privileged says whether a requester is judged by the embedded policies only: members of
// system:masters and the hub itself (hubIdentity; "" while unknown).
func Privileged(user string, groups []string, hubIdentity string) bool {
	for _, g := range groups {
		if g == "system:masters" {
			return true
		}
	}
	return user != "" && user == hubIdentity
}

// SkipFor is the policies a requester is not judged by: none, or for a privileged one every
// policy that is not embedded.
func SkipFor(privileged bool) func(*policy.Policy) bool {
	return func(p *policy.Policy) bool { return privileged && p.Source != policy.EmbeddedSourceName }
}

// Options configure the hub's policy admission (New).
type Options struct {
	// Reviews answers flotilla.authorized: hub/manager passes a *sarcache.Cache, dropped by a
	// sarcache.RBACWatch when RBAC changes.
	Reviews policy.SubjectAccessReviewer
	// WhoAmI returns the hub's own user name (WhoAmI(kube) asks a SelfSubjectReview).
	WhoAmI func(ctx context.Context) (string, error)
	// Clusters reads ManagedClusters, for input.clusterNamespace.
	Clusters     client.Reader
	FeatureGates featuregate.FeatureGate
	// EvalTimeout defaults to DefaultEvalTimeout; Namespace (of the policy ConfigMaps) to
	// policy.DefaultNamespace.
	EvalTimeout time.Duration
	Namespace   string
	// Groups are the API groups the handler registers for (HandlerOptions.Groups).
	Groups Groups
	Logger logr.Logger
}

// New compiles the embedded policies and returns the webhook handler and the Loader that puts
// them in force with the policy ConfigMaps' (a Component; its Resync is the caller's to set).
// The handler awaits the Loader's first load (HandlerOptions.AwaitLoad).
func New(opts Options) (*Handler, *Loader, error) {
	embedded, err := EmbeddedSource()
	if err != nil {
		return nil, nil, err
	}
	authz := policy.ReviewAuthorizer{Reviews: opts.Reviews}
	// The embedded policies' tests run in go test, not at every start.
	set, err := policy.Compile(context.Background(), []policy.Source{embedded}, policy.Options{Authorizer: authz, SkipTests: true})
	if err != nil {
		return nil, nil, fmt.Errorf("embedded policies: %w", err)
	}
	var hubIdentity func(context.Context) string
	if opts.WhoAmI != nil {
		hubIdentity = HubIdentityFunc(opts.WhoAmI, opts.Logger)
	}
	h, err := NewHandler(set, HandlerOptions{
		EvalTimeout:  opts.EvalTimeout,
		FeatureGates: opts.FeatureGates,
		IsClusterNamespace: func(ctx context.Context, ns string) bool {
			return opts.Clusters != nil && opts.Clusters.Get(ctx, client.ObjectKey{Name: ns}, &clusterv1.ManagedCluster{}) == nil
		},
		HubIdentity: hubIdentity,
		AwaitLoad:   true,
		Groups:      opts.Groups,
		Logger:      opts.Logger,
	})
	if err != nil {
		return nil, nil, err
	}
	l := &Loader{Handler: h, Embedded: embedded, Namespace: opts.Namespace, Authorizer: authz, Logger: opts.Logger}
	h.current = l.current
	return h, l, nil
}

// WhoAmI asks the API server who kube authenticates as.
func WhoAmI(kube kubernetes.Interface) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		r, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return r.Status.UserInfo.Username, nil
	}
}
