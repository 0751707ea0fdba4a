package registration_test

// The test plays the hub admin and the hub's registration controllers. The RBAC
// below is what the registration agent needs on the hub, in one place; it
// mirrors OCM's manifests (bootstrap ClusterRole, the per-cluster ClusterRole
// open-cluster-management:managedcluster:<cluster> and its binding, and the
// open-cluster-management:managedcluster:registration role bound in the
// cluster namespace).

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

const (
	bootstrapUser  = "flotilla-test-bootstrap"
	bootstrapGroup = "system:bootstrappers:managedcluster"
)

// bootstrapRules: create the ManagedCluster and request the first certificate (OCM's role also
// lets the bootstrap identity list and watch ManagedClusters, and get ConfigMaps for clusteradm).
var bootstrapRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get", "list", "watch"}},
	{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters"}, Verbs: []string{"get", "create", "list", "watch"}},
}

// clusterRules: the accepted agent's own ManagedCluster and certificate renewal.
func clusterRules(cluster string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get", "list", "watch"}},
		{APIGroups: []string{"register.open-cluster-management.io"}, Resources: []string{"managedclusters/clientcertificates"}, Verbs: []string{"renew"}},
		{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters"}, ResourceNames: []string{cluster}, Verbs: []string{"get", "list", "watch", "update"}},
		{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters/status"}, ResourceNames: []string{cluster}, Verbs: []string{"patch", "update"}},
	}
}

// registrationRules: the heartbeat Lease and Events in the cluster namespace.
var registrationRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update"}},
	{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
}

func roleName(cluster string) string { return "open-cluster-management:managedcluster:" + cluster }

const registrationRole = "open-cluster-management:managedcluster:registration"

func groupSubject(name string) []rbacv1.Subject {
	return []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: name}}
}

func createOrUpdate(ctx context.Context, obj client.Object) error {
	err := hubAdmin.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		existing := obj.DeepCopyObject().(client.Object)
		if err := hubAdmin.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
			return err
		}
		obj.SetResourceVersion(existing.GetResourceVersion())
		return hubAdmin.Update(ctx, obj)
	}
	return err
}

func grantBootstrapRole(ctx context.Context) error {
	name := "system:open-cluster-management:bootstrap"
	if err := createOrUpdate(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: bootstrapRules}); err != nil {
		return err
	}
	return createOrUpdate(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   groupSubject(bootstrapGroup),
	})
}

// acceptCluster does what `flotilla accept` and the hub controllers do: set
// hubAcceptsClient, create the cluster namespace and RBAC, and mark the
// cluster accepted.
func acceptCluster(ctx context.Context, cluster string) {
	GinkgoHelper()
	Eventually(func() error {
		mc := &clusterv1.ManagedCluster{}
		if err := hubAdmin.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
			return err
		}
		mc.Spec.HubAcceptsClient = true
		return hubAdmin.Update(ctx, mc)
	}).Should(Succeed())
	Expect(createOrUpdate(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}})).To(Succeed())
	grantClusterRBAC(ctx, cluster)
	setAccepted(ctx, cluster, metav1.ConditionTrue)
}

func grantClusterRBAC(ctx context.Context, cluster string) {
	GinkgoHelper()
	group := registration.ClusterGroup(cluster)
	Expect(createOrUpdate(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName(cluster)}, Rules: clusterRules(cluster)})).To(Succeed())
	Expect(createOrUpdate(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: roleName(cluster)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName(cluster)},
		Subjects:   groupSubject(group),
	})).To(Succeed())
	Expect(createOrUpdate(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: registrationRole}, Rules: registrationRules})).To(Succeed())
	Expect(createOrUpdate(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: roleName(cluster) + ":registration", Namespace: cluster},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: registrationRole},
		Subjects:   groupSubject(group),
	})).To(Succeed())
}

// revokeClusterRBAC removes the agent's hub permissions, as the hub does when
// hubAcceptsClient turns false.
func revokeClusterRBAC(ctx context.Context, cluster string) {
	GinkgoHelper()
	for _, obj := range []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: roleName(cluster)}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: roleName(cluster) + ":registration", Namespace: cluster}},
	} {
		Expect(client.IgnoreNotFound(hubAdmin.Delete(ctx, obj))).To(Succeed())
	}
}

func setAccepted(ctx context.Context, cluster string, status metav1.ConditionStatus) {
	GinkgoHelper()
	Eventually(func() error {
		mc := &clusterv1.ManagedCluster{}
		if err := hubAdmin.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
			return err
		}
		reason := clusterv1.ConditionReasonHubClusterAdminAccepted
		if status != metav1.ConditionTrue {
			reason = clusterv1.ConditionReasonHubClusterAdminDenied
		}
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{
			Type: clusterv1.ManagedClusterConditionHubAccepted, Status: status, Reason: reason, Message: "set by the test hub admin",
		})
		return hubAdmin.Status().Update(ctx, mc)
	}).Should(Succeed())
}

// approveCSR approves a CSR the way `flotilla accept` does.
func approveCSR(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(func() error {
		csr, err := hubKube.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TestHubAdmin", Message: "approved by the test",
		})
		_, err = hubKube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{})
		return err
	}).Should(Succeed())
}

// approveRenewals plays the hub's default renewal rule: approve a pending CSR
// whose requester is the very identity named in its common name, for a
// cluster the hub accepted.
func approveRenewals(ctx context.Context) {
	defer GinkgoRecover()
	for ctx.Err() == nil {
		list, err := hubKube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterv1.ClusterNameLabelKey})
		if err == nil {
			for i := range list.Items {
				csr := &list.Items[i]
				if len(csr.Status.Conditions) > 0 || !isRenewal(ctx, csr) {
					continue
				}
				csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
					Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApprovedRenewal", Message: "renewal by the same identity",
				})
				_, err := hubKube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
				if err != nil && !apierrors.IsConflict(err) && ctx.Err() == nil {
					fmt.Fprintf(GinkgoWriter, "approving renewal %s: %v\n", csr.Name, err)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func isRenewal(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) bool {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return false
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil || req.Subject.CommonName != csr.Spec.Username {
		return false
	}
	id, ok := registration.IdentityFromCommonName(req.Subject.CommonName)
	if !ok || id.ClusterName != csr.Labels[clusterv1.ClusterNameLabelKey] {
		return false
	}
	mc := &clusterv1.ManagedCluster{}
	if err := hubAdmin.Get(ctx, client.ObjectKey{Name: id.ClusterName}, mc); err != nil {
		return false
	}
	return mc.Spec.HubAcceptsClient
}
