// Package clusteradmview answers, for tests, what OCM's `clusteradm get hub-info` and
// `clusteradm get klusterlet-info` print against a cluster, or the error they fail with.
//
// The module proxy refuses open-cluster-management.io modules, so clusteradm cannot be
// built here. This package repeats exactly its lookups, read from clusteradm@b75b40c
// (pkg/cmd/get/hubinfo/exec.go, pkg/cmd/get/klusterletinfo/exec.go,
// pkg/helpers/printer/tree.go, pkg/helpers/check/check.go), with client-go's typed clients
// as clusteradm uses them, so a lookup that fails there fails here with the same error. No
// code is copied. One difference: clusteradm prints a component's CRD lines in map order
// (random); this package sorts them by name.
package clusteradmview

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
)

// The names clusteradm looks for (hubinfo and klusterletinfo exec.go).
const (
	operatorNamespace  = "open-cluster-management"
	clusterManagerName = "cluster-manager"
	clusterManagerCRD  = "clustermanagers.operator.open-cluster-management.io"
	klusterletName     = "klusterlet"
	klusterletCRD      = "klusterlets.operator.open-cluster-management.io"
)

// HubComponents are the related-resource names `get hub-info` looks up, in its order.
var HubComponents = []string{
	"cluster-manager-addon-manager-controller",
	"cluster-manager-registration-controller",
	"cluster-manager-registration-webhook",
	"cluster-manager-work-controller",
	"cluster-manager-work-webhook",
	"cluster-manager-placement-controller",
}

type clients struct {
	kube kubernetes.Interface
	crds apiextensionsclient.Interface
	// dyn reads the operator kinds by resource, without a REST mapping, so a missing CRD is
	// the 404 clusteradm's typed client gets.
	dyn dynamic.Interface
}

func newClients(cfg *rest.Config) (*clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{kube: kube, crds: crds, dyn: dyn}, nil
}

// get reads the cluster-scoped operator object resource/name into into.
func (c *clients) get(ctx context.Context, resource, name string, into any) error {
	u, err := c.dyn.Resource(operatorv1.GroupVersion.WithResource(resource)).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// printer indents by two spaces a level, as clusteradm's PrefixWriter does.
type printer struct{ b strings.Builder }

func (p *printer) write(level int, format string, a ...any) {
	p.b.WriteString(strings.Repeat("  ", level))
	fmt.Fprintf(&p.b, format, a...)
}

// HubInfo returns what `clusteradm get hub-info` prints against cfg, or its error.
func HubInfo(ctx context.Context, cfg *rest.Config) (string, error) {
	c, err := newClients(cfg)
	if err != nil {
		return "", err
	}
	// check.CheckForHub: discovery of cluster.open-cluster-management.io/v1 lists managedclusters.
	if err := c.servesResource(clusterv1.GroupVersion.String(), "managedclusters",
		"hub oriented command should not running against non-hub cluster"); err != nil {
		return "", err
	}
	p := &printer{}
	found, err := c.printOperator(ctx, p, clusterManagerName, "registration-operator")
	if err != nil {
		return p.b.String(), err
	}
	if found {
		p.write(1, "CustomResourceDefinition:\n")
		list, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx,
			metav1.ListOptions{FieldSelector: "metadata.name=" + clusterManagerCRD})
		if err != nil && !apierrors.IsNotFound(err) {
			return p.b.String(), err
		}
		c.printCRDs(p, list, []operatorv1.RelatedResourceMeta{{Resource: "customresourcedefinitions", Name: clusterManagerCRD}})
	}
	cm := &operatorv1.ClusterManager{}
	if err := c.get(ctx, "clustermanagers", clusterManagerName, cm); err != nil {
		if !apierrors.IsNotFound(err) {
			return p.b.String(), err
		}
		p.write(0, "Components:\t<uninstalled>\n")
		return p.b.String(), nil
	}
	p.write(0, "Components:\n")
	related := cm.Status.RelatedResources
	if a := cm.Spec.AddOnManagerConfiguration; a == nil || enabled(a.FeatureGates, "AddonManagement") {
		p.write(1, "AddOn Manager:\n")
		if err := c.printDeployment(ctx, p, related, HubComponents[0]); err != nil {
			return p.b.String(), err
		}
	}
	p.write(1, "Registration:\n")
	for _, n := range HubComponents[1:3] {
		if err := c.printDeployment(ctx, p, related, n); err != nil {
			return p.b.String(), err
		}
	}
	p.write(1, "Work:\n")
	if w := cm.Spec.WorkConfiguration; w != nil && enabled(w.FeatureGates, "ManifestWorkReplicaSet") {
		if err := c.printDeployment(ctx, p, related, HubComponents[3]); err != nil {
			return p.b.String(), err
		}
	}
	if err := c.printDeployment(ctx, p, related, HubComponents[4]); err != nil {
		return p.b.String(), err
	}
	p.write(1, "Placement:\n")
	if err := c.printDeployment(ctx, p, related, HubComponents[5]); err != nil {
		return p.b.String(), err
	}
	p.write(1, "CustomResourceDefinition:\n")
	list, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return p.b.String(), err
	}
	c.printCRDs(p, list, related)
	return p.b.String(), nil
}

// KlusterletInfo returns what `clusteradm get klusterlet-info` prints against cfg (the
// managed cluster), or its error.
func KlusterletInfo(ctx context.Context, cfg *rest.Config) (string, error) {
	c, err := newClients(cfg)
	if err != nil {
		return "", err
	}
	// check.CheckForManagedCluster: discovery of cluster.open-cluster-management.io/v1alpha1 lists clusterclaims.
	if err := c.servesResource(clusterv1alpha1.GroupVersion.String(), "clusterclaims",
		"managed cluster oriented command should not running against non-managed cluster"); err != nil {
		return "", err
	}
	p := &printer{}
	k := &operatorv1.Klusterlet{}
	if err := c.get(ctx, "klusterlets", klusterletName, k); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", err
		}
		p.write(0, "No klusterlet detected! Please make sure you're using the correct context!\n")
		return p.b.String(), nil
	}
	p.write(0, "Klusterlet Conditions:\n")
	for _, cond := range k.Status.Conditions {
		p.write(1, "Type:\t\t\t%v\n", cond.Type)
		p.write(1, "Status:\t\t%v\n", cond.Status)
		p.write(1, "LastTransitionTime:\t%v\n", cond.LastTransitionTime)
		p.write(1, "Reason:\t\t%v\n", cond.Reason)
		p.write(1, "Message:\t\t%v\n", cond.Message)
		p.write(0, "\n")
	}
	found, err := c.printOperator(ctx, p, klusterletName, "klusterlet")
	if err != nil {
		return p.b.String(), err
	}
	if found {
		// clusteradm's typed Get returns a non-nil object even on NotFound, so it always
		// prints "installed" here; repeated as it is.
		if _, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, klusterletCRD, metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return p.b.String(), err
		}
		p.write(1, "CustomResourceDefinition:\n")
		p.write(2, "(installed) %s\n", klusterletCRD)
	}
	p.write(0, "Components:\n")
	related := k.Status.RelatedResources
	switch k.Spec.DeployOption.Mode {
	case operatorv1.InstallModeSingleton, operatorv1.InstallModeSingletonHosted:
		p.write(1, "Controller:\n")
		if err := c.printDeployment(ctx, p, related, "klusterlet-agent"); err != nil {
			return p.b.String(), err
		}
	default:
		p.write(1, "Registration:\n")
		if err := c.printDeployment(ctx, p, related, "klusterlet-registration-agent"); err != nil {
			return p.b.String(), err
		}
		p.write(1, "Work:\n")
		if err := c.printDeployment(ctx, p, related, "klusterlet-work-agent"); err != nil {
			return p.b.String(), err
		}
	}
	p.write(1, "CustomResourceDefinition:\n")
	list, err := c.crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return p.b.String(), err
	}
	c.printCRDs(p, list, related)
	return p.b.String(), nil
}

// servesResource is check.CheckForHub/CheckForManagedCluster: a NotFound group version
// gives msg, another failure its own error.
func (c *clients) servesResource(gv, resource, msg string) error {
	list, err := c.kube.Discovery().ServerResourcesForGroupVersion(gv)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return errors.New(msg)
		}
		return fmt.Errorf("failed to list GroupVersion %s: %s", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return nil
		}
	}
	return errors.New(msg)
}

// printOperator prints the operator Deployment open-cluster-management/name, taking the
// image of the container named container.
func (c *clients) printOperator(ctx context.Context, p *printer, name, container string) (found bool, err error) {
	d, err := c.kube.AppsV1().Deployments(operatorNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		p.write(0, "Registration Operator:\t<none>\n")
		return false, nil
	}
	image := "<none>"
	for _, ct := range d.Spec.Template.Spec.Containers {
		if ct.Name == container {
			image = ct.Image
		}
	}
	p.write(0, "Registration Operator:\n")
	p.write(1, "Controller:\t(%d/%d) %s\n", d.Status.AvailableReplicas, *d.Spec.Replicas, image)
	return true, nil
}

// printDeployment is printer.PrintComponentsDeploy: the related resource is found by name
// alone (the last match wins); with none, the Get has an empty name and fails, failing the
// command. A related Deployment that is not there prints nothing.
func (c *clients) printDeployment(ctx context.Context, p *printer, related []operatorv1.RelatedResourceMeta, name string) error {
	var r operatorv1.RelatedResourceMeta
	for _, item := range related {
		if item.Name == name {
			r = item
		}
	}
	d, err := c.kube.AppsV1().Deployments(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}
	pre := ""
	switch {
	case strings.HasSuffix(name, "agent"):
		pre = "Agent:"
	case strings.HasSuffix(name, "controller"):
		pre = "Controller:"
	case strings.HasSuffix(name, "webhook"):
		pre = "Webhook:"
	}
	p.write(2, "%s\t(%d/%d) %s\n", pre, *d.Spec.Replicas, d.Status.AvailableReplicas, lastImage(d))
	return nil
}

func lastImage(d *appsv1.Deployment) string {
	image := "<none>"
	for _, ct := range d.Spec.Template.Spec.Containers {
		image = ct.Image
	}
	return image
}

// printCRDs is printer.printCRD: each related CRD as installed or absent, with its served
// versions sorted and the storage version starred.
func (c *clients) printCRDs(p *printer, list *apiextensionsv1.CustomResourceDefinitionList, related []operatorv1.RelatedResourceMeta) {
	versions := map[string]string{}
	for _, crd := range list.Items {
		served := crd.Status.StoredVersions
		if len(crd.Spec.Versions) > 0 {
			served = nil
			for _, v := range crd.Spec.Versions {
				if !v.Served {
					continue
				}
				if v.Storage {
					served = append(served, "*"+v.Name)
				} else {
					served = append(served, v.Name)
				}
			}
		}
		slices.Sort(served)
		versions[crd.Name] = strings.Join(slices.Compact(served), "|")
	}
	var names []string
	for _, r := range related {
		if r.Resource == "customresourcedefinitions" {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		v, ok := versions[n]
		state := "absent"
		if ok {
			state = "installed"
		}
		p.write(2, "(%s) %s [%s]\n", state, n, v)
	}
}

func enabled(gates []operatorv1.FeatureGate, feature string) bool {
	return slices.ContainsFunc(gates, func(g operatorv1.FeatureGate) bool {
		return g.Feature == feature && g.Mode == operatorv1.FeatureGateModeTypeEnable
	})
}

// SplitHubInfo is how HubInfo's output begins on a hub whose operator and six components
// (topology Split) run one available replica each, all of image: the operator, every
// component (the work-controller only when the ClusterManager enables ManifestWorkReplicaSet,
// as clusteradm shows it), up to the CRD list.
func SplitHubInfo(image string, workController bool) string {
	p := &printer{}
	line := func(level int, kind string) { p.write(level, "%s\t(1/1) %s\n", kind, image) }
	p.write(0, "Registration Operator:\n")
	line(1, "Controller:")
	p.write(1, "CustomResourceDefinition:\n")
	p.write(2, "(installed) %s [*v1]\n", clusterManagerCRD)
	p.write(0, "Components:\n")
	p.write(1, "AddOn Manager:\n")
	line(2, "Controller:")
	p.write(1, "Registration:\n")
	line(2, "Controller:")
	line(2, "Webhook:")
	p.write(1, "Work:\n")
	if workController {
		line(2, "Controller:")
	}
	line(2, "Webhook:")
	p.write(1, "Placement:\n")
	line(2, "Controller:")
	p.write(1, "CustomResourceDefinition:\n")
	return p.b.String()
}

// SingletonKlusterletInfo is what KlusterletInfo prints, after the Klusterlet's conditions,
// on a managed cluster whose klusterlet operator (of image operatorImage) and Singleton agent
// klusterlet-agent (of image agentImage) run one available replica each, up to the CRD list.
func SingletonKlusterletInfo(operatorImage, agentImage string) string {
	p := &printer{}
	p.write(0, "Registration Operator:\n")
	p.write(1, "Controller:\t(1/1) %s\n", operatorImage)
	p.write(1, "CustomResourceDefinition:\n")
	p.write(2, "(installed) %s\n", klusterletCRD)
	p.write(0, "Components:\n")
	p.write(1, "Controller:\n")
	p.write(2, "Agent:\t(1/1) %s\n", agentImage)
	p.write(1, "CustomResourceDefinition:\n")
	return p.b.String()
}
