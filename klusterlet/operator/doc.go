// Package operator is the klusterlet operator (`flotilla operator klusterlet`, Deployment
// klusterlet in open-cluster-management), OCM's way: it reads every Klusterlet
// (operator.open-cluster-management.io/v1) on its cluster and deploys its agents by rendering
// the chart charts/flotilla-klusterlet (render: components) with values derived from the spec
// (ValuesFor), server-side-applying them under its own field managers. A spec change rolls the
// Deployments it changes. The agents (`flotilla klusterlet`) run from the flags the operator
// renders; they do not read the Klusterlet.
//
//   - deploy: Singleton and SingletonHosted render one agent Deployment <klusterlet>-agent,
//     Default and Hosted <klusterlet>-registration-agent and <klusterlet>-work-agent. In the
//     Hosted modes the managed cluster's objects go there through Secret
//     external-managed-kubeconfig in the agent namespace (the Klusterlet's name), and the
//     agents get token kubeconfigs for it. Applied and ReadyToApply say how that went.
//   - status: Available and the Desired Degraded conditions from the agents' Deployments,
//     HubConnectionDegraded (HubConnection, every DefaultStatusResync), ValidFeatureGates,
//     ValidConfiguration, generations and relatedResources (every object applied, which
//     clusteradm get klusterlet-info reads).
//   - cleanup: the finalizers remove, when a Klusterlet is deleted, its agents, the add-ons'
//     Secrets, the AppliedManifestWorks of its hub with what they own, and what it applied on
//     both clusters; shared namespaces and CRDs go with the last klusterlet namespace.
package operator
