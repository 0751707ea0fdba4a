package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/policy"
)

// Policies and work feedback, each spec standing alone on the suite's fleet and the admin's page.
var _ = Describe("the dashboard in Chromium: policies and work feedback", func() {
	It("shows a policy ConfigMap Loaded with its resourceVersion, then Rejected with the hub's message while its last good version stays", func(ctx SpecContext) {
		const (
			name      = "dash-policy-probe"
			probeUser = "dash-policy-prober"
			// The one request the policy denies: a ManifestWork of this name, which nothing else
			// creates, so the policy cannot deny another spec's request.
			deniedWork = "dash-policy-denied"
			denial     = "dashboard e2e: ManifestWork dash-policy-denied is denied"
		)
		key := policy.DefaultNamespace + "/" + name
		good := `package flotilla.admission.dash_policy_probe

match := [{
	"group": "work.open-cluster-management.io",
	"resources": ["manifestworks"],
	"operations": ["CREATE"],
}]

deny contains msg if {
	input.name == "` + deniedWork + `"
	msg := "` + denial + `"
}
`
		// A Rego compile error: the function is defined nowhere.
		broken := strings.Replace(good, `msg := "`+denial+`"`, `msg := dash_no_such_function(input.name)`, 1)

		// The probe user may create ManifestWorks in cluster1; its dry-run creates go through the
		// hub's admission, policies included (the admin is system:masters, which they never judge).
		Expect(client.IgnoreAlreadyExists(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policy.DefaultNamespace}}))).To(Succeed())
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: cluster1, Name: probeUser}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{workv1.GroupVersion.Group}, Resources: []string{"manifestworks"}, Verbs: []string{"create"}}}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: cluster1, Name: probeUser},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: probeUser}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}}
		for _, o := range []client.Object{role, binding} {
			Expect(hubClient.Create(ctx, o)).To(Succeed(), "creating %T %s/%s", o, o.GetNamespace(), o.GetName())
		}
		DeferCleanup(func(ctx SpecContext) {
			for _, o := range []client.Object{binding, role} {
				Expect(client.IgnoreNotFound(hubClient.Delete(ctx, o))).To(Succeed(), "deleting %T %s/%s", o, o.GetNamespace(), o.GetName())
			}
		}, NodeTimeout(time.Minute))
		prober, err := client.New(restConfigAs(probeUser), client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		probe := func(ctx context.Context) error {
			w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster1, Name: deniedWork},
				Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
					Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dash-policy-denied","namespace":"default"}}`)}}}}}}
			return prober.Create(ctx, w, client.DryRunAll)
		}

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: policy.DefaultNamespace, Name: name,
			Labels: map[string]string{policy.ConfigMapLabel: policy.ConfigMapLabelValue}},
			Data: map[string]string{"dash_policy_probe.rego": good}}
		Expect(hubClient.Create(ctx, cm)).To(Succeed(), "creating policy ConfigMap %s", key)
		// Admission is the other specs' too: the policy goes with the spec, and then no longer
		// judges the probe.
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hubClient.Delete(ctx, cm))).To(Succeed(), "deleting policy ConfigMap %s", key)
			Eventually(func() error { return probe(ctx) }).WithContext(ctx).Should(Succeed(),
				"the hub to stop enforcing policy ConfigMap %s once deleted (user %s's dry-run create of ManifestWork %s/%s admitted)", key, probeUser, cluster1, deniedWork)
		}, NodeTimeout(2*time.Minute))
		firstRV := cm.ResourceVersion

		admin.view("plugins")
		row := fmt.Sprintf(`document.querySelector('[data-policy=' + JSON.stringify(%s) + ']')`, js(key))
		// The Last good column, found by its header, as a reader finds it.
		lastGood := fmt.Sprintf(`(() => {
  const r = %s;
  if (!r) return null;
  const heads = Array.from(r.closest('table').querySelectorAll('thead th')).map((th) => th.textContent.trim());
  const i = heads.indexOf('Last good');
  const c = i < 0 ? null : r.children[i];
  return c ? (c.title || c.textContent.trim()) : null })()`, row)
		admin.waitFor(fmt.Sprintf("policy %s Loaded with last good resourceVersion %s", key, firstRV),
			fmt.Sprintf(`%s?.dataset.state === "Loaded" && %s === %s`, row, lastGood, js(firstRV)), 2*time.Minute)
		Eventually(func() error { return probe(ctx) }).WithTimeout(30*time.Second).Should(MatchError(ContainSubstring(denial)),
			"the hub to enforce policy ConfigMap %s: user %s's dry-run create of ManifestWork %s/%s denied", key, probeUser, cluster1, deniedWork)

		By("pushing a version that does not compile")
		Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		cm.Data = map[string]string{"dash_policy_probe.rego": broken}
		Expect(hubClient.Update(ctx, cm)).To(Succeed(), "updating policy ConfigMap %s", key)
		brokenRV := cm.ResourceVersion
		var rejected *corev1.Event
		Eventually(func(g Gomega) {
			list := &corev1.EventList{}
			g.Expect(hubClient.List(ctx, list, client.InNamespace(policy.DefaultNamespace))).To(Succeed())
			for i, e := range list.Items {
				if e.InvolvedObject.Name == name && e.Reason == policy.EventReasonRejected && e.InvolvedObject.ResourceVersion == brokenRV {
					rejected = &list.Items[i]
				}
			}
			g.Expect(rejected).NotTo(BeNil())
		}).WithTimeout(time.Minute).Should(Succeed(), "a %s Event on ConfigMap %s at resourceVersion %s", policy.EventReasonRejected, key, brokenRV)
		Expect(rejected.Message).To(ContainSubstring("dash_no_such_function"), "the %s Event names the compile error", policy.EventReasonRejected)

		admin.waitFor(fmt.Sprintf("policy %s Rejected, showing the %s Event's message %q, last good still %s", key, policy.EventReasonRejected, rejected.Message, firstRV),
			fmt.Sprintf(`(() => {
  const r = %s;
  if (!r || r.dataset.state !== "Rejected" || %s !== %s) return false;
  return Array.from(r.querySelectorAll('[data-event-reason="PolicyRejected"]')).some((e) => e.textContent.includes(%s)) })()`,
				row, lastGood, js(firstRV), js(rejected.Message)), time.Minute)
		Expect(probe(ctx)).To(MatchError(ContainSubstring(denial)),
			"the hub keeps policy ConfigMap %s's last good version (%s) in force after refusing %s", key, firstRV, brokenRV)
	}, SpecTimeout(5*time.Minute))

	It("shows a ManifestWork's status feedback and conditions in dialog#work-detail from its cluster's chip", func(ctx SpecContext) {
		const ns, name = "dash-feedback", "dash-feedback-web"
		namespaceBoundToDefaultSet(ctx, ns)
		create(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: all, namespace: dash-feedback}
spec: {}
`)
		// A Deployment of one replica: the managed cluster's controllers and its KWOK Node make it
		// available; the klusterlet's feedback-wellknown extractor reports its replicas.
		create(ctx, `
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: dash-feedback-web, namespace: dash-feedback}
spec:
  placementRefs:
  - {name: all, rolloutStrategy: {type: All}}
  manifestWorkTemplate:
    workload:
      manifests:
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: dash-feedback-web, namespace: default}
        spec:
          replicas: 1
          selector: {matchLabels: {app: dash-feedback-web}}
          template:
            metadata: {labels: {app: dash-feedback-web}}
            spec: {containers: [{name: web, image: registry.k8s.io/pause:3.10}]}
    manifestConfigs:
    - resourceIdentifier: {group: apps, resource: deployments, namespace: default, name: dash-feedback-web}
      feedbackRules: [{type: WellKnownStatus}]
`)
		// What the hub holds, for the dialog to show (it reads the work once, when opened).
		var ready string
		Eventually(func(g Gomega) {
			w := &workv1.ManifestWork{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: cluster1, Name: name}, w)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkAvailable)).To(BeTrue(), "work Available")
			g.Expect(w.Status.ResourceStatus.Manifests).To(HaveLen(1))
			var vals []workv1.FeedbackValue
			for _, v := range w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values {
				if v.Name == workv1.WellKnownReadyReplicas {
					vals = append(vals, v)
				}
			}
			g.Expect(vals).To(HaveLen(1), "feedback %s", workv1.WellKnownReadyReplicas)
			g.Expect(vals[0].Value.Integer).To(HaveValue(BeEquivalentTo(1)), "feedback %s", workv1.WellKnownReadyReplicas)
			ready = fmt.Sprint(*vals[0].Value.Integer)
		}).WithTimeout(3*time.Minute).Should(Succeed(), "ManifestWork %s/%s Available on the hub with feedback %s = 1", cluster1, name, workv1.WellKnownReadyReplicas)

		admin.view("rollouts")
		key := ns + "/" + name
		chip := fmt.Sprintf(`section[data-rollout=%s] button[data-rollout-cluster="cluster1"]`, js(key))
		admin.waitFor("cluster1's chip in rollout "+key, fmt.Sprintf(`document.querySelector(%s) !== null`, js(chip)), time.Minute)
		admin.click(chip)
		admin.waitFor(fmt.Sprintf("dialog#work-detail open with feedback %s = %s and Available True", workv1.WellKnownReadyReplicas, ready), fmt.Sprintf(`(() => {
  const d = document.querySelector('dialog#work-detail');
  if (!d || !d.open || d.querySelector('[data-condition="Available"][data-status="True"]') === null) return false;
  const f = d.querySelector('[data-feedback=' + JSON.stringify(%s) + ']');
  return !!f && Array.from(f.children).some((c) => c.textContent.trim() === %s) })()`, js(workv1.WellKnownReadyReplicas), js(ready)), 30*time.Second)
		admin.escape()
		admin.waitFor("dialog#work-detail closed by Escape", `!document.querySelector('dialog#work-detail')?.open`, 10*time.Second)
	}, SpecTimeout(5*time.Minute))
})
