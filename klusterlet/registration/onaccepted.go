package registration

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/backoff"
)

// Session is what an accepted hub session offers the agents that run beside registration.
type Session struct {
	ClusterName string
	AgentName   string
	// HubServer is the hub API server URL.
	HubServer string
	// HubEndpoint is how the hub is reached and trusted (server, CA bundle, TLS server name,
	// proxy URL), as taken from the bootstrap kubeconfig; agents that write kubeconfigs for
	// the hub (add-on registration) carry it into them.
	HubEndpoint HubEndpoint
	// HubConfig reaches the hub with the agent's identity and follows certificate rotations.
	HubConfig *rest.Config
	// Scheme is the registration agent's (Config.Scheme when set), for clients of the same
	// types; HubMapper the session's hub mapper (Config.HubMapper when set).
	Scheme    *runtime.Scheme
	HubMapper meta.RESTMapper
	// HubKube is the registration agent's hub clientset of the session (HubConfig's).
	HubKube kubernetes.Interface
	// ManagedConfig reaches the managed cluster for this session (Config.ManagedConfig, or
	// the kubeconfig of Config.ManagedKubeconfigSecret at the session's start), ManagedMapper
	// maps its kinds; ManagementConfig reaches the cluster the agent runs on.
	ManagedConfig    *rest.Config
	ManagedMapper    meta.RESTMapper
	ManagementConfig *rest.Config
	Logger           logr.Logger
}

// runOnAccepted calls Config.OnAccepted once the hub has accepted the cluster, and again
// (with backoff) if it fails, until the session ends.
func (s *session) runOnAccepted(ctx context.Context) {
	run := s.a.cfg.OnAccepted
	if run == nil {
		return
	}
	for !s.accepted.Load() {
		select {
		case <-ctx.Done():
			return
		case <-s.acceptedWake:
		}
	}
	sess := Session{
		ClusterName: s.id.ClusterName, AgentName: s.id.AgentName,
		HubServer: s.conn.Endpoint().Server, HubEndpoint: s.conn.Endpoint(), HubConfig: s.conn.Config(userAgent),
		Scheme: s.a.scheme, HubMapper: s.hubMapper, HubKube: s.hubKube, Logger: s.a.log,
		ManagedConfig: s.a.managedCfg, ManagedMapper: s.a.managedMapper, ManagementConfig: s.a.cfg.ManagementConfig,
	}
	b := s.a.backoff()
	for ctx.Err() == nil {
		err := run(ctx, sess)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			b.Reset()
		} else {
			s.a.recordError(err)
		}
		if !backoff.Sleep(ctx, s.a.cfg.Clock, b.Next()) {
			return
		}
	}
}
