package crds_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/environment"
)

// TestAPIServer runs the CRDs, installed by crds.Install as flotilla hub installs them, on
// a real kube-apiserver: defaults, validation, versions and deprecation warnings are what
// the API server makes of the generated schemas, not what a test re-implements.
func TestAPIServer(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CRDs on an API server")
}

var hubConfig *rest.Config

var _ = BeforeSuite(func(ctx SpecContext) {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "crds", AllCRDs: true, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	hubConfig = cp.Config
}, NodeTimeout(5*time.Minute))

// warnings records the warning headers of the responses to one client's requests.
type warnings struct {
	mu    sync.Mutex
	texts []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

// take returns the warnings recorded since the last take.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.texts)
	w.texts = nil
	return out
}

// apiClient is a dynamic client (the wire as kubectl sees it), a typed client with
// Flotilla's scheme (the wire as Flotilla's controllers see it) and the warnings both got.
type apiClient struct {
	dyn      dynamic.Interface
	typed    client.Client
	warnings *warnings
}

func newClient() *apiClient {
	GinkgoHelper()
	w := &warnings{}
	cfg := rest.CopyConfig(hubConfig)
	cfg.WarningHandler = w
	dyn, err := dynamic.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	s := scheme.New()
	Expect(apiextensionsv1.AddToScheme(s)).To(Succeed())
	typed, err := client.New(cfg, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	return &apiClient{dyn: dyn, typed: typed, warnings: w}
}

// resource is the client of gvr, in namespace ns if it is namespaced.
func (c *apiClient) resource(gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return c.dyn.Resource(gvr)
	}
	return c.dyn.Resource(gvr).Namespace(ns)
}

// create creates the YAML document doc with strict field validation (kubectl's default), in
// namespace ns if given, and deletes it when the spec ends.
func (c *apiClient) create(ctx context.Context, gvr schema.GroupVersionResource, ns, doc string) (*unstructured.Unstructured, error) {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
	res := c.resource(gvr, ns)
	out, err := res.Create(ctx, u, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	if err == nil {
		DeferCleanup(func(ctx SpecContext) {
			err := res.Delete(ctx, out.GetName(), metav1.DeleteOptions{})
			if !apierrors.IsNotFound(err) {
				Expect(err).NotTo(HaveOccurred(), "deleting %s %s", gvr.Resource, out.GetName())
			}
		}, NodeTimeout(time.Minute))
	}
	return out, err
}

// mustCreate is create that must succeed.
func (c *apiClient) mustCreate(ctx context.Context, gvr schema.GroupVersionResource, ns, doc string) *unstructured.Unstructured {
	GinkgoHelper()
	out, err := c.create(ctx, gvr, ns, doc)
	Expect(err).NotTo(HaveOccurred(), "creating %s:\n%s", gvr.Resource, doc)
	return out
}

// namespace creates a namespace of its own for the spec and deletes it at the end.
func namespace(ctx context.Context, name string) string {
	GinkgoHelper()
	kube, err := kubernetes.NewForConfig(hubConfig)
	Expect(err).NotTo(HaveOccurred())
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "creating namespace %s", name)
	DeferCleanup(func(ctx SpecContext) {
		Expect(kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
	}, NodeTimeout(time.Minute))
	return name
}

// field is the value at path in u.
func field(u *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	return v
}

// rejected asserts that err refuses an object and its message names every one of want.
func rejected(err error, want ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the object was accepted; want an error naming %v", want)
	Expect(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)).To(BeTrue(), "want Invalid or BadRequest, got %v", err)
	for _, s := range want {
		Expect(err.Error()).To(ContainSubstring(s))
	}
}
