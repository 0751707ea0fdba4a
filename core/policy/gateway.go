package policy

import (
	"context"
	"fmt"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// GatewayPackagePrefix is the package under which gateway policies live: package
// flotilla.gateway.<name>. A gateway policy judges every request the hub's cluster-gateway
// (cluster.core.oam.dev/v1alpha1 clustergateways/proxy) proxies to a managed cluster. It has a
// deny rule and no match rule (it sees every proxied request); input is a GatewayInput.
const GatewayPackagePrefix = "flotilla.gateway"

// GatewayRequestKind is the kind of the document `flotilla policy eval -f` reads for a gateway
// request: {kind: GatewayRequest, user, cluster, request}, the fields of GatewayInput.
const GatewayRequestKind = "GatewayRequest"

// GatewayInput is the input document of gateway policies (policies/README.md states it).
type GatewayInput struct {
	User    UserInfo       `json:"user"`
	Cluster GatewayCluster `json:"cluster"`
	Request GatewayRequest `json:"request"`
}

// GatewayCluster is input.cluster: the ManagedCluster the request goes to.
type GatewayCluster struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	ClusterSets []string          `json:"clusterSets"`
}

// GatewayRequest is input.request: the request sent to the managed cluster's API server (the
// path after .../clustergateways/<cluster>/proxy), as the API server would read it.
type GatewayRequest struct {
	// Method is the HTTP method; Verb the Kubernetes verb (get, list, watch, create, update,
	// patch, delete, deletecollection; for a non-resource path the lowercased method).
	Method string `json:"method"`
	Verb   string `json:"verb"`
	Path   string `json:"path"`
	// Query is the query string, parsed.
	Query map[string][]string `json:"query"`
	// Upgrade is set for a connection upgrade (exec, attach, port-forward).
	Upgrade           bool   `json:"upgrade"`
	IsResourceRequest bool   `json:"isResourceRequest"`
	APIGroup          string `json:"apiGroup"`
	APIVersion        string `json:"apiVersion"`
	Resource          string `json:"resource"`
	Subresource       string `json:"subresource"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
}

// Input is the document of in, for Set.EvaluateGateway.
func (in *GatewayInput) Input() *Input {
	extra := map[string]any{}
	for k, v := range in.User.Extra {
		extra[k] = stringsToAny(v)
	}
	labels := map[string]any{}
	for k, v := range in.Cluster.Labels {
		labels[k] = v
	}
	query := map[string]any{}
	for k, v := range in.Request.Query {
		query[k] = stringsToAny(v)
	}
	sets := append([]string(nil), in.Cluster.ClusterSets...)
	sort.Strings(sets)
	r := in.Request
	return &Input{Doc: map[string]any{
		"user": map[string]any{
			"username": in.User.Username, "uid": in.User.UID,
			"groups": stringsToAny(in.User.Groups), "extra": extra,
		},
		"cluster": map[string]any{"name": in.Cluster.Name, "labels": labels, "clusterSets": stringsToAny(sets)},
		"request": map[string]any{
			"method": r.Method, "verb": r.Verb, "path": r.Path, "query": query, "upgrade": r.Upgrade,
			"isResourceRequest": r.IsResourceRequest, "apiGroup": r.APIGroup, "apiVersion": r.APIVersion,
			"resource": r.Resource, "subresource": r.Subresource, "namespace": r.Namespace, "name": r.Name,
		},
	}}
}

// GatewayPolicies are the set's gateway policies, sorted by name.
func (s *Set) GatewayPolicies() []*Policy { return s.gateway }

// EvaluateGateway runs every gateway policy that skip does not exclude (nil excludes none) on
// in. ctx bounds each evaluation; an evaluation error is in Decision.Errors (and denies).
func (s *Set) EvaluateGateway(ctx context.Context, in *GatewayInput, skip func(*Policy) bool) (*Decision, error) {
	return s.EvaluatePolicies(ctx, s.gateway, in.Input(), skip)
}

// discoverGateway finds the gateway policies: packages under GatewayPackagePrefix declared in
// non-test files, each with a deny rule and neither match nor warn.
func (s *Set) discoverGateway(ctx context.Context, modules map[string]*ast.Module, origin map[string]string, opts Options) error {
	pkgs, names := packagesUnder(modules, origin, GatewayPackagePrefix)
	for _, name := range names {
		info := pkgs[name]
		pkg := GatewayPackagePrefix + "." + name
		switch {
		case info.match:
			return &Error{Source: info.source, Err: fmt.Errorf("package %s has a match rule: a gateway policy sees every proxied request (drop match; test input.request instead)", pkg)}
		case info.warn:
			return &Error{Source: info.source, Err: fmt.Errorf("package %s has a warn rule: gateway policies only deny", pkg)}
		case !info.deny:
			return &Error{Source: info.source, Err: fmt.Errorf("package %s has no deny rule", pkg)}
		}
		q, err := rego.New(
			rego.Query(fmt.Sprintf("deny := data.%s.deny", pkg)),
			rego.Compiler(s.compiler),
			rego.StrictBuiltinErrors(true),
			authorizedFunction(opts.Authorizer),
		).PrepareForEval(ctx)
		if err != nil {
			return &Error{Source: info.source, Err: fmt.Errorf("package %s: %w", pkg, err)}
		}
		s.gateway = append(s.gateway, &Policy{Name: name, Source: info.source, query: q})
	}
	return nil
}
