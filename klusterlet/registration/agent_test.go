package registration_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// runningAgent is an agent started in-process by a test.
type runningAgent struct {
	*registration.Agent
	cancel context.CancelFunc
	done   chan error
}

func startAgent(cfg registration.Config) *runningAgent {
	GinkgoHelper()
	a, err := registration.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningAgent{Agent: a, cancel: cancel, done: make(chan error, 1)}
	go func() {
		defer GinkgoRecover()
		r.done <- a.Run(ctx)
	}()
	return r
}

func (r *runningAgent) stop() {
	GinkgoHelper()
	r.cancel()
	Eventually(r.done).Should(Receive(BeNil()))
}

func managedCluster(ctx context.Context, name string) *clusterv1.ManagedCluster {
	GinkgoHelper()
	mc := &clusterv1.ManagedCluster{}
	Expect(hubAdmin.Get(ctx, client.ObjectKey{Name: name}, mc)).To(Succeed())
	return mc
}

func hubSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	return managedKube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

// clusterCSRs lists the cluster's CSRs, optionally only those requested by user.
func clusterCSRs(ctx context.Context, cluster, user string) []certificatesv1.CertificateSigningRequest {
	GinkgoHelper()
	list, err := hubKube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		LabelSelector: clusterv1.ClusterNameLabelKey + "=" + cluster,
	})
	Expect(err).NotTo(HaveOccurred())
	var out []certificatesv1.CertificateSigningRequest
	for _, c := range list.Items {
		if user == "" || c.Spec.Username == user {
			out = append(out, c)
		}
	}
	return out
}

func parseCert(data []byte) *x509.Certificate {
	GinkgoHelper()
	block, _ := pem.Decode(data)
	Expect(block).NotTo(BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	return cert
}

func claimNames(mc *clusterv1.ManagedCluster) []string {
	var out []string
	for _, c := range mc.Status.ClusterClaims {
		out = append(out, c.Name+"="+c.Value)
	}
	return out
}

func customClaims(ctx context.Context, cluster string) func() []string {
	return func() []string {
		var out []string
		for _, c := range claimNames(managedCluster(ctx, cluster)) {
			name, _, _ := strings.Cut(c, "=")
			if !clusterv1alpha1.IsReservedClusterClaimName(name) {
				out = append(out, c)
			}
		}
		return out
	}
}

func createClaim(ctx context.Context, name, value string, labels map[string]string) {
	GinkgoHelper()
	Expect(managedAdmin.Create(ctx, &clusterv1alpha1.ClusterClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       clusterv1alpha1.ClusterClaimSpec{Value: value},
	})).To(Succeed())
}

func deleteClaim(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(managedAdmin.Delete(ctx, &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
}

// createNode adds a node object (the test control planes run no kubelets).
func createNode(ctx context.Context, name, cpu, memory string) {
	GinkgoHelper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(managedAdmin.Create(ctx, node)).To(Succeed())
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node.Status.Capacity = rl
	node.Status.Allocatable = rl
	Expect(managedAdmin.Status().Update(ctx, node)).To(Succeed())
}

func capacityOf(ctx context.Context, cluster string, r clusterv1.ResourceName) func() string {
	return func() string {
		q := managedCluster(ctx, cluster).Status.Capacity[r]
		return q.String()
	}
}

func conditionStatus(ctx context.Context, cluster, typ string) func() metav1.ConditionStatus {
	return func() metav1.ConditionStatus {
		c := meta.FindStatusCondition(managedCluster(ctx, cluster).Status.Conditions, typ)
		if c == nil {
			return ""
		}
		return c.Status
	}
}

func leaseRenewTime(ctx context.Context, cluster string) func() time.Time {
	return func() time.Time {
		l := &coordinationv1.Lease{}
		if err := hubAdmin.Get(ctx, client.ObjectKey{Namespace: cluster, Name: registration.LeaseName}, l); err != nil || l.Spec.RenewTime == nil {
			return time.Time{}
		}
		return l.Spec.RenewTime.Time
	}
}

// renewalGaps watches the cluster's Lease on the hub until it has seen n renewals after the
// call, and returns the n-1 gaps between their renew times.
func renewalGaps(ctx context.Context, cluster string, n int) []time.Duration {
	GinkgoHelper()
	leases := hubKube.CoordinationV1().Leases(cluster)
	cur, err := leases.Get(ctx, registration.LeaseName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	wctx, cancel := context.WithTimeout(ctx, time.Duration(n+2)*10*time.Second)
	defer cancel()
	w, err := leases.Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=" + registration.LeaseName, ResourceVersion: cur.ResourceVersion})
	Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	last := cur.Spec.RenewTime.Time
	var renewals []time.Time
	for len(renewals) < n {
		select {
		case <-wctx.Done():
			Fail(fmt.Sprintf("saw %d of %d lease renewals: %v", len(renewals), n, wctx.Err()))
		case ev, ok := <-w.ResultChan():
			Expect(ok).To(BeTrue(), "lease watch closed after %d renewals", len(renewals))
			l, isLease := ev.Object.(*coordinationv1.Lease)
			if !isLease || l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(last) {
				continue
			}
			last = l.Spec.RenewTime.Time
			renewals = append(renewals, last)
		}
	}
	gaps := make([]time.Duration, 0, n-1)
	for i := 1; i < n; i++ {
		gaps = append(gaps, renewals[i].Sub(renewals[i-1]))
	}
	return gaps
}

func closedPort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	port := l.Addr().(*net.TCPAddr).Port
	Expect(l.Close()).To(Succeed())
	return port
}

var _ = Describe("Registration agent", Ordered, func() {
	const (
		cluster   = "cluster1"
		namespace = registration.DefaultAgentNamespace
		secret    = registration.DefaultHubKubeconfigSecret
	)
	var (
		cfg       registration.Config
		agent     *runningAgent
		agentName string
	)

	BeforeAll(func(ctx SpecContext) {
		cfg = registration.Config{
			ClusterName:            cluster,
			ManagedConfig:          fleet.Managed[0].Config,
			LeaseDurationSeconds:   3,
			MaxCustomClusterClaims: 5,
			// Long enough that every status change below must come from a watch.
			StatusSyncPeriod: 10 * time.Minute,
			RetryInitial:     100 * time.Millisecond,
			RetryMax:         2 * time.Second,
			Logger:           GinkgoLogr,
		}
		createNode(ctx, "node-a", "2", "4Gi")
		createNode(ctx, "node-b", "1500m", "2Gi")
		DeferCleanup(func() {
			if agent != nil {
				agent.stop()
			}
		})
	})

	It("keeps retrying while the hub is unreachable and resumes by itself", func(ctx SpecContext) {
		Expect(managedAdmin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
		bad, err := clientcmd.Load(bootstrapData)
		Expect(err).NotTo(HaveOccurred())
		for _, c := range bad.Clusters {
			c.Server = fmt.Sprintf("https://127.0.0.1:%d", closedPort())
		}
		badData, err := clientcmd.Write(*bad)
		Expect(err).NotTo(HaveOccurred())
		bootstrapSecret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: registration.DefaultBootstrapKubeconfigSecret},
			Data:       map[string][]byte{"kubeconfig": badData},
		}
		Expect(managedAdmin.Create(ctx, bootstrapSecret)).To(Succeed())

		agent = startAgent(cfg)
		Eventually(func() string { return agent.State().LastError }).Should(And(
			ContainSubstring("ManagedCluster "+cluster), ContainSubstring("connection refused")))
		Expect(agent.State().Phase).To(Equal(registration.PhaseBootstrapping))
		Expect(agent.done).NotTo(Receive(), "the agent must not exit while the hub is unreachable")
		Expect(hubAdmin.Get(ctx, client.ObjectKey{Name: cluster}, &clusterv1.ManagedCluster{})).NotTo(Succeed())

		bootstrapSecret.Data["kubeconfig"] = bootstrapData
		Expect(managedAdmin.Update(ctx, bootstrapSecret)).To(Succeed())
		Eventually(func() error {
			return hubAdmin.Get(ctx, client.ObjectKey{Name: cluster}, &clusterv1.ManagedCluster{})
		}).Should(Succeed())
	})

	It("creates an unaccepted ManagedCluster and a CSR as OCM does, keeping the key on the managed cluster", func(ctx SpecContext) {
		mc := managedCluster(ctx, cluster)
		Expect(mc.Spec.HubAcceptsClient).To(BeFalse())
		Expect(mc.Spec.LeaseDurationSeconds).To(Equal(int32(3)))
		Expect(mc.Spec.ManagedClusterClientConfigs).To(HaveLen(1))
		Expect(mc.Spec.ManagedClusterClientConfigs[0].URL).To(Equal(fleet.Managed[0].URL))
		Expect(mc.Spec.ManagedClusterClientConfigs[0].CABundle).To(Equal(fleet.Managed[0].CAData))

		Eventually(func() []certificatesv1.CertificateSigningRequest { return clusterCSRs(ctx, cluster, "") }).Should(HaveLen(1))
		csr := clusterCSRs(ctx, cluster, "")[0]
		Expect(csr.Name).To(HavePrefix(cluster + "-"))
		Expect(csr.Spec.SignerName).To(Equal(certificatesv1.KubeAPIServerClientSignerName))
		Expect(csr.Spec.Usages).To(ConsistOf(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth))
		Expect(csr.Spec.Username).To(Equal(bootstrapUser))

		block, _ := pem.Decode(csr.Spec.Request)
		Expect(block).NotTo(BeNil())
		req, err := x509.ParseCertificateRequest(block.Bytes)
		Expect(err).NotTo(HaveOccurred())
		agentName = agent.State().AgentName
		Expect(agentName).NotTo(BeEmpty())
		Expect(req.Subject.CommonName).To(Equal("system:open-cluster-management:" + cluster + ":" + agentName))
		Expect(req.Subject.Organization).To(ConsistOf("system:open-cluster-management:"+cluster, "system:open-cluster-management:managed-clusters"))

		// The pending key lives in the secret on the managed cluster and the
		// CSR's name is derived from it.
		s, err := hubSecret(ctx, namespace, secret)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(s.Data[registration.AgentNameKey])).To(Equal(agentName))
		Expect(string(s.Data[registration.ClusterNameKey])).To(Equal(cluster))
		Expect(s.Data).NotTo(HaveKey(registration.TLSCertKey))
		id := registration.Identity{ClusterName: cluster, AgentName: agentName}
		pending, err := registration.NewCertificateRequest(id, s.Data[registration.PendingKeyKey])
		Expect(err).NotTo(HaveOccurred())
		Expect(pending.Name).To(Equal(csr.Name))
		Expect(agent.State().Phase).To(Equal(registration.PhaseWaitingForCertificate))
	})

	It("stores the signed credentials, joins once accepted and reports its status", func(ctx SpecContext) {
		csr := clusterCSRs(ctx, cluster, bootstrapUser)[0]
		approveCSR(ctx, csr.Name)

		var s *corev1.Secret
		Eventually(func(g Gomega) {
			var err error
			s, err = hubSecret(ctx, namespace, secret)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Data).To(HaveKey(registration.TLSCertKey))
		}).Should(Succeed())
		Expect(s.Data).To(HaveKey(registration.KubeconfigKey))
		Expect(s.Data).NotTo(HaveKey(registration.PendingKeyKey))
		Expect(string(s.Data[registration.ClusterNameKey])).To(Equal(cluster))
		Expect(string(s.Data[registration.AgentNameKey])).To(Equal(agentName))
		_, err := tls.X509KeyPair(s.Data[registration.TLSCertKey], s.Data[registration.TLSKeyKey])
		Expect(err).NotTo(HaveOccurred())
		cert := parseCert(s.Data[registration.TLSCertKey])
		Expect(cert.Subject.CommonName).To(Equal("system:open-cluster-management:" + cluster + ":" + agentName))
		Eventually(func() registration.Phase { return agent.State().Phase }).Should(Equal(registration.PhaseConnected))

		acceptCluster(ctx, cluster)
		Eventually(conditionStatus(ctx, cluster, clusterv1.ManagedClusterConditionJoined)).Should(Equal(metav1.ConditionTrue))
		Eventually(conditionStatus(ctx, cluster, clusterv1.ManagedClusterConditionAvailable)).Should(Equal(metav1.ConditionTrue))
		mc := managedCluster(ctx, cluster)
		joined := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined)
		Expect(joined.Reason).To(Equal(clusterv1.ConditionReasonManagedClusterJoined))
		available := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
		Expect(available.Reason).To(Equal(clusterv1.ConditionReasonManagedClusterAvailable))

		version, err := managedKube.Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(mc.Status.Version.Kubernetes).To(Equal(version.GitVersion))
		Expect(capacityOf(ctx, cluster, clusterv1.ResourceCPU)()).To(Equal("3500m"))
		Expect(capacityOf(ctx, cluster, clusterv1.ResourceMemory)()).To(Equal("6Gi"))
		alloc := mc.Status.Allocatable[clusterv1.ResourceName("pods")]
		Expect(alloc.String()).To(Equal("220"))

		kubeSystem, err := managedKube.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(claimNames(mc)).To(Equal([]string{
			clusterv1alpha1.ClusterClaimID + "=" + string(kubeSystem.UID),
			clusterv1alpha1.ClusterClaimKubeVersion + "=" + version.GitVersion,
		}))

		// The stored kubeconfig is a working, self-contained hub identity.
		hubCfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[registration.KubeconfigKey])
		Expect(err).NotTo(HaveOccurred())
		asAgent, err := client.New(hubCfg, client.Options{Scheme: hubAdmin.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(asAgent.Get(ctx, client.ObjectKey{Name: cluster}, &clusterv1.ManagedCluster{})).To(Succeed())
	})

	It("reports ClusterClaims promptly, without spoke-only ones, up to the custom limit", func(ctx SpecContext) {
		createClaim(ctx, "region.example.com", "eu-west", nil)
		createClaim(ctx, "a.example.com", "1", nil)
		createClaim(ctx, "b.example.com", "2", nil)
		createClaim(ctx, "local.example.com", "secret", map[string]string{clusterv1alpha1.ClusterClaimSpokeOnlyLabel: ""})
		Eventually(customClaims(ctx, cluster)).Should(Equal([]string{"a.example.com=1", "b.example.com=2", "region.example.com=eu-west"}))

		claim := &clusterv1alpha1.ClusterClaim{}
		Expect(managedAdmin.Get(ctx, client.ObjectKey{Name: "b.example.com"}, claim)).To(Succeed())
		claim.Spec.Value = "two"
		Expect(managedAdmin.Update(ctx, claim)).To(Succeed())
		Eventually(customClaims(ctx, cluster)).Should(ContainElement("b.example.com=two"))

		deleteClaim(ctx, "a.example.com")
		Eventually(customClaims(ctx, cluster)).Should(Equal([]string{"b.example.com=two", "region.example.com=eu-west"}))

		// Reserved claims set on the cluster win over derived values.
		createClaim(ctx, clusterv1alpha1.ClusterClaimID, "my-cluster-id", nil)
		Eventually(func() []string { return claimNames(managedCluster(ctx, cluster)) }).Should(ContainElement(clusterv1alpha1.ClusterClaimID + "=my-cluster-id"))

		// 7 custom claims with a limit of 5: the first 5 by name are reported.
		for _, n := range []string{"c", "d", "e", "f", "g"} {
			createClaim(ctx, n+".example.com", n, nil)
		}
		Eventually(customClaims(ctx, cluster)).Should(Equal([]string{
			"b.example.com=two", "c.example.com=c", "d.example.com=d", "e.example.com=e", "f.example.com=f",
		}))
		Eventually(func(g Gomega) {
			events, err := hubKube.EventsV1().Events(cluster).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			var notes []string
			for _, e := range events.Items {
				if e.Reason == registration.ReasonCustomClusterClaimsTruncated {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ContainElement(ContainSubstring("2 are not reported")))
		}).Should(Succeed())

		for _, n := range []string{"b", "c", "d", "e", "f", "g", "region", "local"} {
			deleteClaim(ctx, n+".example.com")
		}
		deleteClaim(ctx, clusterv1alpha1.ClusterClaimID)
		Eventually(customClaims(ctx, cluster)).Should(BeEmpty())
	})

	It("reports node capacity changes promptly", func(ctx SpecContext) {
		createNode(ctx, "node-c", "4", "8Gi")
		Eventually(capacityOf(ctx, cluster, clusterv1.ResourceCPU)).Should(Equal("7500m"))
		Eventually(capacityOf(ctx, cluster, clusterv1.ResourceMemory)).Should(Equal("14Gi"))
		Expect(managedAdmin.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}})).To(Succeed())
		Eventually(capacityOf(ctx, cluster, clusterv1.ResourceCPU)).Should(Equal("3500m"))
	})

	It("writes the status only when something changed", func(ctx SpecContext) {
		// A spoke-only claim wakes the sync but is not reported. Retried as a whole: a
		// certificate rotation in between legitimately changes the status (its
		// ClusterCertificateRotated condition).
		const claim = "local-only.example.com"
		spokeOnly := map[string]string{clusterv1alpha1.ClusterClaimSpokeOnlyLabel: ""}
		DeferCleanup(deleteClaim, claim)
		Eventually(func(g Gomega) {
			deleteClaim(ctx, claim)
			before := agent.State()
			rv := managedCluster(ctx, cluster).ResourceVersion
			createClaim(ctx, claim, fmt.Sprint(before.StatusSyncs), spokeOnly)
			// The claim event causes a sync that finds nothing to report.
			g.Eventually(func() int { return agent.State().StatusSyncs }).Should(BeNumerically(">", before.StatusSyncs))
			after := agent.State()
			g.Expect(after.StatusUpdates).To(Equal(before.StatusUpdates))
			g.Expect(managedCluster(ctx, cluster).ResourceVersion).To(Equal(rv))
		}).Should(Succeed())
	})

	It("reads the hub for a Node change only when the node sums change", func(ctx SpecContext) {
		setCPU := func(ctx context.Context, g Gomega, name, cpu string) {
			node := &corev1.Node{}
			g.Expect(managedAdmin.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
			node.Status.Capacity[corev1.ResourceCPU] = resource.MustParse(cpu)
			node.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(cpu)
			g.Expect(managedAdmin.Status().Update(ctx, node)).To(Succeed())
		}
		DeferCleanup(func(ctx SpecContext) {
			Eventually(func(g Gomega) { setCPU(ctx, g, "node-b", "1500m") }).Should(Succeed())
			Eventually(capacityOf(ctx, cluster, clusterv1.ResourceCPU)).Should(Equal("3500m"))
		})
		// Retried as a whole: a certificate rotation in between legitimately reads the hub and
		// writes the status.
		Eventually(func(g Gomega) {
			before := agent.State()
			rv := managedCluster(ctx, cluster).ResourceVersion
			node := &corev1.Node{}
			g.Expect(managedAdmin.Get(ctx, client.ObjectKey{Name: "node-a"}, node)).To(Succeed())
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			node.Labels["touched"] = fmt.Sprint(before.StatusSyncsStarted)
			g.Expect(managedAdmin.Update(ctx, node)).To(Succeed())
			// A label adds nothing to the sums: no sync, so no hub read, probe or write.
			g.Consistently(func() int { return agent.State().StatusSyncsStarted }, 2*time.Second, 50*time.Millisecond).
				Should(Equal(before.StatusSyncsStarted), "a Node label change read the hub")
			g.Expect(managedCluster(ctx, cluster).ResourceVersion).To(Equal(rv))

			// A capacity change is reported, with exactly one status write.
			cpu, want := "2500m", "4500m"
			if capacityOf(ctx, cluster, clusterv1.ResourceCPU)() == "4500m" {
				cpu, want = "1500m", "3500m"
			}
			setCPU(ctx, g, "node-b", cpu)
			g.Eventually(capacityOf(ctx, cluster, clusterv1.ResourceCPU), 10*time.Second).Should(Equal(want))
			g.Expect(agent.State().StatusSyncsStarted).To(BeNumerically(">", before.StatusSyncsStarted))
			// Woken by the Node watch, the sync took the ManagedCluster from its own watch.
			g.Expect(agent.State().StatusHubGets).To(Equal(before.StatusHubGets), "GETs of the ManagedCluster on the hub")
			g.Consistently(func() int { return agent.State().StatusUpdates }, time.Second, 50*time.Millisecond).
				Should(Equal(before.StatusUpdates + 1))
		}).Should(Succeed())
	})

	It("renews its lease every leaseDurationSeconds and follows a change of it", func(ctx SpecContext) {
		Eventually(leaseRenewTime(ctx, cluster)).ShouldNot(BeZero())
		// Nothing touches the ManagedCluster while renewals are watched (an update of it wakes
		// the lease loop), so the spacing below is the loop's own interval.
		gaps := renewalGaps(ctx, cluster, 3)
		for _, g := range gaps {
			Expect(g).To(And(BeNumerically(">=", 3*time.Second-time.Millisecond), BeNumerically("<", 6*time.Second)),
				"renewal gaps %v with leaseDurationSeconds 3", gaps)
		}

		mc := managedCluster(ctx, cluster)
		mc.Spec.LeaseDurationSeconds = 1
		Expect(hubAdmin.Update(ctx, mc)).To(Succeed())
		// The change wakes the loop once; the renewal around it may come early. The last two gaps
		// of four renewals are spaced by the new interval alone.
		gaps = renewalGaps(ctx, cluster, 4)[1:]
		for _, g := range gaps {
			Expect(g).To(And(BeNumerically(">=", time.Second-time.Millisecond), BeNumerically("<", 3*time.Second)),
				"renewal gaps %v after leaseDurationSeconds changed to 1", gaps)
		}
	})

	It("rotates its client certificate before it expires and keeps working", func(ctx SpecContext) {
		s, err := hubSecret(ctx, namespace, secret)
		Expect(err).NotTo(HaveOccurred())
		before := parseCert(s.Data[registration.TLSCertKey])
		rotations := agent.State().Rotations

		Eventually(func() int { return agent.State().Rotations }, 4*time.Minute).Should(BeNumerically(">", rotations))
		s, err = hubSecret(ctx, namespace, secret)
		Expect(err).NotTo(HaveOccurred())
		after := parseCert(s.Data[registration.TLSCertKey])
		Expect(after.SerialNumber).NotTo(Equal(before.SerialNumber))
		Expect(after.Subject.CommonName).To(Equal(before.Subject.CommonName))
		Expect(after.NotAfter).To(BeTemporally(">", before.NotAfter))
		_, err = tls.X509KeyPair(s.Data[registration.TLSCertKey], s.Data[registration.TLSKeyKey])
		Expect(err).NotTo(HaveOccurred())

		// The renewal was requested with the agent's own identity, not the bootstrap one.
		Expect(clusterCSRs(ctx, cluster, before.Subject.CommonName)).NotTo(BeEmpty())
		Eventually(conditionStatus(ctx, cluster, registration.ConditionClusterCertificateRotated)).Should(Equal(metav1.ConditionTrue))

		// Still working with the new certificate.
		createClaim(ctx, "after-rotation.example.com", "yes", nil)
		Eventually(customClaims(ctx, cluster)).Should(ContainElement("after-rotation.example.com=yes"))
		renewed := leaseRenewTime(ctx, cluster)()
		Eventually(leaseRenewTime(ctx, cluster)).Should(BeTemporally(">", renewed))
		deleteClaim(ctx, "after-rotation.example.com")
	})

	It("keeps its agent name across restarts without bootstrapping again", func(ctx SpecContext) {
		bootstrapCSRs := len(clusterCSRs(ctx, cluster, bootstrapUser))
		agent.stop()
		agent = startAgent(cfg)
		Eventually(func() registration.Phase { return agent.State().Phase }).Should(Equal(registration.PhaseConnected))
		Expect(agent.State().AgentName).To(Equal(agentName))

		createClaim(ctx, "restarted.example.com", "yes", nil)
		Eventually(customClaims(ctx, cluster)).Should(ContainElement("restarted.example.com=yes"))
		deleteClaim(ctx, "restarted.example.com")
		Expect(clusterCSRs(ctx, cluster, bootstrapUser)).To(HaveLen(bootstrapCSRs))
	})

	It("reports refused hub access and recovers when access is restored", func(ctx SpecContext) {
		revokedAt := time.Now()
		revokeClusterRBAC(ctx, cluster)
		Eventually(func(g Gomega) {
			st := agent.State()
			g.Expect(st.LastErrorTime).To(BeTemporally(">", revokedAt))
			g.Expect(st.LastError).To(And(ContainSubstring("Lease "+cluster+"/"+registration.LeaseName), ContainSubstring("forbidden")))
		}).Should(Succeed())
		Expect(agent.done).NotTo(Receive())

		grantClusterRBAC(ctx, cluster)
		createClaim(ctx, "restored.example.com", "yes", nil)
		Eventually(customClaims(ctx, cluster)).Should(ContainElement("restored.example.com=yes"))
		deleteClaim(ctx, "restored.example.com")
	})

	It("bootstraps again when its hub kubeconfig secret is deleted, and keeps a pending key across restarts", func(ctx SpecContext) {
		bootstrapCSRs := len(clusterCSRs(ctx, cluster, bootstrapUser))
		Expect(managedKube.CoreV1().Secrets(namespace).Delete(ctx, secret, metav1.DeleteOptions{})).To(Succeed())

		var pending certificatesv1.CertificateSigningRequest
		Eventually(func(g Gomega) {
			csrs := clusterCSRs(ctx, cluster, bootstrapUser)
			g.Expect(csrs).To(HaveLen(bootstrapCSRs + 1))
			for _, c := range csrs {
				if len(c.Status.Conditions) == 0 {
					pending = c
				}
			}
			g.Expect(pending.Name).NotTo(BeEmpty())
		}).Should(Succeed())
		Eventually(func() registration.Phase { return agent.State().Phase }).Should(Equal(registration.PhaseWaitingForCertificate))
		Expect(agent.State().AgentName).To(Equal(agentName))

		// Approved while the agent is down: the restarted agent finds the
		// request again through the pending key and uses it.
		agent.stop()
		approveCSR(ctx, pending.Name)
		var signed []byte
		Eventually(func() []byte {
			c, err := hubKube.CertificatesV1().CertificateSigningRequests().Get(ctx, pending.Name, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			signed = c.Status.Certificate
			return signed
		}).ShouldNot(BeEmpty())
		agent = startAgent(cfg)
		Eventually(func() []byte {
			s, err := hubSecret(ctx, namespace, secret)
			if err != nil {
				return nil
			}
			return s.Data[registration.TLSCertKey]
		}).Should(Equal(signed))
		Expect(clusterCSRs(ctx, cluster, bootstrapUser)).To(HaveLen(bootstrapCSRs + 1))
		Expect(agent.State().AgentName).To(Equal(agentName))

		createClaim(ctx, "rebootstrapped.example.com", "yes", nil)
		Eventually(customClaims(ctx, cluster)).Should(ContainElement("rebootstrapped.example.com=yes"))
		deleteClaim(ctx, "rebootstrapped.example.com")
	})
})
