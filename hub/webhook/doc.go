// Package webhook is the hub's webhook server: it serves validating admission handlers and
// CRD conversion webhooks over TLS, manages its own CA and serving certificate, and keeps a
// ValidatingWebhookConfiguration, and the spec.conversion of the CRDs it converts, on the
// hub API server pointing at itself. The ManifestWork validation (hub/webhook/manifestwork)
// is its first handler (with manifestwork.Finalizer, a mutating one: Registration.Mutating
// puts a handler in a MutatingWebhookConfiguration of the same name), the add-on
// v1alpha1/v1beta1 conversion (hub/webhook/addonconversion) its first converter; hub/manager
// runs it.
//
// # Handlers
//
// A handler is a Validating: controller-runtime's admission.Handler (Handle gets an
// admission.Request and returns an admission.Response) plus a Registration naming the
// webhook, its URL path, its rules (operations and resources), failure policy, side
// effects, timeout, selectors and CEL match conditions. Register adds one before or after
// Start; the Server serves it at its path and adds it to the configuration. A handler whose
// rules change at run time (a policy engine loading policies) returns the new rules from
// Registration and calls Resync; Unregister removes one. A Shared handler (one whose rules
// follow state every hub replica loads: hub/admission's policies) holds the configuration back
// until it has loaded, and its rules in the live configuration are narrowed only once it
// confirms its state is the newest; until then the Server applies the union of its rules and
// the live ones, so no replica takes away rules another replica's newer state needs (see
// Shared). Through hub/manager:
//
//	h, _ := manager.New(opts)
//	err := h.Webhooks().Register(myHandler) // before or after h.Start
//
// # Conversion webhooks
//
// A Converter converts the custom resources of some CRDs between their versions (the
// apiextensions.k8s.io/v1 ConversionReview protocol). RegisterConversion, before or after
// Start, serves it at Conversion().Path and makes the Server keep spec.conversion of each
// CRD it names (Conversion().CRDs) pointing there: strategy Webhook, the same URL or Service
// as the validating configuration, the Server's CA bundle as caBundle, review version v1.
// Only that field is server-side-applied, under FieldManager, in the same sync as the
// configuration (on start, on CA rotation, every ResyncPeriod, and whenever a watched CRD
// changes, so a spec.conversion reset by someone else is restored within moments; a CRD
// that does not exist yet is configured once it is created). The CRD installer
// (core/crds, at every hub start) applies CRDs without spec.conversion under its own
// field manager, so it leaves the field alone. The Server decodes each object, calls
// Convert and checks the result (apiVersion, kind, name, namespace and uid); an object it
// cannot decode, a Convert error or a panic fails the review with a message naming the
// object, which the API server passes on to the client. Ready does not wait for conversions.
// hub/webhook/addonconversion converts the addon.open-cluster-management.io kinds between
// v1alpha1 (stored) and v1beta1:
//
//	err := srv.RegisterConversion(addonconversion.New())
//
// While no Server runs, reading or writing a converted kind at a version other than its
// storage version fails ("conversion webhook ... failed"); the storage version keeps
// working (for the add-on kinds: v1alpha1, which Flotilla's controllers use).
//
// # Aggregated APIs
//
// RegisterAPIService, before or after Start, serves an API group version under
// /apis/<group>/<version> (and the group's APIGroup document at /apis/<group>) and makes the
// Server keep an APIService <version>.<group> (groupPriorityMinimum 5000, versionPriority 10)
// pointing at itself with its CA bundle as caBundle: server-side-applied under FieldManager
// with the resourceVersion read just before as precondition, in the same sync as the
// configuration and restored within moments when edited or deleted. The hub API server's
// aggregator then proxies every request for that group version to the Server, after
// authenticating and authorizing the caller itself. With Options.Service the APIService names
// that Service. Otherwise (URL mode: flotilla dev, tests) it names a Service of type
// ExternalName, <ConfigurationName>-apiservice in Options.Namespace, whose externalName is
// Hosts[0], on the bound port: the aggregator resolves such a Service to
// https://<externalName>:<port> and needs no Endpoints, which could not hold a loopback
// address. Either way the aggregator checks the serving certificate for
// <service>.<namespace>.svc, which the certificate covers.
//
// The Server authenticates the aggregator as every aggregated API server does: a client
// certificate signed by the requestheader CA, with one of the allowed names, and the user,
// groups and extra in the headers named by the ConfigMap
// kube-system/extension-apiserver-authentication (followed as it changes). The handler finds
// that user with k8s.io/apiserver/pkg/endpoints/request.UserFrom; a request on an APIService
// path without such a certificate is answered 401 and never reaches it. Webhook paths are
// served as before (the TLS server asks for a client certificate, which the API server's
// webhook calls do not send). The server sets no timeouts beyond reading request headers, so
// watches and upgraded (hijacked) connections last; the hub API server treats requests for
// a proxy subresource (and watches) as long-running, so they pass the aggregator too. HTTP/2
// connections carry up to MaxConcurrentStreams streams. When the Server stops, requests get
// five seconds to finish; then their contexts end, which a hijacked connection's handler
// must follow, and the rest are closed.
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
// Every apply is guarded by the resourceVersion read just before (a write by another replica in
// between makes it retry), and none happens before every Shared handler has loaded.
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
// patch, list and watch ValidatingWebhookConfigurations (and patch, delete, list and watch the
// MutatingWebhookConfiguration of the same name), create SubjectAccessReviews for
// the ManifestWork executor check, and, with a conversion registered, get, patch, list and
// watch CustomResourceDefinitions. With an APIService registered: get, patch, list and watch
// APIServices; in URL mode get, patch, list and watch Services in the hub namespace; get,
// list and watch the ConfigMap kube-system/extension-apiserver-authentication (the Role
// extension-apiserver-authentication-reader there grants it).
package webhook
