package registration

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/cmd/flotilla/commands"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

// apiServerTokenCacheTTL is how long kube-apiserver keeps a successful token authentication
// (its built-in token cache; not configurable by flag). A revoked token that authenticated
// within that time is still accepted until its entry expires.
const apiServerTokenCacheTTL = 10 * time.Second

// flotillaCLI runs the CLI in-process as a user would type it, against the suite's hub.
func flotillaCLI(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	root := commands.NewRoot()
	var out, errOut strings.Builder
	root.SetArgs(append(args, "--kubeconfig", fleet.Hub.KubeconfigPath))
	root.SetOut(&out)
	root.SetErr(&errOut)
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// issueToken runs flotilla get token with extra flags and returns the token and its id.
func issueToken(ctx context.Context, extra ...string) (token, id string) {
	GinkgoHelper()
	out, errOut, err := flotillaCLI(ctx, append([]string{"get", "token"}, extra...)...)
	Expect(err).NotTo(HaveOccurred(), errOut)
	fields := strings.Fields(out)
	for i, f := range fields {
		if f == "--hub-token" && i+1 < len(fields) {
			token = fields[i+1]
		}
	}
	Expect(token).NotTo(BeEmpty(), "no --hub-token in the join command %q", out)
	errFields := strings.Fields(errOut) // "token <id> (<kind>) expires ..."
	Expect(len(errFields)).To(BeNumerically(">", 1), "no token id in %q", errOut)
	return token, errFields[1]
}

var _ = Describe("Join tokens", func() {
	DescribeTable("a token that has authenticated is refused within the API server's token cache TTL of flotilla token revoke, and from then on",
		func(ctx SpecContext, extra ...string) {
			token, id := issueToken(ctx, extra...)
			kube := kubernetes.NewForConfigOrDie(&rest.Config{Host: fleet.Hub.URL, BearerToken: token,
				TLSClientConfig: rest.TLSClientConfig{CAData: fleet.Hub.CAData}})
			whoami := func() error {
				_, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
				return err
			}
			// Used once: the API server now holds the successful authentication in its cache.
			Expect(whoami()).To(Succeed(), "token %s before revocation", id)

			out, errOut, err := flotillaCLI(ctx, "token", "revoke", id)
			Expect(err).NotTo(HaveOccurred(), errOut)
			Expect(out).To(ContainSubstring("token " + id + " revoked"))
			revoked := time.Now()
			// Not asserted, as it depends on timing: a request right after revocation usually still
			// succeeds from the cache.
			GinkgoWriter.Printf("token %s right after revocation: %v\n", id, whoami())

			Eventually(whoami).WithTimeout(apiServerTokenCacheTTL+5*time.Second).WithPolling(250*time.Millisecond).
				Should(Satisfy(apierrors.IsUnauthorized), "token %s refused (401) within the API server's %s token cache TTL of its revocation", id, apiServerTokenCacheTTL)
			GinkgoWriter.Printf("token %s refused %s after revocation\n", id, time.Since(revoked).Round(100*time.Millisecond))
			Consistently(whoami).WithTimeout(2*time.Second).WithPolling(250*time.Millisecond).
				Should(Satisfy(apierrors.IsUnauthorized), "token %s stays refused once refused", id)
		},
		Entry("a ServiceAccount token", SpecTimeout(5*time.Minute)),
		Entry("a bootstrap token", "--use-bootstrap-token", SpecTimeout(5*time.Minute)),
	)

	It("lists live tokens without deleting anything; issuing and revoking tokens delete the expired ones' Secrets", func(ctx SpecContext) {
		past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		expired := func() []client.Object {
			return []client.Object{
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: bootstrap.JoinTokenSecretPrefix + "xpired", Namespace: rbac.BootstrapNamespace,
					Labels:      map[string]string{bootstrap.JoinTokenLabel: "true", "app.kubernetes.io/managed-by": "flotilla"},
					Annotations: map[string]string{bootstrap.ExpirationAnnotation: past}}},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: bootstrap.TokenSecretPrefix + "xpired", Namespace: bootstrap.TokenSecretNamespace,
					Labels: map[string]string{"app.kubernetes.io/managed-by": "flotilla"}},
					Type: bootstrap.TokenSecretType,
					StringData: map[string]string{"token-id": "xpired", "token-secret": "0123456789abcdef", "expiration": past,
						"usage-bootstrap-authentication": "true", "auth-extra-groups": rbac.BootstrapGroup}},
			}
		}
		present := func(objs []client.Object) []string {
			var names []string
			for _, o := range objs {
				err := hubClient.Get(ctx, client.ObjectKeyFromObject(o), &corev1.Secret{})
				if err == nil {
					names = append(names, o.GetNamespace()+"/"+o.GetName())
				} else {
					Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading Secret %s: %v", o.GetName(), err)
				}
			}
			return names
		}
		objs := expired()
		for _, o := range objs {
			Expect(hubClient.Create(ctx, o)).To(Succeed())
		}
		DeferCleanup(func(ctx SpecContext) {
			for _, o := range expired() {
				Expect(client.IgnoreNotFound(hubClient.Delete(ctx, o))).To(Succeed())
			}
		}, NodeTimeout(2*time.Minute))

		list, errOut, err := flotillaCLI(ctx, "token", "list")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(list).NotTo(ContainSubstring("xpired"), "expired tokens are not listed")
		Expect(present(objs)).To(HaveLen(2), "listing tokens deletes nothing")

		_, id := issueToken(ctx)
		DeferCleanup(func(ctx SpecContext) {
			_, errOut, err := flotillaCLI(ctx, "token", "revoke", id)
			Expect(err).NotTo(HaveOccurred(), errOut)
		}, NodeTimeout(2*time.Minute))
		Expect(present(objs)).To(BeEmpty(), "issuing a token deletes the expired tokens' Secrets")
		list, errOut, err = flotillaCLI(ctx, "token", "list")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(list).To(ContainSubstring(id))

		objs = expired()
		for _, o := range objs {
			Expect(hubClient.Create(ctx, o)).To(Succeed())
		}
		other, otherID := issueToken(ctx, "--use-bootstrap-token")
		Expect(other).NotTo(BeEmpty())
		Expect(present(objs)).To(BeEmpty(), "issuing a bootstrap token deletes the expired tokens' Secrets too")
		objs = expired()
		for _, o := range objs {
			Expect(hubClient.Create(ctx, o)).To(Succeed())
		}
		_, errOut, err = flotillaCLI(ctx, "token", "revoke", otherID)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(present(objs)).To(BeEmpty(), "revoking a token deletes the expired tokens' Secrets")
	}, SpecTimeout(5*time.Minute))
})
