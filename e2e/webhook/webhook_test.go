package webhook

import (
	"context"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/admission"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/hub/webhook/manifestwork"
)

var works = workv1.GroupVersion.WithResource("manifestworks")

// work is a ManifestWork named name in cluster1 with a Namespace and a ConfigMap; the
// ConfigMap carries data of dataBytes bytes and, with unnamed, no name.
func work(name string, dataBytes int, unnamed bool) string {
	cmName := "        name: settings\n"
	if unnamed {
		cmName = ""
	}
	return `
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: ` + name + `
  namespace: cluster1
spec:
  workload:
    manifests:
    - apiVersion: v1
      kind: Namespace
      metadata:
        name: app
    - apiVersion: v1
      kind: ConfigMap
      metadata:
` + cmName + `        namespace: app
      data:
        blob: "` + strings.Repeat("x", dataBytes) + `"
`
}

// create creates a ManifestWork from YAML, as kubectl create -f does.
func create(ctx context.Context, doc string) error {
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
	_, err := dyn.Resource(works).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

const deniedBy = `admission webhook "` + manifestwork.Name + `" denied the request: `

var _ = Describe("The hub's ManifestWork webhook", func() {
	It("is on by default, on a free loopback port, and validates ManifestWorks", func(ctx SpecContext) {
		hub := startHub(manager.Options{WorkMaxSize: 4096})
		DeferCleanup(hub.stop)
		Expect(hub.Webhooks().Addr().String()).To(HavePrefix("127.0.0.1:"))
		cfg, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhook.DefaultConfigurationName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Webhooks).To(ContainElement(HaveField("Name", manifestwork.Name)))

		By("a manifest without a name")
		err = create(ctx, work("unnamed", 10, true))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err).To(MatchError(deniedBy + `ManifestWork.work.open-cluster-management.io "unnamed" is invalid: ` +
			`spec.workload.manifests[1].metadata.name: Required value`))

		By("a workload over WorkMaxSize")
		err = create(ctx, work("oversized", 5000, false))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err).To(MatchError(MatchRegexp(`spec.workload.manifests: Too long: the size of manifests is 51\d\d bytes which exceeds the 4096 limit$`)))

		By("a valid ManifestWork")
		Expect(create(ctx, work("valid", 10, false))).To(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("fails closed for spec writes while the hub is down, and a restarted hub takes over", func(ctx SpecContext) {
		first := startHub(manager.Options{})
		Expect(create(ctx, work("before-restart", 10, false))).To(Succeed())
		first.stop()

		By("ManifestWork creates fail while the configuration points at the stopped hub")
		err := create(ctx, work("while-down", 10, false))
		// Either of the hub's webhooks (validation, policies) may be the one the API server reports.
		Expect(err).To(MatchError(MatchRegexp(`failed calling webhook "(` + regexp.QuoteMeta(manifestwork.Name) + `|` + regexp.QuoteMeta(admission.Name) + `)"`)))

		By("the rest of the hub API is not affected, nor a ManifestWork's finalizers, status or deletion (what the work agent writes)")
		_, err = kube.CoreV1().ConfigMaps(clusterNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unaffected"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = dyn.Resource(works).Namespace(clusterNamespace).Patch(ctx, "before-restart", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":["test.flotilla.dev/keep"]}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		By("a label change is for the policies to judge, so it fails closed too")
		_, err = dyn.Resource(works).Namespace(clusterNamespace).Patch(ctx, "before-restart", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
		Expect(err).To(MatchError(ContainSubstring(`failed calling webhook "policies.admission.flotilla.dev"`)))
		_, err = dyn.Resource(works).Namespace(clusterNamespace).Patch(ctx, "before-restart", types.MergePatchType,
			[]byte(`{"status":{"conditions":[{"type":"Applied","status":"True","reason":"Test","message":"","lastTransitionTime":"2025-01-01T00:00:00Z"}]}}`),
			metav1.PatchOptions{}, "status")
		Expect(err).NotTo(HaveOccurred())
		Expect(dyn.Resource(works).Namespace(clusterNamespace).Delete(ctx, "before-restart", metav1.DeleteOptions{})).To(Succeed())
		_, err = dyn.Resource(works).Namespace(clusterNamespace).Patch(ctx, "before-restart", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("a new hub re-applies the configuration with its own port and the same CA")
		second := startHub(manager.Options{})
		DeferCleanup(second.stop)
		Expect(second.Webhooks().Addr().String()).NotTo(Equal(first.Webhooks().Addr().String()))
		Expect(create(ctx, work("after-restart", 10, false))).To(Succeed())
		Expect(create(ctx, work("unnamed", 10, true))).To(MatchError(ContainSubstring("spec.workload.manifests[1].metadata.name: Required value")))
	}, SpecTimeout(5*time.Minute))

	It("can be disabled", func(ctx SpecContext) {
		err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, webhook.DefaultConfigurationName, metav1.DeleteOptions{})
		Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		hub := startHub(manager.Options{Webhook: webhook.Options{Disabled: true}})
		DeferCleanup(hub.stop)
		Expect(hub.Webhooks()).To(BeNil())
		Consistently(func(ctx context.Context) bool {
			_, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhook.DefaultConfigurationName, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(2 * time.Second).Should(BeTrue())
		Expect(create(ctx, work("unvalidated", 10, true))).To(Succeed())
	}, SpecTimeout(5*time.Minute))
})
