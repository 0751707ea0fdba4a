package manager

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

func TestParseComponents(t *testing.T) {
	all, err := ParseComponents([]string{"all"})
	if err != nil || !all.Equal(sets.New(ComponentNames()...)) {
		t.Fatalf("all: got %v, %v; want every component", sets.List(all), err)
	}
	two, err := ParseComponents([]string{"placement-controller", " work-webhook"})
	if err != nil || !two.Equal(sets.New(PlacementController, WorkWebhook)) {
		t.Fatalf("two: got %v, %v", sets.List(two), err)
	}
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"placement"}, `unknown component "placement" (valid: all, registration-controller, registration-webhook, work-webhook, work-controller, placement-controller, addon-manager)`},
		{[]string{"all", "work-webhook"}, `"all" cannot be combined`},
		{[]string{"work-webhook", "work-webhook"}, `component "work-webhook" named twice`},
		{nil, "no component named"},
	} {
		if _, err := ParseComponents(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

// partsOf builds (without starting) a hub running components (none: all) with every optional
// part switched on, and returns what it set up as "component type" strings.
func partsOf(t *testing.T, cfg *rest.Config, engine *wasm.Engine, components ...string) (*Hub, []string) {
	t.Helper()
	opts := Options{
		Config: cfg, Engine: engine, Run: sets.New(components...),
		LeaderElection: LeaderElection{Enabled: true},
	}
	if opts.runs(PlacementController) {
		opts.PlacementDebugBindAddress = "127.0.0.1:0"
	}
	if opts.runs(AddonManager) {
		opts.Addons = builtin.Names()
	}
	h, err := New(opts)
	if err != nil {
		t.Fatalf("components %v: %v", components, err)
	}
	var out []string
	for _, p := range h.parts {
		out = append(out, fmt.Sprintf("%s %T", p.component, p.what))
	}
	slices.Sort(out)
	return h, out
}

// TestComponentParts pins which component each controller and webhook handler belongs to:
// every one belongs to exactly one component (the policy admission to both webhook
// components, the WasmPlugin controller to every process loading plugins), and the
// single-process hub runs the union.
func TestComponentParts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server (the manager's cache maps its kinds)")
	}
	cp, err := environment.StartControlPlane(t.Context(), environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	engine, err := wasm.NewEngine(context.Background(), wasm.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close(context.Background()) })

	const policies = RegistrationWebhook + "," + WorkWebhook
	var union []string
	owner := map[string]string{} // type → component
	for _, c := range ComponentNames() {
		h, parts := partsOf(t, cp.Config, engine, c)
		var own []string
		for _, p := range parts {
			comp, typ, _ := strings.Cut(p, " ")
			switch comp {
			case "", policies:
				if !slices.Contains(union, p) {
					union = append(union, p)
				}
				continue
			case c:
			default:
				t.Errorf("component %s set up %s of %s", c, typ, comp)
			}
			if prev, ok := owner[typ]; ok && prev != c {
				t.Errorf("%s is in both %s and %s", typ, prev, c)
			}
			owner[typ] = c
			own = append(own, p)
		}
		if len(own) == 0 {
			t.Errorf("component %s set up nothing of its own", c)
		}
		union = append(union, own...)
		loadsPlugins := slices.Contains(parts, " *manager.wasmPluginController")
		if want := c == RegistrationController || c == WorkController || c == PlacementController || c == AddonManager; loadsPlugins != want {
			t.Errorf("component %s: WasmPlugin controller %v, want %v", c, loadsPlugins, want)
		}
		if serves, want := h.webhooks != nil, c == RegistrationWebhook || c == WorkWebhook || c == AddonManager; serves != want {
			t.Errorf("component %s: webhook server %v, want %v", c, serves, want)
		}
		if elects, want := h.elector != nil, c != RegistrationWebhook && c != WorkWebhook; elects != want {
			t.Errorf("component %s: leader election %v, want %v", c, elects, want)
		}
		t.Logf("%s: %v", c, own)
	}
	slices.Sort(union)
	_, all := partsOf(t, cp.Config, engine)
	if !slices.Equal(all, union) {
		t.Errorf("the single-process hub runs\n%v\nthe components together\n%v", all, union)
	}
	if _, six := partsOf(t, cp.Config, engine, ComponentNames()...); !slices.Equal(six, all) {
		t.Errorf("naming all six components runs\n%v\nnot the single-process hub's\n%v", six, all)
	}
}

func TestRunRefusesWhatItLeavesOut(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Run: sets.New("placement")}, `unknown component "placement" in Options.Run`},
		{Options{Run: sets.New(RegistrationController), PlacementDebugBindAddress: ":8443"}, "runs in component placement-controller, which Options.Run leaves out"},
		{Options{Run: sets.New(PlacementController), Addons: []string{builtin.ManagedServiceAccount}}, "run in component addon-manager, which Options.Run leaves out"},
		{Options{Run: sets.New(RegistrationWebhook), Dashboard: true}, "the dashboard (Options.Dashboard) runs in component addon-manager, which Options.Run leaves out"},
		{Options{Dashboard: true, Webhook: webhook.Options{Disabled: true}}, "served on the webhook server, which is disabled"},
	} {
		tc.opts.Config, tc.opts.SkipWasmPluginController = cfg, true
		if _, err := New(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error containing %q", sets.List(tc.opts.Run), err, tc.want)
		}
	}
}

// TestAddonManagerProcess: a process without the registration controller waits for the CRDs
// (bounded, the error naming the CRD) until they are installed, and then it is ready with
// the checks of what it runs: caches and the webhook server (the add-on conversion), no
// policies (it runs neither webhook component).
func TestAddonManagerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	cp, err := environment.StartControlPlane(t.Context(), environment.ControlPlaneOptions{Name: environment.HubName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	addr := freeAddr(t)
	opts := Options{Config: cp.Config, Run: sets.New(AddonManager), HealthProbeBindAddress: addr, Logger: testr.New(t)}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := WaitForCRDs(ctx, opts); err == nil || !strings.Contains(err.Error(), "hub: components addon-manager: waiting for CustomResourceDefinition ") {
		t.Fatalf("WaitForCRDs without the CRDs: got %v, want the CRD it waited for named", err)
	}

	installed := make(chan error, 1)
	go func() { installed <- crds.Install(t.Context(), cp.Config) }()
	if err := WaitForCRDs(t.Context(), opts); err != nil {
		t.Fatalf("WaitForCRDs while the CRDs are installed: %v", err)
	}
	if err := <-installed; err != nil {
		t.Fatal(err)
	}
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Start(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("addon-manager process: %v", err)
		}
	})
	waitFor(t, "the addon-manager process is ready", func() (bool, string) {
		code, body := probe(addr, "/readyz?verbose")
		return code == http.StatusOK && strings.Contains(body, "[+]webhook ok"), body
	})
	if _, body := probe(addr, "/readyz?verbose"); strings.Contains(body, "policies") {
		t.Errorf("the addon-manager process checks policies it does not load:\n%s", body)
	}
}

// TestFlowSchemaName: each process of a split hub has a FlowSchema of its own (the chart's
// RBAC lets each component's ServiceAccount write flotilla-hub-<component> only); the
// single-process hub keeps rbac.HubName.
func TestFlowSchemaName(t *testing.T) {
	for _, tc := range []struct {
		run  ComponentSet
		want string
	}{
		{nil, "flotilla-hub"},
		{sets.New(ComponentNames()...), "flotilla-hub"},
		{sets.New(PlacementController), "flotilla-hub-placement-controller"},
		{sets.New(WorkWebhook, RegistrationWebhook), "flotilla-hub-registration-webhook-work-webhook"},
	} {
		if got := FlowSchemaName(tc.run); got != tc.want {
			t.Errorf("%v: %s, want %s", sets.List(tc.run), got, tc.want)
		}
	}
}

// TestPolicyGroups: the webhook components run apart register the policies of their own
// groups; together, or in the single-process hub, all.
func TestPolicyGroups(t *testing.T) {
	for _, tc := range []struct {
		run           ComponentSet
		work, cluster bool
	}{
		{nil, true, true},
		{sets.New(RegistrationWebhook, WorkWebhook), true, true},
		{sets.New(RegistrationWebhook, AddonManager), false, true},
		{sets.New(WorkWebhook), true, false},
	} {
		g := (&Options{Run: tc.run}).policyGroups()
		if g.Has("work.open-cluster-management.io") != tc.work || g.Has("cluster.open-cluster-management.io") != tc.cluster {
			t.Errorf("%v: groups %+v", sets.List(tc.run), g)
		}
	}
}
