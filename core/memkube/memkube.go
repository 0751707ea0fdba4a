// Package memkube is an in-memory Kubernetes API for one simulated managed cluster, served
// through an http.RoundTripper (no sockets, no TLS): the fleet simulator runs the klusterlet's
// own agents against thousands of them in one process (issue 22).
//
// A Cluster serves what client-go's typed, dynamic and discovery clients and
// controller-runtime's clients and caches ask of a managed cluster: legacy discovery of the
// built-in kinds of client-go's scheme and of the CustomResourceDefinitions created in it
// (a created CRD is served at once, as unstructured objects, and Established); get, list and
// watch with label selectors and field selectors (metadata.name, metadata.namespace and any
// other field path, compared as a string), resourceVersion resumption and watch lists
// (sendInitialEvents with the initial-events-end bookmark); create (generateName), update with
// optimistic concurrency, JSON, merge and (built-in kinds) strategic merge patches, and
// server-side apply with managedFields, field managers, conflicts and force (upstream's
// k8s.io/apimachinery/pkg/util/managedfields); status subresources; delete with preconditions,
// finalizers (deletionTimestamp, removal when the last goes) and propagation (Background,
// Foreground and Orphan; dependents are collected synchronously by ownerReference UID);
// namespaces (content needs an existing, non-terminating namespace; deleting one deletes its
// content); SubjectAccessReviews (Options.Authorize) and ServiceAccount TokenRequests.
//
// What it does not do: authentication (every request is the cluster's admin), admission,
// defaulting and validation beyond names and the fields it needs, conversion between versions
// of a built-in resource (each is served in its newest version of client-go's scheme), CRD
// schemas (custom resources are stored as sent and merged as OCM's schema-less CRDs are:
// lists atomic), protobuf and CBOR bodies (Config sets JSON), pagination (limit is ignored,
// every list is one page), and no controller runs: a Deployment never gets Pods.
//
// Objects are stored once, as their JSON; watches are a cursor into the cluster's recent
// events, with no goroutine of their own: a watcher that falls behind the retained events
// gets 410 Gone and relists, as with a real API server.
package memkube

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
)

// Options configures a Cluster.
type Options struct {
	// Name names the cluster in errors and in its Host, https://<Name>.memkube.invalid.
	Name string
	// Version is served at /version (the registration agent reports it). Zero: v1.33.0.
	Version version.Info
	// Authorize answers SubjectAccessReviews, SelfSubjectAccessReviews and
	// LocalSubjectAccessReviews (the work agent's executor checks); nil allows everything.
	Authorize func(authorizationv1.SubjectAccessReviewSpec) (allowed bool, reason string)
	// CRDs are installed (and Established) before New returns, as an installer would have
	// done on a real managed cluster.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Now is the clock of creationTimestamp, deletionTimestamp and token expiry; nil is
	// time.Now.
	Now func() time.Time
}

// Cluster is one simulated managed cluster's API. Its methods are safe for concurrent use.
type Cluster struct {
	name    string
	host    string
	version []byte
	auth    func(authorizationv1.SubjectAccessReviewSpec) (bool, string)
	now     func() time.Time
	builtin *builtinTable

	mu sync.Mutex
	// rv is the last resourceVersion given out (one counter per cluster, as etcd's revision).
	rv     uint64
	tables map[schema.GroupResource]*table
	// crds are the resources served by CustomResourceDefinitions, by version.
	crds map[schema.GroupVersionResource]*resource
	// events are the recent changes, oldest first, for watches; floor is the resourceVersion
	// of the newest event dropped (a watch from an older one gets 410 Gone).
	events []event
	floor  uint64
}

// New builds a Cluster holding the namespaces default, kube-system, kube-public and
// kube-node-lease and opts.CRDs.
func New(opts Options) (*Cluster, error) {
	if opts.Name == "" {
		return nil, fmt.Errorf("memkube: Options.Name is required")
	}
	b, err := builtins()
	if err != nil {
		return nil, fmt.Errorf("memkube: building the built-in resources: %w", err)
	}
	v := opts.Version
	if v.GitVersion == "" {
		v = version.Info{Major: "1", Minor: "33", GitVersion: "v1.33.0", Platform: "linux/amd64"}
	}
	c := &Cluster{
		name: opts.Name, host: "https://" + opts.Name + ".memkube.invalid", auth: opts.Authorize,
		now: opts.Now, builtin: b, tables: map[schema.GroupResource]*table{},
		crds: map[schema.GroupVersionResource]*resource{},
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.version, err = jsonMarshal(v); err != nil {
		return nil, err
	}
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		obj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}
		if _, err := c.seed(obj); err != nil {
			return nil, fmt.Errorf("memkube %s: namespace %s: %w", c.name, ns, err)
		}
	}
	for _, crd := range opts.CRDs {
		obj, err := toMap(crd)
		if err != nil {
			return nil, fmt.Errorf("memkube %s: CRD %s: %w", c.name, crd.Name, err)
		}
		obj["apiVersion"], obj["kind"] = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		if _, err := c.seed(obj); err != nil {
			return nil, fmt.Errorf("memkube %s: CRD %s: %w", c.name, crd.Name, err)
		}
	}
	return c, nil
}

// Name is Options.Name.
func (c *Cluster) Name() string { return c.name }

// Host is the URL of the cluster's API, https://<name>.memkube.invalid.
func (c *Cluster) Host() string { return c.host }

// Config returns a fresh rest.Config reaching the cluster through RoundTripper: JSON content
// (memkube serves no protobuf) and no client-side rate limit (QPS -1; there is no server to
// protect, and the simulator's clients would otherwise queue at client-go's 5 a second).
func (c *Cluster) Config() *rest.Config {
	return &rest.Config{
		Host:               c.host,
		Transport:          c.RoundTripper(),
		ContentConfig:      rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"},
		QPS:                -1,
		Burst:              -1,
		UserAgent:          "memkube",
		DisableCompression: true,
	}
}

// RoundTripper serves the cluster's API to an HTTP client.
func (c *Cluster) RoundTripper() http.RoundTripper { return roundTripper{c} }

type roundTripper struct{ c *Cluster }

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return rt.c.serve(req), nil
}

// newUID is a random RFC 4122 UID.
func newUID() types.UID {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]))
}
