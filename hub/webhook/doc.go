// Package webhook is the hub's admission webhook server: it serves validating admission
// handlers over TLS, manages its own CA and serving certificate, and keeps a
// ValidatingWebhookConfiguration on the hub API server pointing at itself. The ManifestWork
// validation (hub/webhook/manifestwork) is its first handler; hub/manager runs it.
//
// # Handlers
//
// A handler is a Validating: controller-runtime's admission.Handler (Handle gets an
// admission.Request and returns an admission.Response) plus a Registration naming the
// webhook, its URL path, its rules (operations and resources), failure policy, side
// effects, timeout, selectors and CEL match conditions. Register adds one before or after
// Start; the Server serves it at its path and adds it to the configuration. A handler whose
// rules change at run time (a policy engine loading policies) returns the new rules from
// Registration and calls Resync; Unregister removes one. Through hub/manager:
//
//	h, _ := manager.New(opts)
//	err := h.Webhooks().Register(myHandler) // before or after h.Start
//
// # Certificates
//
// The Server keeps a self-signed CA and a serving certificate (ECDSA P-256) for the hosts it
// is reached at in a kubernetes.io/tls Secret (Options.Namespace/SecretName), and reuses them
// across restarts while they are valid. A certificate is replaced when less than
// Options.RenewalFraction (a fifth) of its lifetime remains. A replaced CA stays in the bundle
// (the configuration's caBundle) until it expires, and serving certificates move to the new
// CA only once it has been in the bundle for a resync period, so the API server always
// trusts the certificate it is shown; the serving certificate is swapped in the TLS server
// without a restart. Several replicas may share the Secret: writes are guarded by its resourceVersion.
//
// # Configuration
//
// The configuration (Options.ConfigurationName) is server-side-applied under the field
// manager FieldManager, on start, whenever it or the Secret changes (watched, so an edited
// caBundle or a deleted configuration is restored within moments) and every
// Options.ResyncPeriod. It reaches the Server at https://<Hosts[0]>:<port><path>
// (clientConfig.url: flotilla dev, tests, a hub next to its API server) or, with
// Options.Service, through that Service (clientConfig.service: a hub running in the cluster,
// behind a Service whose targetPort is the bind port; the in-cluster install will set it).
// Ready is closed once a probe (a dry-run ConfigMap create only the Server's own
// probe.webhook.flotilla.dev webhook matches) came back through the API server, so the
// handlers are in effect; a probe that keeps failing is logged as an error naming the URL,
// which is how a hub whose API server cannot reach it (a remote API server and the default
// loopback address) shows up.
//
// # When the hub is down
//
// The configuration stays when the Server stops, as OCM's does with its webhook Deployment
// down: webhooks with failure policy Fail (ManifestWork validation) then reject what they
// match with "failed calling webhook" until a Server is back, which re-applies the
// configuration with its own address (flotilla dev starts a fresh API server every session).
// Removing it on shutdown would let unvalidated objects in whenever the hub restarts and
// would not help after a crash. What a stale configuration blocks is kept small: the
// ManifestWork webhook matches only creates and spec changes (not metadata-only updates such
// as a finalizer removed while a namespace is deleted, not status, not deletes), and the
// probe only labelled dry-run ConfigMaps.
//
// # Permissions
//
// In the hub namespace: get, create and update Secrets, list and watch the Secret, create
// ConfigMaps (dry-run probes only), create the namespace if missing; cluster-wide: get,
// patch, list and watch ValidatingWebhookConfigurations, and create SubjectAccessReviews for
// the ManifestWork executor check.
package webhook
