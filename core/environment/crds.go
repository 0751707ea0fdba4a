package environment

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/crds"
)

// CRDs a klusterlet serves on its managed cluster (the OCM klusterlet installs them there).
const (
	ClusterClaimCRD        = "clusterclaims.cluster.open-cluster-management.io"
	AppliedManifestWorkCRD = "appliedmanifestworks.work.open-cluster-management.io"
)

// ManagedClusterCRDs are the CRDs Start installs on every managed cluster by default.
var ManagedClusterCRDs = []string{ClusterClaimCRD, AppliedManifestWorkCRD}

// installCRDs installs the CRDs the options ask for and waits until they are established.
func (cp *ControlPlane) installCRDs(ctx context.Context) error {
	if cp.opts.AllCRDs {
		if err := crds.Install(ctx, cp.Config); err != nil {
			return fmt.Errorf("installing core/crds: %w", err)
		}
	}
	if len(cp.opts.CRDs) == 0 {
		return nil
	}
	all, err := crds.Objects()
	if err != nil {
		return fmt.Errorf("reading core/crds: %w", err)
	}
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range all {
		byName[crd.Name] = crd
	}
	var selected []*apiextensionsv1.CustomResourceDefinition
	for _, name := range cp.opts.CRDs {
		crd, ok := byName[name]
		if !ok {
			known := make([]string, 0, len(byName))
			for n := range byName {
				known = append(known, n)
			}
			sort.Strings(known)
			return fmt.Errorf("control plane %s: CRDs: core/crds has no CustomResourceDefinition %q (it has: %s)", cp.Name, name, strings.Join(known, ", "))
		}
		selected = append(selected, crd)
	}
	return applyCRDs(ctx, cp.Config, selected)
}

// applyCRDs server-side-applies crdList and waits until each is Established.
func applyCRDs(ctx context.Context, cfg *rest.Config, crdList []*apiextensionsv1.CustomResourceDefinition) error {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("building CRD client: %w", err)
	}
	for _, crd := range crdList {
		crd = crd.DeepCopy()
		crd.APIVersion = apiextensionsv1.SchemeGroupVersion.String()
		crd.Kind = "CustomResourceDefinition"
		if err := c.Patch(ctx, crd, client.Apply, client.FieldOwner(crds.FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying CustomResourceDefinition %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crdList {
		name := crd.Name
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CustomResourceDefinition %s to be established: %w", name, err)
		}
	}
	return nil
}
