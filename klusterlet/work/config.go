package work

import (
	"errors"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/hash"
)

// Defaults, as in OCM's work agent.
const (
	DefaultStatusSyncInterval = 30 * time.Second
	// DefaultEvictionGracePeriod is how long an AppliedManifestWork whose ManifestWork is gone
	// from the hub is kept before it (and what it applied) is deleted.
	DefaultEvictionGracePeriod = 60 * time.Minute
	// DefaultWorkers ManifestWorks are reconciled at once: works are independent, and
	// applying one waits on the managed API server.
	DefaultWorkers = 8
)

// Config configures a work agent.
type Config struct {
	// ClusterName is the managed cluster's name: the hub namespace holding its ManifestWorks.
	ClusterName string
	// AgentID identifies this agent in AppliedManifestWork.spec.agentID (the klusterlet's
	// agent name), so a re-joined cluster can tell its own leftovers.
	AgentID string
	// HubConfig reaches the hub with the agent's own identity; its transport may follow
	// certificate rotations (registration.HubConnection).
	HubConfig *rest.Config
	// HubServer is the hub API server URL whose hash prefixes AppliedManifestWork names.
	// Default HubConfig.Host.
	HubServer string
	// ManagedConfig reaches the managed cluster with the rights to apply manifests.
	ManagedConfig *rest.Config
	// StatusSyncInterval is how often applied resources are read back for availability and
	// feedback (OCM's --status-sync-interval). Default DefaultStatusSyncInterval.
	StatusSyncInterval time.Duration
	// EvictionGracePeriod: see DefaultEvictionGracePeriod (OCM's
	// --appliedmanifestwork-eviction-grace-period).
	EvictionGracePeriod time.Duration
	// MaxFeedbackWatch caps the resources watched for feedbackScrapeType Watch; manifests
	// past it are polled. Default DefaultMaxFeedbackWatch.
	MaxFeedbackWatch int
	// ExecutorValidatingCaches caches executors' SubjectAccessReview answers until RBAC on
	// the managed cluster changes, for at most 5 minutes, 10,000 answers at most (OCM's
	// ExecutorValidatingCaches feature gate). Hits and misses are the metrics
	// flotilla_sar_cache_hits_total and flotilla_sar_cache_misses_total{cache="executor"}.
	ExecutorValidatingCaches bool
	// RawFeedbackJSON allows JsonRaw feedback values of at most 1 KiB (OCM's
	// RawFeedbackJsonString feature gate); without it a structure is a feedback error.
	RawFeedbackJSON bool
	// FeedbackExtractors serves WellKnownStatus feedback rules (the klusterlet's plugin
	// loader); nil means none, and such rules report that no plugin serves the kind.
	FeedbackExtractors ExtractorSource
	// HubQPS and HubBurst, when positive, limit the agent's requests to the hub (OCM's
	// --hub-kube-api-qps and --hub-kube-api-burst); 0: at least 200 and 400 (clientRates).
	HubQPS   float32
	HubBurst int
	// ManagedQPS and ManagedBurst, when positive, limit the agent's requests to the managed
	// cluster (OCM's work agent --kube-api-qps and --kube-api-burst); 0: ManagedConfig's, else
	// 400 and 800.
	ManagedQPS   float32
	ManagedBurst int
	// Workers is how many ManifestWorks are reconciled at once. Default DefaultWorkers.
	Workers int
	// Scheme, when set, is the scheme of the agent's clients and caches, shared with other
	// agents in the process (it must hold core/apis/scheme's types; they only read it). Nil:
	// the agent builds its own.
	Scheme *runtime.Scheme
	// HubMapper and ManagedMapper, when set, map kinds to resources on the hub and the
	// managed cluster for the agent's clients and caches (registration.Session.HubMapper, the
	// klusterlet's managed cluster mapper), so that one cluster's agents share one copy of
	// each cluster's discovery. Nil: the agent builds its own.
	HubMapper, ManagedMapper meta.RESTMapper
	// Logger receives the agent's logs. Default: discard.
	Logger logr.Logger
}

// HubHash is the hash of the hub API server URL that prefixes AppliedManifestWork names and
// fills their spec.hubHash, as OCM's agent computes it.
func HubHash(server string) string { return hash.Bytes([]byte(server)) }

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.ClusterName == "":
		return c, errors.New("work agent: ClusterName is required")
	case c.HubConfig == nil:
		return c, errors.New("work agent: HubConfig is required")
	case c.ManagedConfig == nil:
		return c, errors.New("work agent: ManagedConfig is required")
	}
	if c.HubServer == "" {
		c.HubServer = c.HubConfig.Host
	}
	if c.StatusSyncInterval <= 0 {
		c.StatusSyncInterval = DefaultStatusSyncInterval
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.MaxFeedbackWatch <= 0 {
		c.MaxFeedbackWatch = DefaultMaxFeedbackWatch
	}
	if c.EvictionGracePeriod <= 0 {
		c.EvictionGracePeriod = DefaultEvictionGracePeriod
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	return c, nil
}
