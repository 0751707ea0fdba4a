package operator_test

import (
	"context"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/operator"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

const (
	clusterName    = "op-cluster"
	agentNamespace = "open-cluster-management-op"
	restartLog     = "Klusterlet settings changed; restarting the agents"
)

func readKlusterlet(ctx context.Context) *operatorv1.Klusterlet {
	GinkgoHelper()
	k := &operatorv1.Klusterlet{}
	Expect(managedClient.Get(ctx, client.ObjectKey{Name: operatorv1.KlusterletName}, k)).To(Succeed())
	return k
}

func cond(k *operatorv1.Klusterlet, typ string) metav1.Condition {
	for _, c := range k.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// setWorkGates replaces the Klusterlet's work feature gates and returns its new generation.
func setWorkGates(ctx context.Context, gates ...operatorv1.FeatureGate) int64 {
	GinkgoHelper()
	var gen int64
	Eventually(func() error {
		k := readKlusterlet(ctx)
		k.Spec.WorkConfiguration = &operatorv1.WorkAgentConfiguration{FeatureGates: gates}
		if err := managedClient.Update(ctx, k); err != nil {
			return err
		}
		gen = k.Generation
		return nil
	}).Should(Succeed())
	return gen
}

// hubConnection matches HubConnectionDegraded False with HubConnectionFunctional, for gen.
func hubConnectionFunctional(ctx context.Context, gen int64) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		k := readKlusterlet(ctx)
		g.Expect(k.Status.ObservedGeneration).To(Equal(gen))
		c := cond(k, operatorv1.ConditionHubConnectionDegraded)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
		g.Expect(c.Reason).To(Equal(operatorv1.ReasonHubConnectionFunctional))
		g.Expect(c.ObservedGeneration).To(Equal(gen))
	}).Should(Succeed())
}

var _ = Describe("RunKlusterlet", Ordered, func() {
	var done chan struct{}

	BeforeAll(NodeTimeout(specTimeout), func(ctx SpecContext) {
		Expect(managedClient.Create(ctx, &operatorv1.Klusterlet{
			ObjectMeta: metav1.ObjectMeta{Name: operatorv1.KlusterletName},
			Spec: operatorv1.KlusterletSpec{
				ClusterName:           clusterName,
				Namespace:             agentNamespace,
				HubApiServerHostAlias: &operatorv1.HubApiServerHostAlias{IP: "127.0.0.1", Hostname: aliasHost},
			},
		})).To(Succeed())
		runCtx, stop := context.WithCancel(context.Background())
		done = make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(operator.RunKlusterlet(runCtx, operator.Options{
				Klusterlet: klusterlet.Options{Registration: registration.Config{
					ManagedConfig: fleet.Managed[0].Config,
					// The flags' name and namespace, which the Klusterlet's replace.
					ClusterName: "flag-cluster", AgentNamespace: "open-cluster-management-agent",
					BootstrapKubeconfig: aliasBootstrap,
					RetryInitial:        200 * time.Millisecond, RetryMax: 2 * time.Second,
					Logger: logger.WithName("klusterlet"),
				}},
				KlusterletName: operatorv1.KlusterletName,
				MinBackoff:     100 * time.Millisecond,
				MaxBackoff:     time.Second,
			})).To(Succeed())
		}()
		DeferCleanup(func() {
			stop()
			Eventually(done).Should(BeClosed())
		})
	})

	It("registers as spec.clusterName through the host alias and reports the hub connection", SpecTimeout(specTimeout), func(ctx SpecContext) {
		Eventually(func() error {
			return hubClient.Get(ctx, client.ObjectKey{Name: clusterName}, &clusterv1.ManagedCluster{})
		}).Should(Succeed())
		Expect(apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKey{Name: "flag-cluster"}, &clusterv1.ManagedCluster{}))).To(BeTrue())

		// Not accepted yet: no signed identity.
		Eventually(func(g Gomega) {
			c := cond(readKlusterlet(ctx), operatorv1.ConditionHubConnectionDegraded)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(operatorv1.ReasonBootstrapSecretFunctional + "," + operatorv1.ReasonHubKubeConfigMissing))
		}).Should(Succeed())

		Eventually(func() error {
			_, err := admin.Accept(ctx, hubClient, hubKube, []string{clusterName})
			return err
		}).Should(Succeed())
		gen := readKlusterlet(ctx).Generation
		hubConnectionFunctional(ctx, gen)

		k := readKlusterlet(ctx)
		Expect(k.Status.Conditions).To(ContainElements(
			And(HaveField("Type", operatorv1.ConditionKlusterletApplied), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", operatorv1.ReasonKlusterletApplied)),
			And(HaveField("Type", operatorv1.ConditionKlusterletAvailable), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", operatorv1.ReasonKlusterletAvailable)),
			And(HaveField("Type", operatorv1.ConditionValidFeatureGates), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", operatorv1.ReasonFeatureGatesAllValid))))
		Expect(k.Status.RelatedResources).To(ContainElements(
			operatorv1.RelatedResourceMeta{Version: "v1", Resource: "namespaces", Name: agentNamespace},
			operatorv1.RelatedResourceMeta{Version: "v1", Resource: "secrets", Namespace: agentNamespace, Name: registration.DefaultHubKubeconfigSecret},
			operatorv1.RelatedResourceMeta{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Name: "klusterlets.operator.open-cluster-management.io"}))

		// The signed identity reaches the hub at the alias too: its kubeconfig names the host.
		sec := &corev1.Secret{}
		Expect(managedClient.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: registration.DefaultHubKubeconfigSecret}, sec)).To(Succeed())
		kc, err := clientcmd.Load(sec.Data[registration.KubeconfigKey])
		Expect(err).NotTo(HaveOccurred())
		for _, c := range kc.Clusters {
			Expect(c.Server).To(Equal("https://" + net.JoinHostPort(aliasHost, hubPort)))
		}
		// The work agent runs with it: the cluster joins.
		Eventually(func(g Gomega) {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: clusterName}, mc)).To(Succeed())
			g.Expect(mc.Status.Conditions).To(ContainElement(And(HaveField("Type", clusterv1.ManagedClusterConditionJoined), HaveField("Status", metav1.ConditionTrue))))
		}).Should(Succeed())
		Expect(logs.Count(restartLog)).To(Equal(0))
	})

	It("restarts the agents when a work feature gate changes", SpecTimeout(specTimeout), func(ctx SpecContext) {
		gen := setWorkGates(ctx, operatorv1.FeatureGate{Feature: "RawFeedbackJsonString", Mode: operatorv1.FeatureGateModeTypeEnable})
		Eventually(func() int { return logs.Count(restartLog) }).Should(Equal(1))
		hubConnectionFunctional(ctx, gen)
		Expect(cond(readKlusterlet(ctx), operatorv1.ConditionKlusterletApplied).Message).To(ContainSubstring("RawFeedbackJsonString=true"))
	})

	It("reports a gate it does not know and keeps running, without a restart", SpecTimeout(specTimeout), func(ctx SpecContext) {
		gen := setWorkGates(ctx, operatorv1.FeatureGate{Feature: "RawFeedbackJsonString", Mode: operatorv1.FeatureGateModeTypeEnable},
			operatorv1.FeatureGate{Feature: "NoSuchGate", Mode: operatorv1.FeatureGateModeTypeEnable})
		Eventually(func(g Gomega) {
			k := readKlusterlet(ctx)
			g.Expect(k.Status.ObservedGeneration).To(Equal(gen))
			c := cond(k, operatorv1.ConditionValidFeatureGates)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(operatorv1.ReasonInvalidFeatureGatesExisting))
			g.Expect(c.Message).To(ContainSubstring("Work: [NoSuchGate]"))
		}).Should(Succeed())
		hubConnectionFunctional(ctx, gen)
		Expect(logs.Count(restartLog)).To(Equal(1), "the settings the agents run with did not change")
		Consistently(done, "1s").ShouldNot(BeClosed())
	})
})
