package registration

import (
	"crypto/x509"
	"encoding/pem"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/registration/csr"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

// agentCommonName is the user name of the certificate the agent holds.
func agentCommonName(a *runningAgent) string {
	GinkgoHelper()
	block, _ := pem.Decode(agentHubConfig(a).CertData)
	Expect(block).NotTo(BeNil(), "agent %s holds no PEM certificate", a.name)
	cert, err := x509.ParseCertificate(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	return cert.Subject.CommonName
}

var _ = Describe("Soft revoke", func() {
	It("leaves a renewal CSR pending, with an Event, while the renew rule is off the cluster's ClusterRole, keeps it off when the hub applies the role again, and approves once it is back", func(ctx SpecContext) {
		const (
			name = "softrevoke1"
			ns   = "agent-softrevoke1"
		)
		m := fleet.Managed[0]
		Expect(managedClient(m.Config).Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		a := startAgent(name, m.Config, ns, 0)
		DeferCleanup(func(ctx SpecContext) {
			a.stop() // first, or the agent would register the cluster again
			Expect(client.IgnoreNotFound(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
		}, NodeTimeout(2*time.Minute))
		Eventually(func(g Gomega) {
			_, err := admin.Accept(ctx, hubClient, hubKube, []string{name})
			g.Expect(err).NotTo(HaveOccurred())
		}).Should(Succeed(), "accepting %s", name)
		Eventually(condition(name, clusterv1.ManagedClusterConditionJoined)).Should(haveStatus(metav1.ConditionTrue), "%s joined", name)
		user := agentCommonName(a)

		// As the hub admin would with kubectl edit: take the renew rule out, and add a rule the hub
		// does not grant, whose removal shows the hub applied its role again.
		roleKey := client.ObjectKey{Name: rbac.ClusterRoleName(name)}
		marker := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"soft-revoke-marker"}, Verbs: []string{"get"}}
		editRole := func(edit func(*rbacv1.ClusterRole)) {
			GinkgoHelper()
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				role := &rbacv1.ClusterRole{}
				if err := hubClient.Get(ctx, roleKey, role); err != nil {
					return err
				}
				edit(role)
				return hubClient.Update(ctx, role)
			})).To(Succeed(), "editing ClusterRole %s", roleKey.Name)
		}
		editRole(func(r *rbacv1.ClusterRole) {
			r.Rules = append(slices.DeleteFunc(r.Rules, rbac.GrantsRenew), marker)
		})
		Expect(hubClient.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/soft-revoke":"applied"}}}`)))).To(Succeed())
		rules := func(g Gomega) []rbacv1.PolicyRule {
			role := &rbacv1.ClusterRole{}
			g.Expect(hubClient.Get(ctx, roleKey, role)).To(Succeed())
			return role.Rules
		}
		Eventually(rules).WithTimeout(30*time.Second).Should(And(Not(ContainElement(marker)), Not(ContainElement(Satisfy(rbac.GrantsRenew)))),
			"the hub applying ClusterRole %s again: the marker rule gone, the renew rule still out", roleKey.Name)

		// The agent's own identity asks for a renewal; the hub leaves it to wait and says why.
		renewal := registrationCSR("softrevoke1-renewal", name, user, rbac.ClusterGroup(name))
		_, err := kubernetes.NewForConfigOrDie(agentHubConfig(a)).CertificatesV1().CertificateSigningRequests().Create(ctx, renewal, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		getRenewal := func(g Gomega) *certificatesv1.CertificateSigningRequest {
			got, err := hubKube.CertificatesV1().CertificateSigningRequests().Get(ctx, renewal.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			return got
		}
		Eventually(func(g Gomega) {
			g.Expect(getRenewal(g).Spec.Username).To(Equal(user))
			evs, err := hubKube.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + renewal.Name})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", csr.ReasonRenewalNotAuthorized),
				HaveField("Note", And(ContainSubstring(user), ContainSubstring(rbac.RenewVerb), ContainSubstring(roleKey.Name))))))
		}).WithTimeout(30*time.Second).Should(Succeed(), "a %s Event on CSR %s", csr.ReasonRenewalNotAuthorized, renewal.Name)
		// The Event is recorded after the decision not to approve: the CSR is still pending.
		Expect(csr.IsPending(getRenewal(Default))).To(BeTrue(), "CSR %s must wait while %s may not renew: %+v", renewal.Name, user, getRenewal(Default).Status)

		// The rule back: the hub notices the ClusterRole change and csr-renewal approves.
		editRole(func(r *rbacv1.ClusterRole) { r.Rules = append(r.Rules, rbac.RenewRule()) })
		Eventually(func(g Gomega) *certificatesv1.CertificateSigningRequestCondition {
			return csrCondition(*getRenewal(g), certificatesv1.CertificateApproved)
		}).WithTimeout(time.Minute).Should(And(Not(BeNil()), HaveField("Reason", csr.ReasonPluginApproved), HaveField("Message", ContainSubstring("csr-renewal"))),
			"CSR %s approved once the renew rule is back", renewal.Name)
	}, SpecTimeout(5*time.Minute))
})
