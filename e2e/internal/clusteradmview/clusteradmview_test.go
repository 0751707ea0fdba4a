package clusteradmview_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/clusteradmview"
)

func TestClusteradmView(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "clusteradm's view")
}

var (
	// hub serves every Flotilla CRD (a hub, and also a managed cluster's ClusterClaims and
	// Klusterlets); bare serves none.
	hub, bare *environment.ControlPlane
	c         client.Client
)

var _ = BeforeSuite(func(ctx SpecContext) {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, o := range []environment.ControlPlaneOptions{{Name: "hub", AllCRDs: true}, {Name: "bare"}} {
		wg.Go(func() {
			cp, err := environment.StartControlPlane(ctx, o)
			errs[i] = err
			if err == nil {
				DeferCleanup(cp.Stop)
				if i == 0 {
					hub = cp
				} else {
					bare = cp
				}
			}
		})
	}
	wg.Wait()
	Expect(errs).To(HaveEach(BeNil()), "the control planes hub and bare start")
	var err error
	c, err = client.New(hub.Config, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	for _, ns := range []string{"open-cluster-management", "open-cluster-management-hub", "open-cluster-management-agent"} {
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
}, NodeTimeout(3*time.Minute))

func deployment(ctx context.Context, ns, name, container, image string) {
	GinkgoHelper()
	labels := map[string]string{"app": name}
	Expect(c.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: container, Image: image}}},
			},
		},
	})).To(Succeed(), "creating Deployment %s/%s", ns, name)
}

func related(ns, name string) operatorv1.RelatedResourceMeta {
	return operatorv1.RelatedResourceMeta{Group: "apps", Version: "v1", Resource: "deployments", Namespace: ns, Name: name}
}

func crd(name string) operatorv1.RelatedResourceMeta {
	return operatorv1.RelatedResourceMeta{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Name: name}
}

// The specs are ordered: they build one install step by step on the hub control plane.
var _ = Describe("get hub-info and klusterlet-info", Ordered, func() {
	It("refuse a cluster that is not a hub or not a managed cluster, as clusteradm's checks do", func(ctx SpecContext) {
		_, err := clusteradmview.HubInfo(ctx, bare.Config)
		Expect(err).To(MatchError("hub oriented command should not running against non-hub cluster"))
		_, err = clusteradmview.KlusterletInfo(ctx, bare.Config)
		Expect(err).To(MatchError("managed cluster oriented command should not running against non-managed cluster"))
	}, SpecTimeout(time.Minute))

	It("print <none> and <uninstalled> on a hub without operator or ClusterManager", func(ctx SpecContext) {
		Expect(clusteradmview.HubInfo(ctx, hub.Config)).To(Equal("Registration Operator:\t<none>\nComponents:\t<uninstalled>\n"))
		Expect(clusteradmview.KlusterletInfo(ctx, hub.Config)).To(Equal("No klusterlet detected! Please make sure you're using the correct context!\n"))
	}, SpecTimeout(time.Minute))

	It("fail, as clusteradm does, when the ClusterManager does not list a component", func(ctx SpecContext) {
		deployment(ctx, "open-cluster-management", "cluster-manager", "registration-operator", "flotilla:op")
		cm := &operatorv1.ClusterManager{ObjectMeta: metav1.ObjectMeta{Name: "cluster-manager"},
			Spec: operatorv1.ClusterManagerSpec{WorkConfiguration: &operatorv1.WorkConfiguration{
				FeatureGates: []operatorv1.FeatureGate{{Feature: "ManifestWorkReplicaSet", Mode: operatorv1.FeatureGateModeTypeEnable}}}}}
		Expect(c.Create(ctx, cm)).To(Succeed())
		cm.Status.RelatedResources = []operatorv1.RelatedResourceMeta{related("open-cluster-management-hub", "cluster-manager-addon-manager-controller")}
		Expect(c.Status().Update(ctx, cm)).To(Succeed())
		out, err := clusteradmview.HubInfo(ctx, hub.Config)
		Expect(err).To(MatchError(ContainSubstring("resource name may not be empty")), "the registration controller is not listed")
		Expect(out).To(HavePrefix("Registration Operator:\n  Controller:\t(0/2) flotilla:op\n  CustomResourceDefinition:\n    (installed) clustermanagers.operator.open-cluster-management.io [*v1]\nComponents:\n  AddOn Manager:\n  Registration:\n"),
			"a listed Deployment that does not exist prints nothing")
	}, SpecTimeout(time.Minute))

	It("print every component the ClusterManager lists", func(ctx SpecContext) {
		var rel []operatorv1.RelatedResourceMeta
		for _, n := range clusteradmview.HubComponents {
			container := "hub"
			if n == "cluster-manager-work-webhook" {
				container = "sidecar" // the image of the last container is printed
			}
			deployment(ctx, "open-cluster-management-hub", n, container, "flotilla:"+n)
			rel = append(rel, related("open-cluster-management-hub", n))
		}
		rel = append(rel, crd(environment.ClusterManagerCRD), crd("nothere.example.com"))
		cm := &operatorv1.ClusterManager{}
		Expect(c.Get(ctx, client.ObjectKey{Name: "cluster-manager"}, cm)).To(Succeed())
		cm.Status.RelatedResources = rel
		Expect(c.Status().Update(ctx, cm)).To(Succeed())
		Expect(clusteradmview.HubInfo(ctx, hub.Config)).To(Equal(`Registration Operator:
  Controller:	(0/2) flotilla:op
  CustomResourceDefinition:
    (installed) clustermanagers.operator.open-cluster-management.io [*v1]
Components:
  AddOn Manager:
    Controller:	(2/0) flotilla:cluster-manager-addon-manager-controller
  Registration:
    Controller:	(2/0) flotilla:cluster-manager-registration-controller
    Webhook:	(2/0) flotilla:cluster-manager-registration-webhook
  Work:
    Controller:	(2/0) flotilla:cluster-manager-work-controller
    Webhook:	(2/0) flotilla:cluster-manager-work-webhook
  Placement:
    Controller:	(2/0) flotilla:cluster-manager-placement-controller
  CustomResourceDefinition:
    (installed) clustermanagers.operator.open-cluster-management.io [*v1]
    (absent) nothere.example.com []
`))
	}, SpecTimeout(time.Minute))

	It("print a Singleton klusterlet's agent, and fail on a Default one that lists none", func(ctx SpecContext) {
		deployment(ctx, "open-cluster-management", "klusterlet", "klusterlet", "flotilla:klusterlet")
		deployment(ctx, "open-cluster-management-agent", "klusterlet-agent", "klusterlet", "flotilla:agent")
		k := &operatorv1.Klusterlet{ObjectMeta: metav1.ObjectMeta{Name: "klusterlet"},
			Spec: operatorv1.KlusterletSpec{DeployOption: operatorv1.KlusterletDeployOption{Mode: operatorv1.InstallModeSingleton}}}
		Expect(c.Create(ctx, k)).To(Succeed())
		at := metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
		k.Status.Conditions = []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue, Reason: "KlusterletAvailable", Message: "ok", LastTransitionTime: at}}
		k.Status.RelatedResources = []operatorv1.RelatedResourceMeta{related("open-cluster-management-agent", "klusterlet-agent"), crd(environment.KlusterletCRD)}
		Expect(c.Status().Update(ctx, k)).To(Succeed())
		Expect(clusteradmview.KlusterletInfo(ctx, hub.Config)).To(Equal(`Klusterlet Conditions:
  Type:			Available
  Status:		True
  LastTransitionTime:	2026-11-27 12:00:00 +0000 UTC
  Reason:		KlusterletAvailable
  Message:		ok

Registration Operator:
  Controller:	(0/2) flotilla:klusterlet
  CustomResourceDefinition:
    (installed) klusterlets.operator.open-cluster-management.io
Components:
  Controller:
    Agent:	(2/0) flotilla:agent
  CustomResourceDefinition:
    (installed) klusterlets.operator.open-cluster-management.io [*v1]
`))
		k.Spec.DeployOption.Mode = operatorv1.InstallModeDefault
		Expect(c.Update(ctx, k)).To(Succeed())
		_, err := clusteradmview.KlusterletInfo(ctx, hub.Config)
		Expect(err).To(MatchError(ContainSubstring("resource name may not be empty")), "klusterlet-registration-agent is not listed")
	}, SpecTimeout(time.Minute))
})
