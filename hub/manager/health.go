package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// probeTimeout bounds one readiness check, under the kubelet's default 1 s probe timeout.
const probeTimeout = 500 * time.Millisecond

// addHealthChecks registers the checks served on Options.HealthProbeBindAddress: /healthz
// answers while the process runs; /readyz once the manager's caches have synced and, with the
// webhook on, the webhook server completes TLS handshakes and the policy ConfigMaps are loaded
// (before, the policy webhook would have only the embedded defaults to judge by); each
// only in a process that runs a webhook component and the policies (Options.Run). Caches,
// webhooks and policies run on every replica, so a replica waiting for the leader Lease is
// ready too: it serves admission.
func (h *Hub) addHealthChecks() error {
	if err := h.mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("hub: health check: %w", err)
	}
	if err := h.mgr.AddReadyzCheck("caches", h.cachesSynced); err != nil {
		return fmt.Errorf("hub: readiness check: %w", err)
	}
	if h.webhooks != nil {
		if err := h.mgr.AddReadyzCheck("webhook", h.webhookServing); err != nil {
			return fmt.Errorf("hub: readiness check: %w", err)
		}
	}
	if h.policyLoader != nil {
		if err := h.mgr.AddReadyzCheck("policies", h.policiesLoaded); err != nil {
			return fmt.Errorf("hub: readiness check: %w", err)
		}
	}
	return nil
}

// cachesSynced is the manager's informer cache check.
func (h *Hub) cachesSynced(req *http.Request) error {
	ctx, cancel := context.WithTimeout(req.Context(), probeTimeout)
	defer cancel()
	if !h.mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("informer caches have not synced")
	}
	return nil
}

// policiesLoaded holds once the admission policies of the policy ConfigMaps are in force.
func (h *Hub) policiesLoaded(*http.Request) error {
	select {
	case <-h.policyLoader.Handler.Loaded():
		return nil
	default:
		return fmt.Errorf("the admission policies of the ConfigMaps in %s are not loaded yet", h.policyLoader.Namespace)
	}
}

// webhookServing dials the webhook server and completes a TLS handshake, which fails until
// it listens and holds a serving certificate.
func (h *Hub) webhookServing(req *http.Request) error {
	addr := h.webhooks.Addr()
	if addr == nil {
		return errors.New("webhook server is not listening yet")
	}
	ctx, cancel := context.WithTimeout(req.Context(), probeTimeout)
	defer cancel()
	d := tls.Dialer{
		NetDialer: &net.Dialer{},
		// Only whether this process's own listener completes a handshake matters here, not who
		// signed its certificate (the API server verifies that against the CA bundle).
		Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // see above
	}
	// An unspecified listen address (":9443") is dialled on the local host.
	conn, err := d.DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return fmt.Errorf("webhook server at %s: %w", addr, err)
	}
	return conn.Close()
}
