package v1alpha1

// Annotations on ClusterManagementAddOn.
const (
	// AddonLifecycleAnnotationKey says who installs and upgrades the add-on:
	// "addon-manager" (the hub's generic add-on manager, honouring installStrategy
	// and rollout strategies) or "self" (the add-on's own manager). Unset means self.
	AddonLifecycleAnnotationKey = "addon.open-cluster-management.io/lifecycle"
	// AddonLifecycleAddonManagerAnnotationValue hands the lifecycle to the hub's
	// add-on manager.
	AddonLifecycleAddonManagerAnnotationValue = "addon-manager"
	// AddonLifecycleSelfManageAnnotationValue keeps the lifecycle with the add-on;
	// the generic add-on manager ignores it.
	AddonLifecycleSelfManageAnnotationValue = "self"
)

// Labels and annotations on ManagedClusterAddOn and on hub objects of an add-on.
const (
	// AddonLabelKey carries the add-on name on hub resources of an add-on, such as
	// its ManifestWorks.
	AddonLabelKey = "open-cluster-management.io/addon-name"
	// AddonNamespaceLabelKey carries the namespace of the ManagedClusterAddOn.
	AddonNamespaceLabelKey = "open-cluster-management.io/addon-namespace"
	// DisableAddonAutomaticInstallationAnnotationKey on a ManagedClusterAddOn turns
	// automatic installation off for it.
	DisableAddonAutomaticInstallationAnnotationKey = "addon.open-cluster-management.io/disable-automatic-installation"
	// HostingClusterNameAnnotationKey on a ManagedClusterAddOn names the hosting
	// cluster of a hosted-mode add-on.
	HostingClusterNameAnnotationKey = "addon.open-cluster-management.io/hosting-cluster-name"
)

// Labels and annotations on the manifests of an add-on agent.
const (
	// AddonPreDeleteHookLabelKey marks a manifest as pre-delete hook.
	//
	// Deprecated: use AddonPreDeleteHookAnnotationKey.
	AddonPreDeleteHookLabelKey = "open-cluster-management.io/addon-pre-delete"
	// AddonPreDeleteHookAnnotationKey marks a manifest created, and completed,
	// before the ManagedClusterAddOn is deleted.
	AddonPreDeleteHookAnnotationKey = "addon.open-cluster-management.io/addon-pre-delete"
	// DeletionOrphanAnnotationKey keeps a manifest's object after the add-on is deleted.
	DeletionOrphanAnnotationKey = "addon.open-cluster-management.io/deletion-orphan"
	// HostedManifestLocationLabelKey says where a manifest goes in hosted mode.
	//
	// Deprecated: use HostedManifestLocationAnnotationKey.
	HostedManifestLocationLabelKey = "addon.open-cluster-management.io/hosted-manifest-location"
	// HostedManifestLocationAnnotationKey says where a manifest goes in hosted mode;
	// one of the HostedManifestLocation*Value constants.
	HostedManifestLocationAnnotationKey = "addon.open-cluster-management.io/hosted-manifest-location"
	// HostedManifestLocationManagedValue deploys on the managed cluster (default).
	HostedManifestLocationManagedValue = "managed"
	// HostedManifestLocationHostingValue deploys on the hosting cluster.
	HostedManifestLocationHostingValue = "hosting"
	// HostedManifestLocationNoneValue does not deploy the manifest in hosted mode.
	HostedManifestLocationNoneValue = "none"
)

// Finalizers on ManagedClusterAddOn.
const (
	// AddonPreDeleteHookFinalizer holds the add-on until its pre-delete hooks ran.
	AddonPreDeleteHookFinalizer = "addon.open-cluster-management.io/addon-pre-delete"
	// AddonHostingPreDeleteHookFinalizer holds the add-on until its pre-delete hooks
	// on the hosting cluster ran.
	AddonHostingPreDeleteHookFinalizer = "addon.open-cluster-management.io/hosting-addon-pre-delete"
	// AddonHostingManifestFinalizer holds the add-on until its manifests on the
	// hosting cluster are removed.
	AddonHostingManifestFinalizer = "addon.open-cluster-management.io/hosting-manifests-cleanup"

	// AddonDeprecatedPreDeleteHookFinalizer is the former AddonPreDeleteHookFinalizer.
	//
	// Deprecated: use AddonPreDeleteHookFinalizer.
	AddonDeprecatedPreDeleteHookFinalizer = "cluster.open-cluster-management.io/addon-pre-delete"
	// AddonDeprecatedHostingPreDeleteHookFinalizer is the former
	// AddonHostingPreDeleteHookFinalizer.
	//
	// Deprecated: use AddonHostingPreDeleteHookFinalizer.
	AddonDeprecatedHostingPreDeleteHookFinalizer = "cluster.open-cluster-management.io/hosting-addon-pre-delete"
	// AddonDeprecatedHostingManifestFinalizer is the former
	// AddonHostingManifestFinalizer.
	//
	// Deprecated: use AddonHostingManifestFinalizer.
	AddonDeprecatedHostingManifestFinalizer = "cluster.open-cluster-management.io/hosting-manifests-cleanup"
)

// Condition types on ManagedClusterAddOn.
const (
	// ManagedClusterAddOnConditionAvailable: the agent is running.
	ManagedClusterAddOnConditionAvailable = "Available"
	// ManagedClusterAddOnConditionDegraded: the agent serves in a degraded way.
	ManagedClusterAddOnConditionDegraded = "Degraded"
	// ManagedClusterAddOnConditionProgressing: configurations are being applied.
	ManagedClusterAddOnConditionProgressing = "Progressing"
	// ManagedClusterAddOnConditionConfigured: the agent is configured.
	//
	// Deprecated: use ManagedClusterAddOnConditionProgressing.
	ManagedClusterAddOnConditionConfigured = "Configured"
	// ManagedClusterAddOnManifestApplied: the agent manifests were applied.
	ManagedClusterAddOnManifestApplied = "ManifestApplied"
	// ManagedClusterAddOnHookManifestCompleted: the pre-delete hook finished.
	ManagedClusterAddOnHookManifestCompleted = "HookManifestCompleted"
	// ManagedClusterAddOnHostingManifestApplied: the hosting-cluster manifests were
	// applied.
	ManagedClusterAddOnHostingManifestApplied = "HostingManifestApplied"
	// ManagedClusterAddOnHostingClusterValidity: the hosting cluster is valid.
	ManagedClusterAddOnHostingClusterValidity = "HostingClusterValidity"
	// ManagedClusterAddOnRegistrationApplied: the agent's registration (RBAC) is set up.
	ManagedClusterAddOnRegistrationApplied = "RegistrationApplied"
)

// Reasons of the Available condition.
const (
	AddonAvailableReasonWorkNotFound       = "WorkNotFound"
	AddonAvailableReasonWorkApplyFailed    = "WorkApplyFailed"
	AddonAvailableReasonWorkNotApply       = "WorkNotApplied"
	AddonAvailableReasonWorkApply          = "WorkApplied"
	AddonAvailableReasonNoProbeResult      = "NoProbeResult"
	AddonAvailableReasonProbeUnavailable   = "ProbeUnavailable"
	AddonAvailableReasonProbeAvailable     = "ProbeAvailable"
	AddonAvailableReasonLeaseUpdateStopped = "ManagedClusterAddOnLeaseUpdateStopped"
	AddonAvailableReasonLeaseLeaseNotFound = "ManagedClusterAddOnLeaseNotFound"
	AddonAvailableReasonLeaseLeaseUpdated  = "ManagedClusterAddOnLeaseUpdated"
)

// Reasons of the ManifestApplied condition.
const (
	AddonManifestAppliedReasonWorkApplyFailed      = "ManifestWorkApplyFailed"
	AddonManifestAppliedReasonManifestsApplied     = "AddonManifestApplied"
	AddonManifestAppliedReasonManifestsApplyFailed = "AddonManifestAppliedFailed"
)

// Reasons of the HostingClusterValidity condition.
const (
	HostingClusterValidityReasonValid   = "HostingClusterValid"
	HostingClusterValidityReasonInvalid = "HostingClusterInvalid"
)

// Reasons of the Progressing condition (also used on install progressions).
const (
	ProgressingReasonProgressing              = "Progressing"
	ProgressingReasonCompleted                = "Completed"
	ProgressingReasonFailed                   = "Failed"
	ProgressingReasonWaitingForCanary         = "WaitingForCanary"
	ProgressingReasonConfigurationUnsupported = "ConfigurationUnsupported"

	// Reasons of earlier OCM releases, still found in documented objects (e.g. a
	// "1/3 upgrading" install progression with reason Upgrading).
	ProgressingReasonInstalling     = "Installing"
	ProgressingReasonInstallSucceed = "InstallSucceed"
	ProgressingReasonInstallFailed  = "InstallFailed"
	ProgressingReasonUpgrading      = "Upgrading"
	ProgressingReasonUpgradeSucceed = "UpgradeSucceed"
	ProgressingReasonUpgradeFailed  = "UpgradeFailed"
)

// Reasons of the RegistrationApplied condition.
const (
	RegistrationAppliedNilRegistration      = "NilRegistration"
	RegistrationAppliedSetPermissionFailed  = "SetPermissionFailed"
	RegistrationAppliedSetPermissionApplied = "SetPermissionApplied"
)
