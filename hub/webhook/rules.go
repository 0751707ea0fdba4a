package webhook

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// ruleKey is one (group, version, resource, scope, operation) a rule matches.
type ruleKey struct{ group, version, resource, scope, op string }

// ruleKeys expands rules; an unset scope is the API server's default, "*".
func ruleKeys(rules []admissionregistrationv1.RuleWithOperations) map[ruleKey]bool {
	out := map[ruleKey]bool{}
	for _, r := range rules {
		scope := string(admissionregistrationv1.AllScopes)
		if r.Scope != nil {
			scope = string(*r.Scope)
		}
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					for _, op := range r.Operations {
						out[ruleKey{g, v, res, scope, string(op)}] = true
					}
				}
			}
		}
	}
	return out
}

// coversRules says have matches everything want matches, by literal comparison (a wildcard in
// want is covered only by the same wildcard: erring towards keeping rules).
func coversRules(have, want []admissionregistrationv1.RuleWithOperations) bool {
	h := ruleKeys(have)
	for k := range ruleKeys(want) {
		if !h[k] {
			return false
		}
	}
	return true
}

// unionRules matches what a or b matches: one rule per group, version, resource and scope,
// sorted, its operations sorted.
func unionRules(a, b []admissionregistrationv1.RuleWithOperations) []admissionregistrationv1.RuleWithOperations {
	type target struct{ group, version, resource, scope string }
	ops := map[target][]admissionregistrationv1.OperationType{}
	for k := range ruleKeys(append(slices.Clone(a), b...)) {
		t := target{k.group, k.version, k.resource, k.scope}
		ops[t] = append(ops[t], admissionregistrationv1.OperationType(k.op))
	}
	targets := make([]target, 0, len(ops))
	for t := range ops {
		targets = append(targets, t)
	}
	slices.SortFunc(targets, func(x, y target) int {
		return strings.Compare(x.group+"\x00"+x.resource+"\x00"+x.version+"\x00"+x.scope, y.group+"\x00"+y.resource+"\x00"+y.version+"\x00"+y.scope)
	})
	out := make([]admissionregistrationv1.RuleWithOperations, 0, len(targets))
	for _, t := range targets {
		o := ops[t]
		slices.Sort(o)
		scope := admissionregistrationv1.ScopeType(t.scope)
		out = append(out, admissionregistrationv1.RuleWithOperations{
			Operations: o,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{t.group}, APIVersions: []string{t.version}, Resources: []string{t.resource}, Scope: &scope},
		})
	}
	return out
}
