package environment

import (
	"context"
	"fmt"

	"github.com/flotilla-dev/flotilla/core/crds"
)

// CRDs a managed cluster serves: ClusterClaim and AppliedManifestWork (the OCM klusterlet
// installs them there), Klusterlet (OCM's klusterlet operator API, which describes the
// agent of that cluster) and WasmPlugin (the klusterlet's status-feedback plugins).
const (
	ClusterClaimCRD        = "clusterclaims.cluster.open-cluster-management.io"
	AppliedManifestWorkCRD = "appliedmanifestworks.work.open-cluster-management.io"
	KlusterletCRD          = "klusterlets.operator.open-cluster-management.io"
	WasmPluginCRD          = "wasmplugins.flotilla.dev"
)

// ClusterManagerCRD is OCM's cluster manager operator API. It belongs to the hub, which
// gets every core/crds CRD; it is named here for callers that install CRDs one by one.
const ClusterManagerCRD = "clustermanagers.operator.open-cluster-management.io"

// ManagedClusterCRDs are the CRDs Start installs on every managed cluster by default.
var ManagedClusterCRDs = []string{ClusterClaimCRD, AppliedManifestWorkCRD, KlusterletCRD, WasmPluginCRD}

// installCRDs installs the CRDs the options ask for and waits until they are established.
func (cp *ControlPlane) installCRDs(ctx context.Context) error {
	if cp.opts.AllCRDs {
		if err := crds.Install(ctx, cp.Config); err != nil {
			return fmt.Errorf("control plane %s: installing core/crds: %w", cp.Name, err)
		}
	}
	if len(cp.opts.CRDs) == 0 {
		return nil
	}
	if err := crds.InstallNamed(ctx, cp.Config, cp.opts.CRDs...); err != nil {
		return fmt.Errorf("control plane %s: CRDs: %w", cp.Name, err)
	}
	return nil
}
