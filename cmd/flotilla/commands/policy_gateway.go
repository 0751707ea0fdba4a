package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/hub/admission"
)

// gatewayRequestDoc is the document of a gateway request for flotilla policy eval -f: kind
// GatewayRequest and the gateway policies' input (user, cluster, request).
type gatewayRequestDoc struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion,omitempty"`
	policy.GatewayInput
}

// parseGatewayRequest reads a GatewayRequest document; nil without error when data is not one
// (kind is something else).
func parseGatewayRequest(name string, data []byte) (*policy.GatewayInput, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, nil // the admission parser says what is wrong
	}
	var probe struct {
		Kind any `json:"kind"`
	}
	if json.Unmarshal(j, &probe) != nil || probe.Kind != policy.GatewayRequestKind {
		return nil, nil
	}
	var doc gatewayRequestDoc
	d := json.NewDecoder(bytes.NewReader(j))
	d.DisallowUnknownFields()
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: GatewayRequest: %w", name, err)
	}
	in := &doc.GatewayInput
	var errs []error
	if in.User.Username == "" {
		errs = append(errs, errors.New("user.username is missing"))
	}
	if in.Cluster.Name == "" {
		errs = append(errs, errors.New("cluster.name is missing (the ManagedCluster the request goes to)"))
	}
	if in.Request.Verb == "" {
		errs = append(errs, errors.New("request.verb is missing (get, list, watch, create, update, patch, delete, deletecollection; for a path that is no resource the lowercased method)"))
	}
	if in.Request.Path == "" {
		errs = append(errs, errors.New("request.path is missing (the path on the managed cluster, e.g. /api/v1/namespaces/default/configmaps)"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: GatewayRequest: %w", name, err)
	}
	if in.Request.Method == "" {
		in.Request.Method = methodOf(in.Request.Verb)
	}
	return in, nil
}

// methodOf is the HTTP method of a verb, for a request written without one.
func methodOf(verb string) string {
	switch verb {
	case "create":
		return "POST"
	case "update":
		return "PUT"
	case "patch":
		return "PATCH"
	case "delete", "deletecollection":
		return "DELETE"
	}
	return "GET"
}

// runGatewayEval evaluates a GatewayRequest with the gateway policies (flotilla.gateway.*) of
// the embedded defaults and the given sources, as the hub's cluster-gateway does.
func runGatewayEval(ctx context.Context, stdout io.Writer, in *policy.GatewayInput, args []string, o policyEvalOptions) error {
	if len(o.clusterNamespaces) > 0 {
		return errors.New("--cluster-namespaces applies to admission requests, not to a GatewayRequest (its cluster is cluster.name)")
	}
	sources, err := policySourcesFromArgs(args)
	if err != nil {
		return err
	}
	embedded, err := embeddedSource(false)
	if err != nil {
		return err
	}
	answer, _, err := evalAuthorizer(o)
	if err != nil {
		return err
	}
	rec := &recordingAuthorizer{next: answer}
	set, err := policy.Compile(ctx, append([]policy.Source{embedded}, sources...), policy.Options{Authorizer: rec, SkipTests: true})
	if err != nil {
		return fmt.Errorf("compiling policies: %w", err)
	}
	r := in.Request
	rep := evalReport{
		Authorize: o.authorize, Evaluated: []evalPolicy{}, Denials: []evalMessage{}, Warnings: []evalMessage{},
		Errors: []evalError{}, Authorizations: []authQuestion{},
		Request: evalRequest{
			Operation: r.Verb, Group: r.APIGroup, Resource: r.Resource, Subresource: r.Subresource, Namespace: r.Namespace, Name: r.Name,
			User: in.User.Username, Cluster: in.Cluster.Name, Method: r.Method, Path: r.Path,
		},
	}
	privileged := admission.Privileged(in.User.Username, in.User.Groups, "")
	policies := set.GatewayPolicies()
	switch {
	case len(policies) == 0:
		rep.Note = "no gateway policy (package under " + policy.GatewayPackagePrefix + ") in these files"
	case privileged:
		rep.Note = "the user is in system:masters: only the embedded defaults judge its requests, as on the hub (they hold no gateway policy)"
	}
	return judge(ctx, stdout, o, set, policies, privileged, in.Input(), rec, &rep)
}
