package csr

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/hub/registration/managedcluster"
)

// staticReviewers serves a fixed set of plugins.
type staticReviewers []Reviewer

func (s staticReviewers) Reviewers() []Reviewer { return s }

func (staticReviewers) Changed(context.Context) <-chan struct{} { return make(chan struct{}) }

func TestReconcileAutoAccept(t *testing.T) {
	denied := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Status: clusterv1.ManagedClusterStatus{
		Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionFalse,
			Reason: clusterv1.ConditionReasonHubClusterAdminDenied, LastTransitionTime: metav1.Now()}}}}
	for _, tc := range []struct {
		name                       string
		gate                       bool
		cluster                    *clusterv1.ManagedCluster // nil: not registered yet
		renewal                    bool
		wantApproved, wantAccepted bool
	}{
		{name: "gate off: CSR approved, acceptance left to the admin", cluster: &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
			wantApproved: true},
		{name: "gate on: a first join is accepted with its CSR", gate: true, cluster: &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
			wantApproved: true, wantAccepted: true},
		{name: "gate on: without its ManagedCluster the CSR waits", gate: true},
		{name: "gate on: a cluster the admin denied stays denied", gate: true, cluster: denied, wantApproved: true},
		{name: "gate on: renewals accept nothing", gate: true, renewal: true, cluster: &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
			wantApproved: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			scheme := runtime.NewScheme()
			if err := apischeme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			req := newCSR(t, "c1", bootstrapUser, []string{"system:serviceaccounts"}, c1Agent, c1Group)
			if tc.renewal {
				req = newCSR(t, "c1", c1Agent, []string{c1Group}, c1Agent, c1Group)
			}
			objs := []client.Object{req.DeepCopy()}
			if tc.cluster != nil {
				objs = append(objs, tc.cluster.DeepCopy())
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&clusterv1.ManagedCluster{}).Build()
			kube := kubefake.NewClientset(req.DeepCopy())
			// Authorization is the API server's (e2e/registration covers it); here every renewal may renew.
			kube.PrependReactor("create", "subjectaccessreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}, nil
			})
			recorder := events.NewFakeRecorder(10)
			r := &Reconciler{
				Client: c, Kube: kube, Recorder: recorder,
				Reviewers:  staticReviewers{fakeReviewer{name: "approver", out: `{"decision":"Approve"}`}},
				AutoAccept: func() bool { return tc.gate },
			}
			if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(req)}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}

			got, err := kube.CertificatesV1().CertificateSigningRequests().Get(ctx, req.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if approved := !IsPending(got); approved != tc.wantApproved {
				t.Errorf("CSR approved = %v, want %v (conditions %+v)", approved, tc.wantApproved, got.Status.Conditions)
			}
			if tc.cluster == nil {
				return
			}
			mc := &clusterv1.ManagedCluster{}
			if err := c.Get(ctx, client.ObjectKey{Name: "c1"}, mc); err != nil {
				t.Fatal(err)
			}
			if mc.Spec.HubAcceptsClient != tc.wantAccepted {
				t.Errorf("hubAcceptsClient = %v, want %v", mc.Spec.HubAcceptsClient, tc.wantAccepted)
			}
			if !tc.wantAccepted {
				if len(recorder.Events) != 0 {
					t.Errorf("unexpected Event %q", <-recorder.Events)
				}
				return
			}
			if mc.Annotations[managedcluster.AutoAcceptedByAnnotation] != "approver" || mc.Annotations[managedcluster.AutoAcceptedOnAnnotation] == "" {
				t.Errorf("annotations %v, want the approving plugin and the time", mc.Annotations)
			}
			if len(recorder.Events) != 1 {
				t.Fatalf("want one Event, got %d", len(recorder.Events))
			}
			if ev := <-recorder.Events; !strings.Contains(ev, ReasonAutoAccepted) || !strings.Contains(ev, "CSRApproval plugin approver") {
				t.Errorf("Event %q, want %s naming the plugin", ev, ReasonAutoAccepted)
			}
			cond := got.Status.Conditions[0]
			if cond.Type != certificatesv1.CertificateApproved || cond.Reason != ReasonPluginApproved {
				t.Errorf("CSR condition %+v", cond)
			}
		})
	}
}
