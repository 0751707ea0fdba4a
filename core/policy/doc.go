// Package policy compiles and evaluates the hub's admission policies: Rego modules run by Open
// Policy Agent (github.com/open-policy-agent/opa).
//
// A policy is a package under flotilla.admission with a constant `match` rule (which requests
// it sees) and `deny` and/or `warn` partial sets of messages; policies/README.md is the
// authors' guide and states the input document. Compile turns sources (the embedded
// defaults, a ConfigMap's files, a directory) into a Set: modules compiled once, each
// policy's query prepared once, its tests run; Set.Evaluate answers one admission request.
// The built-in flotilla.authorized asks an Authorizer (SubjectAccessReviews on the hub,
// cached) whether a user may do something.
//
// Gateway policies (gateway.go) are packages under flotilla.gateway with a deny rule and no
// match: they judge every request the hub's cluster-gateway proxies to a managed cluster
// (Set.EvaluateGateway, input GatewayInput). They compile into the same Set, from the same
// sources, with the same sandbox and tests.
//
// Policies run in a sandbox: built-ins that reach the network or the process
// (http.send, net.*, opa.runtime) or allocate without bound in one call (numbers.range,
// numbers.range_step) are not available, and every evaluation has a deadline.
package policy
