package operator_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/klusterlet/join"
	kop "github.com/flotilla-dev/flotilla/klusterlet/operator"
)

// joinWith applies what `flotilla join --set ...` applies for Klusterlet name (Singleton,
// agent namespace ns) with values: the chart's render operator, the values ConfigMap included.
func joinWith(ctx SpecContext, name, ns string, values map[string]any) {
	GinkgoHelper()
	o := join.Options{HubAPIServer: "https://hub.example.com:6443", HubCA: []byte("ca"), Token: "abcdef.0123456789abcdef",
		ClusterName: name, KlusterletName: name, AgentNamespace: ns, Values: values}
	objs, err := join.RenderOperator(o, operatorv1.InstallModeSingleton, []byte("apiVersion: v1\nkind: Config\n"), nil)
	Expect(err).NotTo(HaveOccurred())
	Expect(install.Apply(ctx, managedConfig, objs)).To(Succeed())
}

func agentArgs(d *appsv1.Deployment) []string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "klusterlet" || len(d.Spec.Template.Spec.Containers) == 1 {
			return c.Args
		}
	}
	return nil
}

var _ = Describe("the values ConfigMap flotilla-klusterlet-values", func() {
	It("carries join --set flags and replicas to the agent Deployment, rolls it when changed, and reports a bad value, changing nothing", func(ctx SpecContext) {
		name, ns := "kvalues", "open-cluster-management-agent-kvalues"
		agent := client.ObjectKey{Namespace: ns, Name: name + "-agent"}
		d := &appsv1.Deployment{}

		By("join --set flags.v=4 --set replicas=2")
		joinWith(ctx, name, ns, map[string]any{"flags": map[string]any{"v": 4}, "replicas": 2})
		Eventually(func(g Gomega) {
			g.Expect(managedClient.Get(ctx, agent, d)).To(Succeed())
			g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
			g.Expect(agentArgs(d)).To(ContainElement("--v=4"))
		}).WithContext(ctx).Should(Succeed(), "Deployment %s with 2 replicas and --v=4", agent)

		By("join again with --set flags.v=2: the ConfigMap changes and the operator rolls the agent")
		joinWith(ctx, name, ns, map[string]any{"flags": map[string]any{"v": 2}, "replicas": 2})
		Eventually(func(g Gomega) {
			g.Expect(managedClient.Get(ctx, agent, d)).To(Succeed())
			g.Expect(agentArgs(d)).To(ContainElement("--v=2"))
		}).WithContext(ctx).Should(Succeed(), "Deployment %s rolled to --v=2", agent)
		generation := d.Generation

		for _, bad := range []struct{ data, says string }{
			{"replicas: [", "error converting YAML"},
			{"replicas: two", "replicas"},
		} {
			By("a bad values.yaml: " + bad.data)
			cm := &corev1.ConfigMap{}
			Expect(managedClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: kop.ValuesConfigMap}, cm)).To(Succeed())
			cm.Data[kop.ValuesKey] = bad.data
			Expect(managedClient.Update(ctx, cm)).To(Succeed())
			Eventually(func(g Gomega) {
				k := &operatorv1.Klusterlet{}
				g.Expect(managedClient.Get(ctx, client.ObjectKey{Name: name}, k)).To(Succeed())
				c := meta.FindStatusCondition(k.Status.Conditions, operatorv1.ConditionKlusterletApplied)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(c.Reason).To(Equal(operatorv1.ReasonKlusterletApplyFailed))
				g.Expect(c.Message).To(And(ContainSubstring(fmt.Sprintf("ConfigMap %s/%s", ns, kop.ValuesConfigMap)), ContainSubstring(kop.ValuesKey), ContainSubstring(bad.says)))
			}).WithContext(ctx).Should(Succeed(), "Applied False naming ConfigMap %s/%s", ns, kop.ValuesConfigMap)
			Consistently(func(g Gomega) {
				g.Expect(managedClient.Get(ctx, agent, d)).To(Succeed())
				g.Expect(d.Generation).To(Equal(generation))
			}).WithContext(ctx).WithTimeout(3*time.Second).Should(Succeed(), "Deployment %s unchanged", agent)
		}
	}, SpecTimeout(3*time.Minute))

	It("leaves a value the Klusterlet sets to the Klusterlet, saying so", func(ctx SpecContext) {
		name, ns := "kowned", "open-cluster-management-agent-kowned"
		agent := client.ObjectKey{Namespace: ns, Name: name + "-agent"}
		joinWith(ctx, name, ns, map[string]any{"nodeSelector": map[string]any{"from": "values"}, "flags": map[string]any{"v": 3}})
		k := &operatorv1.Klusterlet{}
		Expect(managedClient.Get(ctx, client.ObjectKey{Name: name}, k)).To(Succeed())
		k.Spec.NodePlacement.NodeSelector = map[string]string{"from": "klusterlet"}
		Expect(managedClient.Update(ctx, k)).To(Succeed())
		d := &appsv1.Deployment{}
		Eventually(func(g Gomega) {
			g.Expect(managedClient.Get(ctx, agent, d)).To(Succeed())
			g.Expect(d.Spec.Template.Spec.NodeSelector).To(Equal(map[string]string{"from": "klusterlet"}))
			g.Expect(agentArgs(d)).To(ContainElement("--v=3"))
			g.Expect(managedClient.Get(ctx, client.ObjectKey{Name: name}, k)).To(Succeed())
			c := meta.FindStatusCondition(k.Status.Conditions, operatorv1.ConditionKlusterletApplied)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.ObservedGeneration).To(Equal(k.Generation))
			g.Expect(c.Message).To(ContainSubstring(fmt.Sprintf("ConfigMap %s/%s: nodeSelector not used, the Klusterlet sets them", ns, kop.ValuesConfigMap)))
		}).WithContext(ctx).Should(Succeed(), "Deployment %s with the Klusterlet's nodeSelector only and Applied naming nodeSelector", agent)
	}, SpecTimeout(2*time.Minute))
})
