package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/e2e/internal/hubtest"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	hubadmin "github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/dashboard"
	klusterletaddon "github.com/flotilla-dev/flotilla/klusterlet/addon"
	"github.com/flotilla-dev/flotilla/plugins/dist"
)

// The specs share the fleet and the admin's page; they run in order so the screenshots at
// the end show what the others made (each spec stands alone otherwise, and a failed one
// does not stop the rest). The objects they create stay until the suite's fleet goes.
var _ = Describe("the dashboard in Chromium", Ordered, ContinueOnFailure, func() {
	It("shows a Progressive rollout's decision groups succeed in order: group 0, then group 1", func(ctx SpecContext) {
		const ns, orderLabel = "dash-progressive", "dashboard-e2e/order"
		namespaceBoundToDefaultSet(ctx, ns)
		labelCluster(ctx, cluster1, orderLabel, "first")
		labelCluster(ctx, cluster2, orderLabel, "second")
		create(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: ordered, namespace: dash-progressive}
spec:
  decisionStrategy:
    groupStrategy:
      decisionGroups:
      - {groupName: first, groupClusterSelector: {labelSelector: {matchLabels: {dashboard-e2e/order: first}}}}
      - {groupName: second, groupClusterSelector: {labelSelector: {matchLabels: {dashboard-e2e/order: second}}}}
`)
		Eventually(func() map[int][]string { return hubtest.DecisionGroups(ctx, hubClient, ns, "ordered") }).
			Should(Equal(map[int][]string{0: {cluster1}, 1: {cluster2}}), "Placement %s/ordered: decision group 0 = cluster1, 1 = cluster2", ns)

		// The page records every change of the rollout's group states, with the page's clock,
		// from before the replica set exists.
		admin.view("rollouts")
		key := ns + "/web"
		mustEval[bool](admin, "installing the group-state recorder", fmt.Sprintf(`(() => {
  const sel = 'section[data-rollout=' + JSON.stringify(%s) + ']';
  const recs = window.__e2eGroups = [];
  let last = null;
  const read = () => {
    const groups = {};
    const sec = document.querySelector(sel);
    if (sec) for (const g of sec.querySelectorAll('[data-group]')) groups[g.dataset.group] = g.dataset.state;
    const s = JSON.stringify(groups);
    if (s !== last) { last = s; recs.push({t: Date.now(), groups}); }
  };
  new MutationObserver(read).observe(document.body, {subtree: true, childList: true, attributes: true});
  read();
  return true;
})()`, js(key)))
		// minSuccessTime holds group 1 for 10 s after group 0 succeeded: the order is visible.
		create(ctx, `
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: web, namespace: dash-progressive}
spec:
  placementRefs:
  - name: ordered
    rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1, minSuccessTime: 10s}}
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: dash-web, namespace: default}, data: {version: v1}}
`)
		sec := fmt.Sprintf(`document.querySelector('section[data-rollout=' + JSON.stringify(%s) + ']')`, js(key))
		admin.waitFor("rollout "+key+" shown with groups 0 and 1 Succeeded", fmt.Sprintf(`(() => { const s = %s;
  return s !== null && s.querySelector('[data-group="0"][data-state="Succeeded"]') !== null && s.querySelector('[data-group="1"][data-state="Succeeded"]') !== null })()`, sec), 3*time.Minute)

		type record struct {
			T      int64             `json:"t"`
			Groups map[string]string `json:"groups"`
		}
		recs := mustEval[[]record](admin, "reading the recorded group states", `window.__e2eGroups`)
		first := func(group string) int {
			for i, r := range recs {
				if r.Groups[group] == "Succeeded" {
					return i
				}
			}
			return -1
		}
		i0, i1 := first("0"), first("1")
		Expect(i0).To(BeNumerically(">=", 0), "the page never showed group 0 Succeeded: %v", recs)
		Expect(i1).To(BeNumerically(">", i0), "the page showed group 1 Succeeded before group 0: %v", recs)
		Expect(recs[i0].Groups["1"]).To(BeElementOf("ToApply", "Progressing"),
			"when group 0 showed Succeeded, group 1 should not have succeeded yet: %v", recs)
		for _, r := range recs {
			if r.Groups["1"] == "Succeeded" {
				Expect(r.Groups["0"]).To(Equal("Succeeded"), "the page showed group 1 Succeeded while group 0 was not: %v", recs)
			}
		}
		AddReportEntry("group states seen by the page", fmt.Sprintf("%v; group 1 Succeeded %d ms after group 0", recs, recs[i1].T-recs[i0].T))
	}, SpecTimeout(5*time.Minute))

	It("shows a cluster whose work fails as Failed with why, and its work's conditions in dialog#work-detail", func(ctx SpecContext) {
		const ns, onlyOnCluster1 = "dash-failing", "dash-only-cluster1"
		namespaceBoundToDefaultSet(ctx, ns)
		// The work's first manifest goes into a namespace only cluster1 has: cluster2's agent
		// cannot apply it (Applied False). Its second manifest, a ConfigMap cluster2 already has
		// marked broken by someone else, is Degraded there by the template's condition rule:
		// the rollout counts cluster2 Failed.
		Expect(managed[cluster1].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: onlyOnCluster1}})).To(Succeed())
		Expect(managed[cluster2].Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dash-config"},
			Data: map[string]string{"broken": "disk quota exceeded"}})).To(Succeed())
		create(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: both, namespace: dash-failing}
spec: {}
`)
		Eventually(func() map[int][]string { return hubtest.DecisionGroups(ctx, hubClient, ns, "both") }).
			Should(Equal(map[int][]string{0: {cluster1, cluster2}}), "Placement %s/both decides both clusters", ns)
		create(ctx, `
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: app, namespace: dash-failing}
spec:
  placementRefs:
  - {name: both, rolloutStrategy: {type: All}}
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: dash-app, namespace: dash-only-cluster1}, data: {version: v1}}
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: dash-config, namespace: default}, data: {version: v1}}
    manifestConfigs:
    - resourceIdentifier: {resource: configmaps, namespace: default, name: dash-config}
      updateStrategy: {type: ServerSideApply}
      conditionRules:
      - condition: Degraded
        type: CEL
        celExpressions: ["has(object.data.broken)"]
        messageExpression: "has(object.data.broken) ? 'config marked broken: ' + object.data.broken : 'config fine'"
`)
		// What the hub holds, for the page to show.
		var applied metav1.Condition
		Eventually(func(g Gomega) {
			w := &workv1.ManifestWork{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: cluster2, Name: "app"}, w)).To(Succeed())
			c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkDegraded)).To(BeTrue())
			applied = *c
		}).WithTimeout(2*time.Minute).Should(Succeed(), "ManifestWork cluster2/app Applied False and Degraded True on the hub")

		admin.view("rollouts")
		key := ns + "/app"
		sec := fmt.Sprintf(`document.querySelector('section[data-rollout=' + JSON.stringify(%s) + ']')`, js(key))
		failed := fmt.Sprintf(`%s?.querySelector('button[data-rollout-cluster="cluster2"][data-state="Failed"]')`, sec)
		admin.waitFor("cluster2 Failed in rollout "+key+", saying why (config marked broken: disk quota exceeded)", fmt.Sprintf(`(() => {
  const b = %s;
  return !!b && (b.textContent + ' ' + (b.title || '') + ' ' + (b.getAttribute('aria-label') || '')).includes('config marked broken: disk quota exceeded') })()`, failed), 2*time.Minute)
		admin.waitFor("cluster1 Succeeded in rollout "+key, fmt.Sprintf(`%s?.querySelector('button[data-rollout-cluster="cluster1"][data-state="Succeeded"]') != null`, sec), 2*time.Minute)
		Expect(mustEval[string](admin, "reading cluster2's group state", fmt.Sprintf(`%s.querySelector('[data-group]:has(button[data-rollout-cluster="cluster2"])').dataset.state`, sec))).
			To(Equal("Failed"), "a group with a Failed cluster is Failed")

		By("clicking cluster2 opens its ManifestWork's detail")
		admin.click(fmt.Sprintf(`section[data-rollout=%s] button[data-rollout-cluster="cluster2"]`, js(key)))
		admin.waitFor("dialog#work-detail open with Applied False and Degraded True, naming the Applied reason "+applied.Reason, fmt.Sprintf(`(() => {
  const d = document.querySelector('dialog#work-detail');
  return !!d && d.open && d.querySelector('[data-condition="Applied"][data-status="False"]') !== null &&
    d.querySelector('[data-condition="Degraded"][data-status="True"]') !== null && d.textContent.includes(%s) })()`, js(applied.Reason)), 30*time.Second)
		admin.escape()
		admin.waitFor("dialog#work-detail closed by Escape", `!document.querySelector('dialog#work-detail')?.open`, 10*time.Second)
	}, SpecTimeout(5*time.Minute))

	It("shows a restricted user only the placements it may list, and which namespaces it may not", func(ctx SpecContext) {
		const user = "dash-alice"
		for _, ns := range []string{"team-a", "team-b"} {
			Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
			create(ctx, fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: placement-%s, namespace: %s}
spec: {numberOfClusters: 1}
`, ns, ns))
		}
		// The user may read placements (and their decisions) in team-a only, and list clusters.
		view := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "dash-placement-viewer"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"placements", "placementdecisions"}, Verbs: []string{"get", "list", "watch"}}}}
		clusters := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "dash-cluster-viewer"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters"}, Verbs: []string{"get", "list", "watch"}}}}
		subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
		for _, o := range []client.Object{view, clusters,
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "dash-placement-viewer"}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: view.Name}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dash-cluster-viewer"}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusters.Name}},
		} {
			Expect(hubClient.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
		}

		url, token := serveDashboard(dashboard.Options{Config: restConfigAs(user), Namespaces: []string{"team-a", "team-b"}})
		p := openPage("restricted", url, token, true)
		p.waitFor("the fleet with both clusters (#fleet-count data-total=2)", `document.querySelector('#fleet-count')?.dataset.total === "2"`, time.Minute)
		p.view("placements")
		p.waitFor("placement team-a/placement-team-a listed", `document.querySelector('[data-placement="team-a/placement-team-a"]') !== null`, time.Minute)
		Expect(mustEval[bool](p, "looking for team-b's placement", `document.querySelector('[data-placement="team-b/placement-team-b"]') !== null`)).
			To(BeFalse(), "the restricted page lists team-b's placement, which the user may not list")
		p.waitFor("#placements-access naming team-b", `(document.querySelector('#placements-access')?.textContent || '').includes('team-b')`, 30*time.Second)

		By("the admin's page lists both")
		admin.view("placements")
		admin.waitFor("placements of team-a and team-b listed", `document.querySelector('[data-placement="team-a/placement-team-a"]') !== null && document.querySelector('[data-placement="team-b/placement-team-b"]') !== null`, time.Minute)
	}, SpecTimeout(5*time.Minute))

	It("shows an add-on whose agent never reports as Unknown and one whose agent stopped as Unhealthy, with why, beside a healthy built-in", func(ctx SpecContext) {
		const silent = "dash-silent"
		// The healthy one: managed-serviceaccount, built into the klusterlet, renews its Lease.
		Eventually(func() error {
			_, err := hubadmin.EnableAddons(ctx, hubClient, hubadmin.AddonEnable{Names: []string{builtin.ManagedServiceAccount}, Clusters: []string{cluster1, cluster2}})
			return err
		}).Should(Succeed(), "add-on %s enabled on cluster1 and cluster2", builtin.ManagedServiceAccount)
		// The silent one: a template add-on whose health is its agent's Lease, which no agent
		// renews (its Deployment's Pod runs a pause container).
		create(ctx, `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: dash-silent}
spec:
  addonName: dash-silent
  agentSpec:
    workload:
      manifests:
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: dash-silent-agent, namespace: open-cluster-management-agent-addon}
        spec:
          replicas: 1
          selector: {matchLabels: {app: dash-silent}}
          template:
            metadata: {labels: {app: dash-silent}}
            spec: {containers: [{name: agent, image: registry.k8s.io/pause:3.10}]}
`, `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: dash-silent
  annotations: {addon.flotilla.dev/health-check: Lease}
spec:
  supportedConfigs:
  - {group: addon.open-cluster-management.io, resource: addontemplates, defaultConfig: {name: dash-silent}}
  installStrategy: {type: Manual}
`, `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: dash-silent, namespace: cluster2}
spec: {}
`, `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: dash-silent, namespace: cluster1}
spec: {}
`)
		// On cluster1 the agent ran once and stopped: its Lease is in the install namespace,
		// last renewed an hour ago, well past the klusterlet's grace (klusterlet/addon
		// LeaseGraceTimes lease durations), so the klusterlet reports Available=False
		// (ManagedClusterAddOnLeaseUpdateStopped). On cluster2 there is no Lease at all: Unknown.
		stopped := &addonv1alpha1.ManagedClusterAddOn{}
		Eventually(func() error {
			return hubClient.Get(ctx, client.ObjectKey{Namespace: cluster1, Name: silent}, stopped)
		}).Should(Succeed(), "reading ManagedClusterAddOn %s/%s", cluster1, silent)
		installNS := klusterletaddon.InstallNamespace(stopped)
		Expect(client.IgnoreAlreadyExists(managed[cluster1].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: installNS}}))).
			To(Succeed(), "creating namespace %s on %s", installNS, cluster1)
		renewed := metav1.NewMicroTime(time.Now().Add(-time.Hour))
		Expect(managed[cluster1].Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: installNS, Name: silent},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("dash-silent-agent"), LeaseDurationSeconds: ptr.To[int32](60), RenewTime: &renewed}})).
			To(Succeed(), "creating the stale Lease %s/%s on %s", installNS, silent, cluster1)
		available := func(cluster, name string) func(g Gomega) metav1.Condition {
			return func(g Gomega) metav1.Condition {
				m := &addonv1alpha1.ManagedClusterAddOn{}
				g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, m)).To(Succeed())
				c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
				g.Expect(c).NotTo(BeNil(), "ManagedClusterAddOn %s/%s has no Available condition", cluster, name)
				return *c
			}
		}
		Eventually(available(cluster1, builtin.ManagedServiceAccount)).WithTimeout(2*time.Minute).
			Should(HaveField("Status", metav1.ConditionTrue), "ManagedClusterAddOn cluster1/%s Available on the hub", builtin.ManagedServiceAccount)
		Eventually(available(cluster2, silent)).WithTimeout(2*time.Minute).Should(And(
			HaveField("Status", metav1.ConditionUnknown), HaveField("Reason", addonv1alpha1.AddonAvailableReasonLeaseLeaseNotFound)),
			"ManagedClusterAddOn cluster2/%s Available Unknown (%s) on the hub", silent, addonv1alpha1.AddonAvailableReasonLeaseLeaseNotFound)
		Eventually(available(cluster1, silent)).WithTimeout(2*time.Minute).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", addonv1alpha1.AddonAvailableReasonLeaseUpdateStopped)),
			"ManagedClusterAddOn cluster1/%s Available False (%s) on the hub", silent, addonv1alpha1.AddonAvailableReasonLeaseUpdateStopped)

		admin.view("addons")
		cell := func(key string) string {
			return fmt.Sprintf(`document.querySelector('table#addon-matrix td[data-addon-cell=' + JSON.stringify(%s) + ']')`, js(key))
		}
		admin.waitFor("cluster1/managed-serviceaccount Healthy", fmt.Sprintf(`(() => { const c = %s; return !!c && c.dataset.health === "Healthy" && c.textContent.includes("Healthy") })()`,
			cell(cluster1+"/"+builtin.ManagedServiceAccount)), time.Minute)
		// Each not-healthy cell says its health and the reason in its text, not only in a tooltip.
		healthWhy := func(key, health, reason string) {
			GinkgoHelper()
			admin.waitFor(fmt.Sprintf("%s %s, saying so in words and naming reason %s in its text", key, health, reason), fmt.Sprintf(`(() => {
  const c = %s;
  return !!c && c.dataset.health === %s && c.textContent.includes(%s) && c.textContent.includes(%s) })()`,
				cell(key), js(health), js(health), js(reason)), time.Minute)
		}
		healthWhy(cluster2+"/"+silent, dashboard.HealthUnknown, addonv1alpha1.AddonAvailableReasonLeaseLeaseNotFound)
		healthWhy(cluster1+"/"+silent, dashboard.HealthUnhealthy, addonv1alpha1.AddonAvailableReasonLeaseUpdateStopped)
	}, SpecTimeout(5*time.Minute))

	It("renders each view for screenshots (PNG)", func(ctx SpecContext) {
		dir := os.Getenv(ScreenshotsEnv)
		if dir == "" {
			dir = GinkgoT().TempDir()
		}
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())

		// Besides the hub's default plugins, the plugins view gets one pushed as a user would (a
		// built-in prioritizer's module with a config) and one whose module is missing.
		p, err := dist.Get("prioritizer-affinity")
		Expect(err).NotTo(HaveOccurred())
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: policy.DefaultNamespace, Name: "dash-affinity-module"},
			BinaryData: map[string][]byte{flotillav1alpha1.SourceKeyWasmZstd: p.Compressed}}
		Expect(client.IgnoreAlreadyExists(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policy.DefaultNamespace}}))).To(Succeed())
		Expect(hubClient.Create(ctx, cm)).To(Succeed())
		for _, wp := range []*flotillav1alpha1.WasmPlugin{
			{ObjectMeta: metav1.ObjectMeta{Name: "dash-affinity"}, Spec: flotillav1alpha1.WasmPluginSpec{Type: flotillav1alpha1.PluginTypePrioritizer, SHA256: p.SHA256,
				PluginConfig: &apiextensionsv1.JSON{Raw: []byte(`{"labels": [{"key": "dashboard-e2e/order", "value": "first", "score": 100}]}`)},
				Source:       flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{Namespace: cm.Namespace, Name: cm.Name, Key: flotillav1alpha1.SourceKeyWasmZstd}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "dash-missing"}, Spec: flotillav1alpha1.WasmPluginSpec{Type: flotillav1alpha1.PluginTypePrioritizer,
				Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{Namespace: cm.Namespace, Name: "dash-no-such-module", Key: flotillav1alpha1.SourceKeyWasmZstd}}}},
		} {
			Expect(hubClient.Create(ctx, wp)).To(Succeed(), "creating WasmPlugin %s", wp.Name)
		}

		shots := map[string]string{}
		admin.view("fleet")
		admin.waitFor("both clusters in the fleet table", `document.querySelector('tr[data-cluster="cluster1"]') !== null && document.querySelector('tr[data-cluster="cluster2"]') !== null`, time.Minute)
		shots["fleet"] = admin.screenshot(dir, "fleet")

		// A placement that picks one of the two clusters: its detail explains the other.
		create(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: pick-one, namespace: dash-progressive}
spec: {numberOfClusters: 1}
`)
		admin.view("placements")
		row := `[data-placement="dash-progressive/pick-one"]`
		admin.waitFor("placement dash-progressive/pick-one listed", fmt.Sprintf(`document.querySelector(%s) !== null`, js(row)), time.Minute)
		admin.click(row)
		admin.waitFor("#placement-detail of dash-progressive/pick-one: one decision and the scheduler's explanation of the cluster not chosen",
			`document.querySelectorAll('#placement-detail [data-decision]').length === 1 && document.querySelectorAll('#placement-detail [data-not-chosen]').length === 1`, time.Minute)
		shots["placements"] = admin.screenshot(dir, "placements")

		admin.view("rollouts")
		admin.waitFor("the rollouts of the earlier specs", `document.querySelectorAll('section[data-rollout]').length > 0`, time.Minute)
		shots["rollouts"] = admin.screenshot(dir, "rollouts")

		admin.view("addons")
		// The add-ons spec's cells: Healthy, Unhealthy and Unknown side by side.
		admin.waitFor("the add-on matrix with a Healthy, an Unhealthy and an Unknown cell", `["Healthy", "Unhealthy", "Unknown"].every(h =>
  document.querySelector('table#addon-matrix td[data-addon-cell][data-health="' + h + '"]') !== null)`, time.Minute)
		shots["addons"] = admin.screenshot(dir, "addons")

		admin.view("plugins")
		admin.waitFor("WasmPlugin dash-affinity Ready and dash-missing not", `document.querySelector('[data-plugin="dash-affinity"][data-ready="True"]') !== null && document.querySelector('[data-plugin="dash-missing"][data-ready="False"]') !== null`, 2*time.Minute)
		shots["plugins"] = admin.screenshot(dir, "plugins")

		names := []string{}
		for v, path := range shots {
			b, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(b[:8])).To(Equal("\x89PNG\r\n\x1a\n"), "screenshot of view %s is a PNG", v)
			names = append(names, path)
		}
		sort.Strings(names)
		AddReportEntry("screenshots", strings.Join(names, "\n"))
	}, SpecTimeout(6*time.Minute))
})

// ---- hub objects ----

// create creates the YAML objects on the hub as written (the API server defaults the rest).
func create(ctx context.Context, docs ...string) {
	GinkgoHelper()
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		Expect(hubClient.Create(ctx, u)).To(Succeed(), "creating %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	}
}

// namespaceBoundToDefaultSet creates namespace ns on the hub with a binding of the default
// ManagedClusterSet (both clusters), so placements there can select them.
func namespaceBoundToDefaultSet(ctx context.Context, ns string) {
	GinkgoHelper()
	Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	create(ctx, fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: default, namespace: %s}
spec: {clusterSet: default}
`, ns))
}

// labelCluster sets a label of ManagedCluster name.
func labelCluster(ctx context.Context, name, key, value string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%s:%s}}}`, js(key), js(value))
	Expect(hubClient.Patch(ctx, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "cluster.open-cluster-management.io/v1", Kind: "ManagedCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed(), "labelling ManagedCluster %s", name)
}
