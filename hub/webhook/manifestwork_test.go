package webhook_test

import (
	"fmt"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/hub/webhook/manifestwork"
)

const invalidWork = `
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: invalid
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
        name: settings
        namespace: app
      data:
        a: b
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        namespace: app
      data:
        c: d
`

const validWork = `
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: valid
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
        name: settings
        namespace: app
      data:
        a: b
`

// oversizedWork has one ConfigMap of about 520 KB.
func oversizedWork() string {
	return fmt.Sprintf(`
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: oversized
  namespace: cluster1
spec:
  workload:
    manifests:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: big
        namespace: app
      data:
        blob: %s
`, strings.Repeat("x", 520*1024))
}

// deniedBy is how the API server quotes the ManifestWork webhook.
const deniedBy = `admission webhook "` + manifestwork.Name + `" denied the request: `

var _ = Describe("ManifestWork admission", Ordered, func() {
	var srv *running

	BeforeAll(func(ctx SpecContext) {
		srv = start(webhook.Options{}, manifestwork.New(manifestwork.Options{}))
		cleanup(srv)
	})

	It("rejects a manifest without a name, naming its index and field", func(ctx SpecContext) {
		_, err := createYAML(ctx, invalidWork, false)
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(Equal(deniedBy +
			`ManifestWork.work.open-cluster-management.io "invalid" is invalid: spec.workload.manifests[2].metadata.name: Required value`))
		causes := err.(apierrors.APIStatus).Status().Details.Causes
		Expect(causes).To(ConsistOf(HaveField("Field", "spec.workload.manifests[2].metadata.name")))
	})

	It("rejects generateName in a manifest, as OCM does", func(ctx SpecContext) {
		doc := strings.Replace(validWork, "        name: settings\n", "        generateName: settings-\n", 1)
		Expect(doc).NotTo(Equal(validWork))
		_, err := createYAML(ctx, doc, false)
		Expect(err).To(MatchError(deniedBy + `ManifestWork.work.open-cluster-management.io "valid" is invalid: [` +
			`spec.workload.manifests[1].metadata.name: Required value, ` +
			`spec.workload.manifests[1].metadata.generateName: Forbidden: generateName must not be set in manifest]`))
	})

	It("rejects a workload over 500 KiB, naming its size and the limit", func(ctx SpecContext) {
		_, err := createYAML(ctx, oversizedWork(), false)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err).To(MatchError(MatchRegexp(`^` + regexp.QuoteMeta(deniedBy) +
			`ManifestWork.work.open-cluster-management.io "oversized" is invalid: spec.workload.manifests: Too long: ` +
			`the size of manifests is 5\d{5} bytes which exceeds the 512000 limit$`)))
	})

	It("accepts a valid ManifestWork", func(ctx SpecContext) {
		created, err := createYAML(ctx, validWork, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(created.GetName()).To(Equal("valid"))
	})

	It("rejects a spec update that breaks a manifest", func(ctx SpecContext) {
		patch := `{"spec":{"workload":{"manifests":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"app"}},{"apiVersion":"v1","kind":"Secret","metadata":{"generateName":"s-"}}]}}}`
		_, err := dyn.Resource(works).Namespace(workNamespace).Patch(ctx, "valid", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).To(MatchError(And(
			ContainSubstring("spec.workload.manifests[1].metadata.name: Required value"),
			ContainSubstring("spec.workload.manifests[1].metadata.generateName: Forbidden: generateName must not be set in manifest"))))
	})

	Context("when the server is gone", func() {
		It("fails closed for spec writes only, and a new server takes over", func(ctx SpecContext) {
			srv.stop()
			_, err := createYAML(ctx, strings.Replace(validWork, "name: valid", "name: while-down", 1), false)
			Expect(err).To(MatchError(And(ContainSubstring(`failed calling webhook "`+manifestwork.Name+`"`), ContainSubstring("connection refused"))))

			By("metadata-only updates, status updates and deletes do not call the webhook")
			label := `{"metadata":{"labels":{"app":"demo"},"finalizers":["test.flotilla.dev/keep"]}}`
			_, err = dyn.Resource(works).Namespace(workNamespace).Patch(ctx, "valid", types.MergePatchType, []byte(label), metav1.PatchOptions{})
			Expect(err).NotTo(HaveOccurred())
			status := `{"status":{"conditions":[{"type":"Applied","status":"True","reason":"Test","message":"","lastTransitionTime":"2025-01-01T00:00:00Z"}]}}`
			_, err = dyn.Resource(works).Namespace(workNamespace).Patch(ctx, "valid", types.MergePatchType, []byte(status), metav1.PatchOptions{}, "status")
			Expect(err).NotTo(HaveOccurred())
			Expect(dyn.Resource(works).Namespace(workNamespace).Delete(ctx, "valid", metav1.DeleteOptions{})).To(Succeed())
			// Removing the finalizer of a work being deleted, as the agent does.
			_, err = dyn.Resource(works).Namespace(workNamespace).Patch(ctx, "valid", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			Expect(err).NotTo(HaveOccurred())

			By("a new server re-applies the configuration with its own address")
			next := start(webhook.Options{}, manifestwork.New(manifestwork.Options{}))
			cleanup(next)
			Expect(next.Addr().String()).NotTo(Equal(srv.Addr().String()))
			_, err = createYAML(ctx, strings.Replace(validWork, "name: valid", "name: after-restart", 1), false)
			Expect(err).NotTo(HaveOccurred())
			_, err = createYAML(ctx, invalidWork, false)
			Expect(err).To(MatchError(ContainSubstring("spec.workload.manifests[2].metadata.name: Required value")))
		})
	})
})

// jqWork is a ManifestWork named name whose Deployment ignores the fields exprs select.
func jqWork(name string, exprs ...string) string {
	quoted := make([]string, len(exprs))
	for i, e := range exprs {
		quoted[i] = fmt.Sprintf("%q", e)
	}
	return fmt.Sprintf(`
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: %s
  namespace: cluster1
spec:
  workload:
    manifests:
    - apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: web
        namespace: app
  manifestConfigs:
  - resourceIdentifier: {group: apps, resource: deployments, namespace: app, name: web}
    updateStrategy:
      type: ServerSideApply
      serverSideApply:
        ignoreFields:
        - condition: OnSpokeChange
          jqPathExpressions: [%s]
`, name, strings.Join(quoted, ", "))
}

var _ = Describe("ManifestWork admission of ignoreFields jqPathExpressions", func() {
	BeforeEach(func() {
		cleanup(start(webhook.Options{}, manifestwork.New(manifestwork.Options{})))
	})

	It("rejects a jq expression that could run without end, naming the config, the entry and the expression", func(ctx SpecContext) {
		_, err := createYAML(ctx, jqWork("jq-unbounded", `.spec.replicas`, `repeat(.)`), false)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err).To(MatchError(deniedBy + `ManifestWork.work.open-cluster-management.io "jq-unbounded" is invalid: ` +
			`spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[0].jqPathExpressions[1]: ` +
			`Invalid value: "repeat(.)": repeat(.) is not allowed: it can generate values without end`))
		causes := err.(apierrors.APIStatus).Status().Details.Causes
		Expect(causes).To(ConsistOf(HaveField("Field", "spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[0].jqPathExpressions[1]")))
	})

	It("rejects jq expressions that do not parse or do not select fields", func(ctx SpecContext) {
		_, err := createYAML(ctx, jqWork("jq-invalid", `.spec | | .`, `.spec.replicas | tostring`, `def f: f; f`), false)
		Expect(err).To(MatchError(And(
			ContainSubstring(`jqPathExpressions[0]: Invalid value: ".spec | | .": does not parse: unexpected token "|"`),
			ContainSubstring(`jqPathExpressions[1]: Invalid value: ".spec.replicas | tostring": tostring does not select fields of the object`),
			ContainSubstring(`jqPathExpressions[2]: Invalid value: "def f: f; f": defines function f: function definitions are not allowed`))))
	})

	It("accepts path expressions, and rejects an update that adds an unbounded one", func(ctx SpecContext) {
		name := "jq-valid"
		_, err := createYAML(ctx, jqWork(name, `.spec.template.spec.containers[] | select(.name == "sidecar") | .image`,
			`.. | select(type == "string" and startswith("registry.example/"))`, `.spec.replicas`), false)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			err := dyn.Resource(works).Namespace(workNamespace).Delete(ctx, name, metav1.DeleteOptions{})
			Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "deleting ManifestWork %s: %v", name, err)
		})
		patch := `{"spec":{"manifestConfigs":[{"resourceIdentifier":{"group":"apps","resource":"deployments","namespace":"app","name":"web"},` +
			`"updateStrategy":{"type":"ServerSideApply","serverSideApply":{"ignoreFields":[{"condition":"OnSpokePresent","jqPathExpressions":["while(true; .)"]}]}}}]}}`
		_, err = dyn.Resource(works).Namespace(workNamespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).To(MatchError(ContainSubstring(`spec.manifestConfigs[0].updateStrategy.serverSideApply.ignoreFields[0].jqPathExpressions[0]: ` +
			`Invalid value: "while(true; .)": while(true; .) is not allowed: it can generate values without end`)))
	})
})
