// Package environment runs real Kubernetes control planes for tests and `flotilla dev`:
// for each cluster an etcd, a kube-apiserver and a kube-controller-manager built from
// source into the repository's bin/ directory (`make controlplane`).
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
