package registration_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/addon/registration"
	"github.com/flotilla-dev/flotilla/hub/registration/csr"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	suiteCtx context.Context
	fleet    *environment.Fleet
	hub      client.Client
	hubKube  kubernetes.Interface
	perms    = &permissionTable{m: map[string][]addonv1alpha1.HubPermissionConfig{}}
	tmpls    = &templateTable{m: map[string]*addonv1alpha1.AddOnTemplate{}}
)

// templateTable is the add-on manager's answer to Signer.Template, by add-on name: absent
// means "no AddOnTemplate".
type templateTable struct {
	mu sync.Mutex
	m  map[string]*addonv1alpha1.AddOnTemplate
}

func (t *templateTable) set(addon string, tmpl *addonv1alpha1.AddOnTemplate) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[addon] = tmpl
}

func (t *templateTable) get(_ context.Context, _, addon string) (*addonv1alpha1.AddOnTemplate, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[addon].DeepCopy(), nil
}

// permissionTable is the add-on manager's answer to Reconciler.Permissions, by add-on name:
// absent means "not a template add-on".
type permissionTable struct {
	mu sync.Mutex
	m  map[string][]addonv1alpha1.HubPermissionConfig
}

func (p *permissionTable) set(addon string, pcs ...addonv1alpha1.HubPermissionConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[addon] = pcs
}

func (p *permissionTable) unset(addon string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, addon)
}

func (p *permissionTable) get(_ context.Context, mca *addonv1alpha1.ManagedClusterAddOn) ([]addonv1alpha1.HubPermissionConfig, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pcs, ok := p.m[mca.Name]
	return pcs, ok, nil
}

func TestAddonRegistration(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Add-on registration (hub) suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	fleet = envfleettest.Start(ctx, environment.Options{ManagedClusters: 0, SigningDuration: time.Hour})
	var scheme *runtime.Scheme
	hub, scheme = envfleettest.Admin(fleet)
	hubKube = kubernetes.NewForConfigOrDie(fleet.Hub.Config)

	// The hub's CSR approval with the shipped csr-addon and csr-renewal modules.
	engine, err := wasm.NewEngine(suiteCtx, wasm.EngineOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = engine.Close(context.Background()) })
	registry := wasm.NewRegistry()
	for _, name := range []string{"csr-addon", "csr-renewal"} {
		p, err := dist.Get(name)
		Expect(err).NotTo(HaveOccurred())
		mod, err := p.Wasm()
		Expect(err).NotTo(HaveOccurred())
		m, err := engine.Load(suiteCtx, wasm.ModuleSpec{Name: name, Type: abi.TypeCSRApproval, Wasm: mod, Limits: wasm.Limits{CallTimeout: 10 * time.Second}})
		Expect(err).NotTo(HaveOccurred())
		Expect(registry.Set(suiteCtx, m)).To(Succeed())
	}

	skip := true
	logger := envfleettest.Logger()
	mgr, err := ctrl.NewManager(fleet.Hub.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}, Logger: logger,
	})
	Expect(err).NotTo(HaveOccurred())
	Expect((&registration.Reconciler{Client: mgr.GetClient(), Permissions: perms.get}).SetupWithManager(mgr)).To(Succeed())
	Expect((&registration.Signer{Client: mgr.GetClient(), Template: tmpls.get}).SetupWithManager(mgr)).To(Succeed())
	Expect((&csr.Reconciler{
		Client: mgr.GetClient(), Kube: hubKube, Reviewers: csr.RegistryReviewers{Registry: registry},
		Recorder: mgr.GetEventRecorder("flotilla-csr-approval"),
	}).SetupWithManager(mgr)).To(Succeed())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer GinkgoRecover()
		Expect(mgr.Start(suiteCtx)).To(Succeed())
	}()
	DeferCleanup(func() { cancel(); <-done })
}, NodeTimeout(5*time.Minute))
