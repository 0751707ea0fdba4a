package v1beta1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
)

// Conversion between v1alpha1 (the storage version) and v1beta1. Every field of either
// version survives a round trip through the other:
//
//   - Fields with a counterpart are mapped as OCM maps them (supportedConfigs and
//     defaultConfigs, signer names and registration types, status.kubeClientDriver and
//     kubeClient.driver, the install namespace and InstallNamespaceAnnotation).
//   - What a version cannot express (a deprecated v1alpha1 field, an organization unit of
//     a kube-apiserver client, a v1beta1 registration without its configuration, ...)
//     travels in an annotation of the converted object, one per group of fields, named
//     ConversionAnnotationPrefix + "<version it came from>-<group>". The value is JSON:
//     {"of": <fingerprint of the group as converted>, "value": <the group as it was>}.
//     Converting back restores the group from it and removes it, unless the group was
//     changed in between (the fingerprint differs): then the change wins and the plain
//     mapping applies.
//
// The annotation keys are reserved: an object of the version they come from that sets one
// itself is outside the guarantee.

const (
	// InstallNamespaceAnnotation holds, on a v1beta1 ManagedClusterAddOn, the
	// spec.installNamespace of v1alpha1 (OCM's annotation).
	InstallNamespaceAnnotation = "addon.open-cluster-management.io/v1alpha1-install-namespace"

	// ReservedNoDefaultConfigName is the name a v1beta1 ClusterManagementAddOn's
	// defaultConfigs entry carries for a v1alpha1 supportedConfigs entry without a
	// defaultConfig (OCM's sentinel; not a valid object name).
	ReservedNoDefaultConfigName = "__reserved_no_default__"

	// ConversionAnnotationPrefix starts the annotations that carry, across a conversion,
	// fields the other version has no place for.
	ConversionAnnotationPrefix = "conversion.flotilla.dev/"

	// Annotations on v1beta1 objects carrying v1alpha1 fields.

	// AddOnConfigurationAnnotation: the deprecated spec.addOnConfiguration of a
	// ClusterManagementAddOn or status.addOnConfiguration of a ManagedClusterAddOn.
	AddOnConfigurationAnnotation = ConversionAnnotationPrefix + "v1alpha1-addon-configuration"
	// SupportedConfigsAnnotation: spec.supportedConfigs of a ClusterManagementAddOn that
	// spec.defaultConfigs cannot express.
	SupportedConfigsAnnotation = ConversionAnnotationPrefix + "v1alpha1-supported-configs"
	// V1alpha1ConfigReferencesAnnotation: status.configReferences of a
	// ManagedClusterAddOn whose deprecated name and namespace differ from desiredConfig.
	V1alpha1ConfigReferencesAnnotation = ConversionAnnotationPrefix + "v1alpha1-config-references"
	// V1alpha1RegistrationsAnnotation: status.registrations and status.kubeClientDriver
	// of a ManagedClusterAddOn that v1beta1 registrations cannot express (organization
	// units of a kube-apiserver client, a driver without a kube-apiserver client).
	V1alpha1RegistrationsAnnotation = ConversionAnnotationPrefix + "v1alpha1-registrations"

	// Annotations on v1alpha1 objects carrying v1beta1 fields.

	// DefaultConfigsAnnotation: spec.defaultConfigs of a ClusterManagementAddOn that
	// spec.supportedConfigs cannot express.
	DefaultConfigsAnnotation = ConversionAnnotationPrefix + "v1beta1-default-configs"
	// V1beta1ConfigReferencesAnnotation: status.configReferences of a
	// ManagedClusterAddOn that v1alpha1 cannot express.
	V1beta1ConfigReferencesAnnotation = ConversionAnnotationPrefix + "v1beta1-config-references"
	// V1beta1RegistrationsAnnotation: status.registrations of a ManagedClusterAddOn that
	// v1alpha1 cannot express (a registration without its configuration, several
	// drivers, a custom signer named kubernetes.io/kube-apiserver-client, ...).
	V1beta1RegistrationsAnnotation = ConversionAnnotationPrefix + "v1beta1-registrations"
)

// Convert converts an add-on object of one version to the other: a *v1alpha1.X to a
// *v1beta1.X and back, for the four kinds. in is not modified.
func Convert(in runtime.Object) (runtime.Object, error) {
	switch o := in.(type) {
	case *v1alpha1.ClusterManagementAddOn:
		return ClusterManagementAddOnFromV1alpha1(o)
	case *ClusterManagementAddOn:
		return ClusterManagementAddOnToV1alpha1(o)
	case *v1alpha1.ManagedClusterAddOn:
		return ManagedClusterAddOnFromV1alpha1(o)
	case *ManagedClusterAddOn:
		return ManagedClusterAddOnToV1alpha1(o)
	case *v1alpha1.AddOnDeploymentConfig:
		return AddOnDeploymentConfigFromV1alpha1(o), nil
	case *AddOnDeploymentConfig:
		return AddOnDeploymentConfigToV1alpha1(o), nil
	case *v1alpha1.AddOnTemplate:
		return AddOnTemplateFromV1alpha1(o), nil
	case *AddOnTemplate:
		return AddOnTemplateToV1alpha1(o), nil
	default:
		return nil, fmt.Errorf("no conversion for %T", in)
	}
}

// ClusterManagementAddOnFromV1alpha1 converts a v1alpha1 ClusterManagementAddOn.
func ClusterManagementAddOnFromV1alpha1(in *v1alpha1.ClusterManagementAddOn) (*ClusterManagementAddOn, error) {
	out := &ClusterManagementAddOn{TypeMeta: typeMeta(in.TypeMeta, GroupVersion.String())}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	ann := annotations(in.Annotations)
	var err error
	out.Spec.AddOnMeta = AddOnMeta(in.Spec.AddOnMeta)
	if _, err = convertGroup(ann, in.Spec.AddOnConfiguration, "", AddOnConfigurationAnnotation,
		dropped[v1alpha1.ConfigCoordinates], restoredNothing[v1alpha1.ConfigCoordinates]); err != nil {
		return nil, err
	}
	if out.Spec.DefaultConfigs, err = convertGroup(ann, in.Spec.SupportedConfigs, DefaultConfigsAnnotation, SupportedConfigsAnnotation,
		defaultConfigsFrom, supportedConfigsFrom); err != nil {
		return nil, err
	}
	out.Spec.InstallStrategy = InstallStrategy{
		Type: in.Spec.InstallStrategy.Type,
		Placements: convertSlice(in.Spec.InstallStrategy.Placements, func(p *v1alpha1.PlacementStrategy) PlacementStrategy {
			return PlacementStrategy{
				PlacementRef:    PlacementRef(p.PlacementRef),
				Configs:         convertSlice(p.Configs, addOnConfigFrom),
				RolloutStrategy: *p.RolloutStrategy.DeepCopy(),
			}
		}),
	}
	out.Status.DefaultConfigReferences = convertSlice(in.Status.DefaultConfigReferences, func(r *v1alpha1.DefaultConfigReference) DefaultConfigReference {
		return DefaultConfigReference{ConfigGroupResource: ConfigGroupResource(r.ConfigGroupResource), DesiredConfig: specHashFrom(r.DesiredConfig)}
	})
	out.Status.InstallProgressions = convertSlice(in.Status.InstallProgressions, func(p *v1alpha1.InstallProgression) InstallProgression {
		return InstallProgression{
			PlacementRef: PlacementRef(p.PlacementRef),
			ConfigReferences: convertSlice(p.ConfigReferences, func(r *v1alpha1.InstallConfigReference) InstallConfigReference {
				return InstallConfigReference{
					ConfigGroupResource: ConfigGroupResource(r.ConfigGroupResource),
					DesiredConfig:       specHashFrom(r.DesiredConfig),
					LastKnownGoodConfig: specHashFrom(r.LastKnownGoodConfig),
					LastAppliedConfig:   specHashFrom(r.LastAppliedConfig),
				}
			}),
			Conditions: copyConditions(p.Conditions),
		}
	})
	out.Annotations = finish(ann)
	return out, nil
}

// ClusterManagementAddOnToV1alpha1 converts a v1beta1 ClusterManagementAddOn.
func ClusterManagementAddOnToV1alpha1(in *ClusterManagementAddOn) (*v1alpha1.ClusterManagementAddOn, error) {
	out := &v1alpha1.ClusterManagementAddOn{TypeMeta: typeMeta(in.TypeMeta, v1alpha1.GroupVersion.String())}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	ann := annotations(in.Annotations)
	var err error
	out.Spec.AddOnMeta = v1alpha1.AddOnMeta(in.Spec.AddOnMeta)
	if out.Spec.AddOnConfiguration, err = convertGroup(ann, struct{}{}, AddOnConfigurationAnnotation, "",
		restoredNothing[v1alpha1.ConfigCoordinates], dropped[v1alpha1.ConfigCoordinates]); err != nil {
		return nil, err
	}
	if out.Spec.SupportedConfigs, err = convertGroup(ann, in.Spec.DefaultConfigs, SupportedConfigsAnnotation, DefaultConfigsAnnotation,
		supportedConfigsFrom, defaultConfigsFrom); err != nil {
		return nil, err
	}
	out.Spec.InstallStrategy = v1alpha1.InstallStrategy{
		Type: in.Spec.InstallStrategy.Type,
		Placements: convertSlice(in.Spec.InstallStrategy.Placements, func(p *PlacementStrategy) v1alpha1.PlacementStrategy {
			return v1alpha1.PlacementStrategy{
				PlacementRef:    v1alpha1.PlacementRef(p.PlacementRef),
				Configs:         convertSlice(p.Configs, addOnConfigTo),
				RolloutStrategy: *p.RolloutStrategy.DeepCopy(),
			}
		}),
	}
	out.Status.DefaultConfigReferences = convertSlice(in.Status.DefaultConfigReferences, func(r *DefaultConfigReference) v1alpha1.DefaultConfigReference {
		return v1alpha1.DefaultConfigReference{ConfigGroupResource: v1alpha1.ConfigGroupResource(r.ConfigGroupResource), DesiredConfig: specHashTo(r.DesiredConfig)}
	})
	out.Status.InstallProgressions = convertSlice(in.Status.InstallProgressions, func(p *InstallProgression) v1alpha1.InstallProgression {
		return v1alpha1.InstallProgression{
			PlacementRef: v1alpha1.PlacementRef(p.PlacementRef),
			ConfigReferences: convertSlice(p.ConfigReferences, func(r *InstallConfigReference) v1alpha1.InstallConfigReference {
				return v1alpha1.InstallConfigReference{
					ConfigGroupResource: v1alpha1.ConfigGroupResource(r.ConfigGroupResource),
					DesiredConfig:       specHashTo(r.DesiredConfig),
					LastKnownGoodConfig: specHashTo(r.LastKnownGoodConfig),
					LastAppliedConfig:   specHashTo(r.LastAppliedConfig),
				}
			}),
			Conditions: copyConditions(p.Conditions),
		}
	})
	out.Annotations = finish(ann)
	return out, nil
}

// defaultConfigsFrom maps supportedConfigs to defaultConfigs: an entry without a default
// names ReservedNoDefaultConfigName.
func defaultConfigsFrom(in []v1alpha1.ConfigMeta) []AddOnConfig {
	return convertSlice(in, func(c *v1alpha1.ConfigMeta) AddOnConfig {
		out := AddOnConfig{ConfigGroupResource: ConfigGroupResource(c.ConfigGroupResource)}
		if c.DefaultConfig != nil {
			out.ConfigReferent = ConfigReferent(*c.DefaultConfig)
		} else {
			out.Name = ReservedNoDefaultConfigName
		}
		return out
	})
}

// supportedConfigsFrom maps defaultConfigs to supportedConfigs, the reserved name (with
// no namespace) to no default.
func supportedConfigsFrom(in []AddOnConfig) []v1alpha1.ConfigMeta {
	return convertSlice(in, func(c *AddOnConfig) v1alpha1.ConfigMeta {
		out := v1alpha1.ConfigMeta{ConfigGroupResource: v1alpha1.ConfigGroupResource(c.ConfigGroupResource)}
		if c.Name != ReservedNoDefaultConfigName || c.Namespace != "" {
			ref := v1alpha1.ConfigReferent(c.ConfigReferent)
			out.DefaultConfig = &ref
		}
		return out
	})
}

// ManagedClusterAddOnFromV1alpha1 converts a v1alpha1 ManagedClusterAddOn.
func ManagedClusterAddOnFromV1alpha1(in *v1alpha1.ManagedClusterAddOn) (*ManagedClusterAddOn, error) {
	out := &ManagedClusterAddOn{TypeMeta: typeMeta(in.TypeMeta, GroupVersion.String())}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	ann := annotations(in.Annotations)
	var err error
	if in.Spec.InstallNamespace != "" {
		ann[InstallNamespaceAnnotation] = in.Spec.InstallNamespace
	}
	out.Spec.Configs = convertSlice(in.Spec.Configs, addOnConfigFrom)

	st := &in.Status
	out.Status.Conditions = copyConditions(st.Conditions)
	out.Status.RelatedObjects = convertSlice(st.RelatedObjects, func(o *v1alpha1.ObjectReference) ObjectReference { return ObjectReference(*o) })
	out.Status.AddOnMeta = AddOnMeta(st.AddOnMeta)
	if _, err = convertGroup(ann, st.AddOnConfiguration, "", AddOnConfigurationAnnotation,
		dropped[v1alpha1.ConfigCoordinates], restoredNothing[v1alpha1.ConfigCoordinates]); err != nil {
		return nil, err
	}
	out.Status.SupportedConfigs = convertSlice(st.SupportedConfigs, func(c *v1alpha1.ConfigGroupResource) ConfigGroupResource { return ConfigGroupResource(*c) })
	if out.Status.ConfigReferences, err = convertGroup(ann, st.ConfigReferences, V1beta1ConfigReferencesAnnotation, V1alpha1ConfigReferencesAnnotation,
		configReferencesFrom, configReferencesTo); err != nil {
		return nil, err
	}
	out.Status.Namespace = st.Namespace
	regs := alphaRegistrations{Registrations: st.Registrations, KubeClientDriver: st.KubeClientDriver}
	if out.Status.Registrations, err = convertGroup(ann, regs, V1beta1RegistrationsAnnotation, V1alpha1RegistrationsAnnotation,
		registrationsFrom, registrationsTo); err != nil {
		return nil, err
	}
	out.Status.HealthCheck = HealthCheck{Mode: HealthCheckMode(st.HealthCheck.Mode)}
	out.Annotations = finish(ann)
	return out, nil
}

// ManagedClusterAddOnToV1alpha1 converts a v1beta1 ManagedClusterAddOn.
func ManagedClusterAddOnToV1alpha1(in *ManagedClusterAddOn) (*v1alpha1.ManagedClusterAddOn, error) {
	out := &v1alpha1.ManagedClusterAddOn{TypeMeta: typeMeta(in.TypeMeta, v1alpha1.GroupVersion.String())}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	ann := annotations(in.Annotations)
	var err error
	// An empty value says nothing v1alpha1 could keep: it stays an annotation.
	if ns := ann[InstallNamespaceAnnotation]; ns != "" {
		out.Spec.InstallNamespace = ns
		delete(ann, InstallNamespaceAnnotation)
	}
	out.Spec.Configs = convertSlice(in.Spec.Configs, addOnConfigTo)

	st := &in.Status
	out.Status.Conditions = copyConditions(st.Conditions)
	out.Status.RelatedObjects = convertSlice(st.RelatedObjects, func(o *ObjectReference) v1alpha1.ObjectReference { return v1alpha1.ObjectReference(*o) })
	out.Status.AddOnMeta = v1alpha1.AddOnMeta(st.AddOnMeta)
	if out.Status.AddOnConfiguration, err = convertGroup(ann, struct{}{}, AddOnConfigurationAnnotation, "",
		restoredNothing[v1alpha1.ConfigCoordinates], dropped[v1alpha1.ConfigCoordinates]); err != nil {
		return nil, err
	}
	out.Status.SupportedConfigs = convertSlice(st.SupportedConfigs, func(c *ConfigGroupResource) v1alpha1.ConfigGroupResource { return v1alpha1.ConfigGroupResource(*c) })
	if out.Status.ConfigReferences, err = convertGroup(ann, st.ConfigReferences, V1alpha1ConfigReferencesAnnotation, V1beta1ConfigReferencesAnnotation,
		configReferencesTo, configReferencesFrom); err != nil {
		return nil, err
	}
	out.Status.Namespace = st.Namespace
	regs, err := convertGroup(ann, st.Registrations, V1alpha1RegistrationsAnnotation, V1beta1RegistrationsAnnotation,
		registrationsTo, registrationsFrom)
	if err != nil {
		return nil, err
	}
	out.Status.Registrations, out.Status.KubeClientDriver = regs.Registrations, regs.KubeClientDriver
	out.Status.HealthCheck = v1alpha1.HealthCheck{Mode: v1alpha1.HealthCheckMode(st.HealthCheck.Mode)}
	out.Annotations = finish(ann)
	return out, nil
}

// configReferencesFrom drops the deprecated name and namespace of v1alpha1.
func configReferencesFrom(in []v1alpha1.ConfigReference) []ConfigReference {
	return convertSlice(in, func(r *v1alpha1.ConfigReference) ConfigReference {
		return ConfigReference{
			ConfigGroupResource:    ConfigGroupResource(r.ConfigGroupResource),
			LastObservedGeneration: r.LastObservedGeneration,
			DesiredConfig:          specHashFrom(r.DesiredConfig),
			LastAppliedConfig:      specHashFrom(r.LastAppliedConfig),
		}
	})
}

// configReferencesTo fills the deprecated name and namespace of v1alpha1 from
// desiredConfig, as OCM does.
func configReferencesTo(in []ConfigReference) []v1alpha1.ConfigReference {
	return convertSlice(in, func(r *ConfigReference) v1alpha1.ConfigReference {
		out := v1alpha1.ConfigReference{
			ConfigGroupResource:    v1alpha1.ConfigGroupResource(r.ConfigGroupResource),
			LastObservedGeneration: r.LastObservedGeneration,
			DesiredConfig:          specHashTo(r.DesiredConfig),
			LastAppliedConfig:      specHashTo(r.LastAppliedConfig),
		}
		if r.DesiredConfig != nil {
			out.ConfigReferent = v1alpha1.ConfigReferent(r.DesiredConfig.ConfigReferent)
		}
		return out
	})
}

// alphaRegistrations are the v1alpha1 fields v1beta1 registrations stand for.
type alphaRegistrations struct {
	Registrations    []v1alpha1.RegistrationConfig `json:"registrations,omitempty"`
	KubeClientDriver string                        `json:"kubeClientDriver,omitempty"`
}

// registrationsFrom maps v1alpha1 registrations by signer: kubernetes.io/kube-apiserver-client
// is a kubeClient registration carrying status.kubeClientDriver, any other signer a
// customSigner one.
func registrationsFrom(in alphaRegistrations) []RegistrationConfig {
	return convertSlice(in.Registrations, func(r *v1alpha1.RegistrationConfig) RegistrationConfig {
		base := BaseSubject{User: r.Subject.User, Groups: slices.Clone(r.Subject.Groups)}
		if r.SignerName == certificatesv1.KubeAPIServerClientSignerName {
			return RegistrationConfig{Type: KubeClient, KubeClient: &KubeClientConfig{
				Subject: KubeClientSubject{BaseSubject: base},
				Driver:  in.KubeClientDriver,
			}}
		}
		return RegistrationConfig{Type: CustomSigner, CustomSigner: &CustomSignerConfig{
			SignerName: r.SignerName,
			Subject:    Subject{BaseSubject: base, OrganizationUnits: slices.Clone(r.Subject.OrganizationUnits)},
		}}
	})
}

// registrationsTo maps v1beta1 registrations to signers; the driver of the first kubeClient
// registration becomes status.kubeClientDriver.
func registrationsTo(in []RegistrationConfig) alphaRegistrations {
	var out alphaRegistrations
	driverSet := false
	out.Registrations = convertSlice(in, func(r *RegistrationConfig) v1alpha1.RegistrationConfig {
		var reg v1alpha1.RegistrationConfig
		switch {
		case r.Type == KubeClient:
			reg.SignerName = certificatesv1.KubeAPIServerClientSignerName
			if k := r.KubeClient; k != nil {
				reg.Subject = v1alpha1.Subject{User: k.Subject.User, Groups: slices.Clone(k.Subject.Groups)}
				if !driverSet {
					out.KubeClientDriver, driverSet = k.Driver, true
				}
			}
		case r.CustomSigner != nil:
			s := r.CustomSigner
			reg.SignerName = s.SignerName
			reg.Subject = v1alpha1.Subject{User: s.Subject.User, Groups: slices.Clone(s.Subject.Groups), OrganizationUnits: slices.Clone(s.Subject.OrganizationUnits)}
		}
		return reg
	})
	return out
}

// AddOnDeploymentConfigFromV1alpha1 converts a v1alpha1 AddOnDeploymentConfig; the two
// versions are the same.
func AddOnDeploymentConfigFromV1alpha1(in *v1alpha1.AddOnDeploymentConfig) *AddOnDeploymentConfig {
	out := &AddOnDeploymentConfig{TypeMeta: typeMeta(in.TypeMeta, GroupVersion.String())}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	s := &in.Spec
	out.Spec = AddOnDeploymentConfigSpec{
		CustomizedVariables: convertSlice(s.CustomizedVariables, func(v *v1alpha1.CustomizedVariable) CustomizedVariable { return CustomizedVariable(*v) }),
		NodePlacement: convertPtr(s.NodePlacement, func(p *v1alpha1.NodePlacement) NodePlacement {
			c := p.DeepCopy()
			return NodePlacement{NodeSelector: c.NodeSelector, Tolerations: c.Tolerations}
		}),
		Registries:            convertSlice(s.Registries, func(m *v1alpha1.ImageMirror) ImageMirror { return ImageMirror(*m) }),
		ProxyConfig:           ProxyConfig(*s.ProxyConfig.DeepCopy()),
		AgentInstallNamespace: s.AgentInstallNamespace,
		ResourceRequirements: convertSlice(s.ResourceRequirements, func(r *v1alpha1.ContainerResourceRequirements) ContainerResourceRequirements {
			return ContainerResourceRequirements{ContainerID: r.ContainerID, Resources: *r.Resources.DeepCopy()}
		}),
		ReplicaConfigs: convertSlice(s.ReplicaConfigs, func(r *v1alpha1.ReplicaConfig) ReplicaConfig { return ReplicaConfig(*r) }),
	}
	return out
}

// AddOnDeploymentConfigToV1alpha1 converts a v1beta1 AddOnDeploymentConfig.
func AddOnDeploymentConfigToV1alpha1(in *AddOnDeploymentConfig) *v1alpha1.AddOnDeploymentConfig {
	out := &v1alpha1.AddOnDeploymentConfig{TypeMeta: typeMeta(in.TypeMeta, v1alpha1.GroupVersion.String())}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	s := &in.Spec
	out.Spec = v1alpha1.AddOnDeploymentConfigSpec{
		CustomizedVariables: convertSlice(s.CustomizedVariables, func(v *CustomizedVariable) v1alpha1.CustomizedVariable { return v1alpha1.CustomizedVariable(*v) }),
		NodePlacement: convertPtr(s.NodePlacement, func(p *NodePlacement) v1alpha1.NodePlacement {
			c := p.DeepCopy()
			return v1alpha1.NodePlacement{NodeSelector: c.NodeSelector, Tolerations: c.Tolerations}
		}),
		Registries:            convertSlice(s.Registries, func(m *ImageMirror) v1alpha1.ImageMirror { return v1alpha1.ImageMirror(*m) }),
		ProxyConfig:           v1alpha1.ProxyConfig(*s.ProxyConfig.DeepCopy()),
		AgentInstallNamespace: s.AgentInstallNamespace,
		ResourceRequirements: convertSlice(s.ResourceRequirements, func(r *ContainerResourceRequirements) v1alpha1.ContainerResourceRequirements {
			return v1alpha1.ContainerResourceRequirements{ContainerID: r.ContainerID, Resources: *r.Resources.DeepCopy()}
		}),
		ReplicaConfigs: convertSlice(s.ReplicaConfigs, func(r *ReplicaConfig) v1alpha1.ReplicaConfig { return v1alpha1.ReplicaConfig(*r) }),
	}
	return out
}

// AddOnTemplateFromV1alpha1 converts a v1alpha1 AddOnTemplate; the two versions are the
// same.
func AddOnTemplateFromV1alpha1(in *v1alpha1.AddOnTemplate) *AddOnTemplate {
	out := &AddOnTemplate{TypeMeta: typeMeta(in.TypeMeta, GroupVersion.String())}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = AddOnTemplateSpec{
		AddonName: in.Spec.AddonName,
		AgentSpec: *in.Spec.AgentSpec.DeepCopy(),
		Registration: convertSlice(in.Spec.Registration, func(r *v1alpha1.RegistrationSpec) RegistrationSpec {
			return RegistrationSpec{
				Type: AddOnTemplateRegistrationType(r.Type),
				KubeClient: convertPtr(r.KubeClient, func(k *v1alpha1.KubeClientRegistrationConfig) KubeClientRegistrationConfig {
					return KubeClientRegistrationConfig{HubPermissions: convertSlice(k.HubPermissions, func(p *v1alpha1.HubPermissionConfig) HubPermissionConfig {
						return HubPermissionConfig{
							Type: HubPermissionsBindingType(p.Type),
							CurrentCluster: convertPtr(p.CurrentCluster, func(c *v1alpha1.CurrentClusterBindingConfig) CurrentClusterBindingConfig {
								return CurrentClusterBindingConfig(*c)
							}),
							SingleNamespace: convertPtr(p.SingleNamespace, func(s *v1alpha1.SingleNamespaceBindingConfig) SingleNamespaceBindingConfig {
								return SingleNamespaceBindingConfig(*s)
							}),
						}
					})}
				}),
				CustomSigner: convertPtr(r.CustomSigner, func(c *v1alpha1.CustomSignerRegistrationConfig) CustomSignerRegistrationConfig {
					return CustomSignerRegistrationConfig{
						SignerName: c.SignerName,
						Subject: convertPtr(c.Subject, func(s *v1alpha1.Subject) AddOnTemplateSubject {
							return AddOnTemplateSubject{User: s.User, Groups: slices.Clone(s.Groups), OrganizationUnits: slices.Clone(s.OrganizationUnits)}
						}),
						SigningCA: SigningCARef(c.SigningCA),
					}
				}),
			}
		}),
	}
	return out
}

// AddOnTemplateToV1alpha1 converts a v1beta1 AddOnTemplate.
func AddOnTemplateToV1alpha1(in *AddOnTemplate) *v1alpha1.AddOnTemplate {
	out := &v1alpha1.AddOnTemplate{TypeMeta: typeMeta(in.TypeMeta, v1alpha1.GroupVersion.String())}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = v1alpha1.AddOnTemplateSpec{
		AddonName: in.Spec.AddonName,
		AgentSpec: *in.Spec.AgentSpec.DeepCopy(),
		Registration: convertSlice(in.Spec.Registration, func(r *RegistrationSpec) v1alpha1.RegistrationSpec {
			return v1alpha1.RegistrationSpec{
				Type: v1alpha1.RegistrationType(r.Type),
				KubeClient: convertPtr(r.KubeClient, func(k *KubeClientRegistrationConfig) v1alpha1.KubeClientRegistrationConfig {
					return v1alpha1.KubeClientRegistrationConfig{HubPermissions: convertSlice(k.HubPermissions, func(p *HubPermissionConfig) v1alpha1.HubPermissionConfig {
						return v1alpha1.HubPermissionConfig{
							Type: v1alpha1.HubPermissionsBindingType(p.Type),
							CurrentCluster: convertPtr(p.CurrentCluster, func(c *CurrentClusterBindingConfig) v1alpha1.CurrentClusterBindingConfig {
								return v1alpha1.CurrentClusterBindingConfig(*c)
							}),
							SingleNamespace: convertPtr(p.SingleNamespace, func(s *SingleNamespaceBindingConfig) v1alpha1.SingleNamespaceBindingConfig {
								return v1alpha1.SingleNamespaceBindingConfig(*s)
							}),
						}
					})}
				}),
				CustomSigner: convertPtr(r.CustomSigner, func(c *CustomSignerRegistrationConfig) v1alpha1.CustomSignerRegistrationConfig {
					return v1alpha1.CustomSignerRegistrationConfig{
						SignerName: c.SignerName,
						Subject: convertPtr(c.Subject, func(s *AddOnTemplateSubject) v1alpha1.Subject {
							return v1alpha1.Subject{User: s.User, Groups: slices.Clone(s.Groups), OrganizationUnits: slices.Clone(s.OrganizationUnits)}
						}),
						SigningCA: v1alpha1.SigningCARef(c.SigningCA),
					}
				}),
			}
		}),
	}
	return out
}

// Helpers shared by the kinds.

func addOnConfigFrom(c *v1alpha1.AddOnConfig) AddOnConfig {
	return AddOnConfig{ConfigGroupResource: ConfigGroupResource(c.ConfigGroupResource), ConfigReferent: ConfigReferent(c.ConfigReferent)}
}

func addOnConfigTo(c *AddOnConfig) v1alpha1.AddOnConfig {
	return v1alpha1.AddOnConfig{ConfigGroupResource: v1alpha1.ConfigGroupResource(c.ConfigGroupResource), ConfigReferent: v1alpha1.ConfigReferent(c.ConfigReferent)}
}

func specHashFrom(h *v1alpha1.ConfigSpecHash) *ConfigSpecHash {
	return convertPtr(h, func(h *v1alpha1.ConfigSpecHash) ConfigSpecHash {
		return ConfigSpecHash{ConfigReferent: ConfigReferent(h.ConfigReferent), SpecHash: h.SpecHash}
	})
}

func specHashTo(h *ConfigSpecHash) *v1alpha1.ConfigSpecHash {
	return convertPtr(h, func(h *ConfigSpecHash) v1alpha1.ConfigSpecHash {
		return v1alpha1.ConfigSpecHash{ConfigReferent: v1alpha1.ConfigReferent(h.ConfigReferent), SpecHash: h.SpecHash}
	})
}

// typeMeta is in's TypeMeta at apiVersion; an empty one stays empty.
func typeMeta(in metav1.TypeMeta, apiVersion string) metav1.TypeMeta {
	if in.APIVersion != "" {
		in.APIVersion = apiVersion
	}
	return in
}

// convertSlice converts each element, keeping nil nil and empty empty.
func convertSlice[S, T any](in []S, f func(*S) T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i := range in {
		out[i] = f(&in[i])
	}
	return out
}

func convertPtr[S, T any](in *S, f func(*S) T) *T {
	if in == nil {
		return nil
	}
	out := f(in)
	return &out
}

// annotations is a copy of in to edit.
func annotations(in map[string]string) map[string]string {
	out := maps.Clone(in)
	if out == nil {
		out = map[string]string{}
	}
	return out
}

// finish returns the edited annotations, nil when none are left.
func finish(ann map[string]string) map[string]string {
	if len(ann) == 0 {
		return nil
	}
	return ann
}

// carried is the value of a conversion annotation.
type carried struct {
	// Of fingerprints the group as converted, so that a change made in the other
	// version is not overwritten on the way back.
	Of string `json:"of"`
	// Value is the group as it was.
	Value json.RawMessage `json:"value"`
}

func fingerprint(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// convertGroup converts a group of fields, src, with to; back is the reverse mapping.
// ann are the converted object's annotations (a copy of the source's), edited in place:
//
//   - restoreKey, when set, is the annotation an earlier conversion the other way left on
//     the source: if it still fingerprints src, the group it carries is the result, and
//     the annotation goes either way (unless it cannot be read: it then stays as it is);
//   - keepKey, when set, receives src unless back restores it from the result.
func convertGroup[S, T any](ann map[string]string, src S, restoreKey, keepKey string, to func(S) T, back func(T) S) (T, error) {
	var out T
	fp, err := fingerprint(src)
	if err != nil {
		return out, err
	}
	if v, ok := ann[restoreKey]; ok && restoreKey != "" {
		var c carried
		if json.Unmarshal([]byte(v), &c) == nil && len(c.Value) > 0 && json.Unmarshal(c.Value, &out) == nil {
			delete(ann, restoreKey)
			if c.Of == fp {
				return out, nil
			}
		}
	}
	out = to(src)
	if keepKey != "" && !equality.Semantic.DeepEqual(back(out), src) {
		of, err := fingerprint(out)
		if err != nil {
			return out, err
		}
		value, err := json.Marshal(src)
		if err != nil {
			return out, err
		}
		data, err := json.Marshal(carried{Of: of, Value: value})
		if err != nil {
			return out, err
		}
		ann[keepKey] = string(data)
	}
	return out, nil
}

// dropped maps a group to nothing: the other version has no place for it.
func dropped[S any](S) struct{} { return struct{}{} }

// restoredNothing is the reverse of dropped: without the annotation there is nothing.
func restoredNothing[S any](struct{}) S { return *new(S) }

func copyConditions(in []metav1.Condition) []metav1.Condition {
	return convertSlice(in, func(c *metav1.Condition) metav1.Condition { return *c.DeepCopy() })
}
