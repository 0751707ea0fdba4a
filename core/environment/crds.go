package environment

import (
	"context"
	"fmt"

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
