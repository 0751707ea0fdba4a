// Package environment runs real Kubernetes control planes for tests and `flotilla dev`:
// for each cluster an etcd, a kube-apiserver and a kube-controller-manager built from
// source into the repository's bin/ directory (`make controlplane`).
//
// Managed clusters also run workloads as a real cluster would, without a kubelet
// (ControlPlaneOptions.Workloads): kube-controller-manager adds the workload controllers
// (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs, ...), kube-scheduler
// binds Pods to Nodes, and KWOK (sigs.k8s.io/kwok, pinned in tools/kwok and also built by
// `make controlplane`) runs the simulated Nodes (SimulatedNodeLabel) and the Pods bound to
// them: Nodes are Ready, Pods become Running and Ready with an IP from their Node's Pod
// CIDR, a Job's Pods succeed and deleted Pods go at once (kwok-stages.yaml). So a
// Deployment reports ready replicas and Available, a Job completes, and a Pod that fits no
// Node stays Pending. With PodDebugging, KWOK's debugging server also answers exec, logs -f
// and port-forward of those Pods in the kubelet's place (ServePodStreams says how).
//
// Each control plane gets its own certificate authority. The CA key is kept on disk and
// exposed because Flotilla's behaviour depends on it: kube-controller-manager signs
// CertificateSigningRequests with it (cluster registration and certificate rotation), and
// security tests mint client certificates for arbitrary identities with UserConfig.
// That is why this package does not use controller-runtime's envtest control plane.
//
// A Fleet is one hub plus N managed clusters, started concurrently. Every child process
// runs in its own process group and is killed with the test binary or `flotilla dev`
// even when those die without running their cleanup (see spawner).
package environment
