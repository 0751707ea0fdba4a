package csr

import (
	"context"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/plugins/csr-addon/rule"
	"github.com/flotilla-dev/flotilla/sdk/csrapproval"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
)

// nativeReviewer runs a CSRApproval rule in-process, through the JSON the Wasm host sends.
type nativeReviewer struct {
	name string
	a    csrapproval.Approver
}

func (n nativeReviewer) Name() string     { return n.name }
func (n nativeReviewer) FailClosed() bool { return true }
func (n nativeReviewer) ReviewCSR(_ context.Context, in []byte) ([]byte, error) {
	return csrapproval.Review(n.a, sdktest.NewHost(""), in)
}

const (
	hwUser  = "system:open-cluster-management:cluster:c1:addon:helloworld:agent:helloworld-agent"
	hwGroup = "system:open-cluster-management:cluster:c1:addon:helloworld"
)

func addonCSR(t *testing.T, user string, groups []string, cn string, orgs ...string) *certificatesv1.CertificateSigningRequest {
	c := newCSR(t, "c1", user, groups, cn, orgs...)
	c.Name = "addon-c1-helloworld-x"
	c.Labels[AddonNameLabel] = "helloworld"
	return c
}

func TestParseAndCheckAddonCSR(t *testing.T) {
	c := addonCSR(t, c1Agent, []string{c1Group}, hwUser, hwGroup)
	if !IsAddonCSR(c) || IsRegistrationCSR(c) || !IsReviewedCSR(c) {
		t.Fatalf("classification of %v", c.Labels)
	}
	c.Spec.SignerName = "example.com/custom"
	if !IsAddonCSR(c) {
		t.Errorf("a custom signer's add-on CSR is an add-on CSR")
	}
	r, err := Parse(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Addon == nil || r.Addon.Name != "helloworld" || r.Renewal || r.Addon.Registrations == nil {
		t.Errorf("parsed %+v", r)
	}
	for _, tc := range []struct {
		name, user, cn string
		groups, orgs   []string
		signer         string
		deny           string
	}{
		{name: "default identity", user: c1Agent, groups: []string{c1Group}, cn: hwUser, orgs: []string{hwGroup}},
		{name: "filed by another cluster's agent", user: "system:open-cluster-management:c2:a", groups: []string{"system:open-cluster-management:c2"},
			cn: hwUser, orgs: []string{hwGroup}, deny: `cluster "c2"`},
		{name: "asks for a cluster agent's user", user: c1Agent, groups: []string{c1Group}, cn: c1Agent, orgs: []string{hwGroup}, deny: "agent's identity"},
		{name: "asks for a cluster group", user: c1Agent, groups: []string{c1Group}, cn: hwUser, orgs: []string{c1Group}, deny: c1Group},
		{name: "asks for system:masters", user: c1Agent, groups: []string{c1Group}, cn: hwUser, orgs: []string{"system:masters"}, deny: "system:masters"},
		{name: "custom signer: subject is its business", user: c1Agent, groups: []string{c1Group}, cn: c1Agent, orgs: []string{"system:masters"}, signer: "example.com/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := addonCSR(t, tc.user, tc.groups, tc.cn, tc.orgs...)
			if tc.signer != "" {
				c.Spec.SignerName = tc.signer
			}
			r, err := Parse(c)
			if err != nil {
				t.Fatal(err)
			}
			got := CheckAddonIdentity(r)
			if (tc.deny == "") != (got == "") || !strings.Contains(got, tc.deny) {
				t.Errorf("CheckAddonIdentity = %q, want a denial containing %q", got, tc.deny)
			}
		})
	}
}

func TestReconcileAddonCSR(t *testing.T) {
	accepted := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	notAccepted := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "helloworld"},
		Status: addonv1alpha1.ManagedClusterAddOnStatus{Registrations: []addonv1alpha1.RegistrationConfig{{
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Subject:    addonv1alpha1.Subject{User: hwUser, Groups: []string{hwGroup}},
		}}}}
	good := func(t *testing.T) *certificatesv1.CertificateSigningRequest {
		return addonCSR(t, c1Agent, []string{c1Group}, hwUser, hwGroup)
	}
	for _, tc := range []struct {
		name    string
		csr     func(*testing.T) *certificatesv1.CertificateSigningRequest
		objs    []client.Object
		want    certificatesv1.RequestConditionType // "" pending
		reason  string
		wantEvt string
	}{
		{name: "enabled add-on on an accepted cluster", csr: good, objs: []client.Object{accepted, mca},
			want: certificatesv1.CertificateApproved, reason: ReasonPluginApproved},
		{name: "add-on not enabled", csr: good, objs: []client.Object{accepted}, wantEvt: "add-on enabled: false"},
		{name: "cluster not accepted", csr: good, objs: []client.Object{notAccepted, mca}, wantEvt: "cluster accepted: false"},
		{name: "another cluster's agent", csr: func(t *testing.T) *certificatesv1.CertificateSigningRequest {
			return addonCSR(t, "system:open-cluster-management:c2:a", []string{"system:open-cluster-management:c2"}, hwUser, hwGroup)
		}, objs: []client.Object{accepted, mca}, want: certificatesv1.CertificateDenied, reason: ReasonIdentityRejected},
		{name: "identity outside the add-on's", csr: func(t *testing.T) *certificatesv1.CertificateSigningRequest {
			return addonCSR(t, c1Agent, []string{c1Group}, "admin", "system:authenticated")
		}, objs: []client.Object{accepted, mca}, wantEvt: "AddonCSRPending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			scheme := runtime.NewScheme()
			if err := apischeme.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			req := tc.csr(t)
			objs := []client.Object{req.DeepCopy()}
			for _, o := range tc.objs {
				objs = append(objs, o.DeepCopyObject().(client.Object))
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
			kube := kubefake.NewClientset(req.DeepCopy())
			recorder := events.NewFakeRecorder(10)
			r := &Reconciler{
				Client: c, Kube: kube, Recorder: recorder,
				// csr-renewal's rule would abstain; csr-addon decides.
				Reviewers:  staticReviewers{nativeReviewer{name: "csr-addon", a: rule.Approver{}}},
				AutoAccept: func() bool { return true },
			}
			if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(req)}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			got, err := kube.CertificatesV1().CertificateSigningRequests().Get(ctx, req.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if !IsPending(got) {
					t.Fatalf("want the CSR pending, got %+v", got.Status.Conditions)
				}
				if len(recorder.Events) != 1 {
					t.Fatalf("want one Event, got %d", len(recorder.Events))
				}
				if ev := <-recorder.Events; !strings.Contains(ev, ReasonAddonCSRPending) || !strings.Contains(ev, tc.wantEvt) {
					t.Errorf("Event %q, want %s with %q", ev, ReasonAddonCSRPending, tc.wantEvt)
				}
				return
			}
			if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != tc.want || got.Status.Conditions[0].Reason != tc.reason {
				t.Fatalf("conditions %+v, want %s/%s", got.Status.Conditions, tc.want, tc.reason)
			}
			// An add-on CSR never accepts its cluster, whatever ManagedClusterAutoApproval says.
			mc := &clusterv1.ManagedCluster{}
			if err := c.Get(ctx, client.ObjectKey{Name: "c1"}, mc); err == nil && mc.Spec.HubAcceptsClient != (mc.Name == accepted.Name && tc.objs[0] == accepted) {
				t.Errorf("hubAcceptsClient changed to %v", mc.Spec.HubAcceptsClient)
			}
		})
	}
}
