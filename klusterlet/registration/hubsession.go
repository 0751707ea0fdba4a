package registration

import (
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// SessionOptions configures SessionFromHubSecret.
type SessionOptions struct {
	// Dial opens the connections to the hub (Config.HubDial); nil: a plain net.Dialer.
	Dial DialFunc
	// Scheme is the session's (Session.Scheme); nil: NewScheme().
	Scheme *runtime.Scheme
	// HubMapper is the session's (Session.HubMapper); nil: one built over the session's
	// transport.
	HubMapper meta.RESTMapper
	Logger    logr.Logger
}

// SessionFromHubSecret is the hub session another process's registration agent stored in
// the hub kubeconfig secret sec: its identity (keys cluster-name and agent-name), its hub
// endpoint (key kubeconfig) and its signed certificate (keys tls.crt and tls.key). OCM's
// separate work agent runs this way. The session's connection keeps the certificate read;
// the caller starts a new session when the secret's certificate changes.
func SessionFromHubSecret(sec *HubSecret, opts SessionOptions) (Session, *HubConnection, error) {
	switch {
	case !sec.Exists():
		return Session{}, nil, fmt.Errorf("%s does not exist yet", sec.ref())
	case sec.ClusterName == "" || sec.AgentName == "":
		return Session{}, nil, fmt.Errorf("%s has no keys %s and %s yet", sec.ref(), ClusterNameKey, AgentNameKey)
	case len(sec.Kubeconfig) == 0:
		return Session{}, nil, fmt.Errorf("%s has no key %s yet", sec.ref(), KubeconfigKey)
	}
	creds, err := sec.Credentials()
	if err != nil {
		return Session{}, nil, err
	}
	if creds == nil {
		return Session{}, nil, fmt.Errorf("%s has no signed certificate (keys %s and %s) yet", sec.ref(), TLSCertKey, TLSKeyKey)
	}
	id := Identity{ClusterName: sec.ClusterName, AgentName: sec.AgentName}
	if !id.MatchesCertificate(creds.Leaf) {
		return Session{}, nil, fmt.Errorf("%s: the certificate's subject %q is not that of %s", sec.ref(), creds.Leaf.Subject.CommonName, id.CommonName())
	}
	ep, err := EndpointFromKubeconfig(sec.Kubeconfig, sec.ref()+" key "+KubeconfigKey)
	if err != nil {
		return Session{}, nil, err
	}
	conn, err := newHubConnection(ep, creds, opts.Dial)
	if err != nil {
		return Session{}, nil, err
	}
	cfg := conn.Config(userAgent)
	scheme := opts.Scheme
	if scheme == nil {
		if scheme, err = NewScheme(); err != nil {
			return Session{}, nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	mapper := opts.HubMapper
	if mapper == nil {
		httpClient, err := rest.HTTPClientFor(cfg)
		if err == nil {
			mapper, err = apiutil.NewDynamicRESTMapper(cfg, httpClient)
		}
		if err != nil {
			return Session{}, nil, fmt.Errorf("hub REST mapper for %s: %w", sec.ref(), err)
		}
	}
	hubKube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Session{}, nil, fmt.Errorf("hub client for %s: %w", sec.ref(), err)
	}
	log := opts.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	return Session{
		ClusterName: id.ClusterName, AgentName: id.AgentName,
		HubServer: ep.Server, HubEndpoint: ep, HubConfig: cfg,
		Scheme: scheme, HubMapper: mapper, HubKube: hubKube, Logger: log,
	}, conn, nil
}
