// Package admission is the hub's policy admission: every gate on OCM resources (execute-as,
// cluster acceptance, cluster-set join and bind, and policies of the hub's users) is a Rego
// policy (core/policy) evaluated in one validating webhook served by hub/webhook.
//
// The policies are the defaults embedded from policies/ plus ConfigMaps labelled
// flotilla.dev/policy=true in the hub's namespace, hot-reloaded by Loader: a ConfigMap whose
// policies fail to compile or to pass their tests is refused with an Event and a log line, and
// its last good version (or nothing) stays in force. The webhook's rules follow the policies'
// match rules. Until Loader's first load (at every start) the Handler holds requests and is
// not Loaded, so the hub is not ready and the webhook server writes no configuration; a
// replica narrows the shared rules only while its policies are current (webhook.Shared).
//
// Failures close: an evaluation error or timeout denies and is counted in
// flotilla_admission_policy_errors_total. The hub's own identity and members of
// system:masters are judged by the embedded defaults only, so a broken ConfigMap policy cannot
// lock them out.
package admission

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/singleflight"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// Name is the webhook's name, as the API server quotes it in denials:
// admission webhook "policies.admission.flotilla.dev" denied the request: policy ...
const Name = "policies.admission.flotilla.dev"

// Path is where the webhook server serves the handler.
const Path = "/validate/policies"

// Defaults of Options.
const (
	// DefaultEvalTimeout bounds the evaluation of one request's policies; it is under the
	// webhook's timeout so a slow policy is answered (denied) by us, not by the API server.
	DefaultEvalTimeout = 3 * time.Second
	// TimeoutSeconds is the API server's wait for the webhook.
	TimeoutSeconds = 5
)

// Handler evaluates the current policy set for each request; it is a webhook.Shared.
type Handler struct {
	set         atomic.Pointer[policy.Set]
	loaded      chan struct{} // closed by the first SetPolicies (at once without AwaitLoad)
	loadOnce    sync.Once
	current     func(ctx context.Context) (bool, error) // the Loader's; nil: always current
	evalTimeout time.Duration
	isCluster   func(ctx context.Context, namespace string) bool
	gates       map[string]bool
	privileged  func(ctx context.Context) string
	groups      Groups
	metrics     *metrics
	log         logr.Logger
}

// HandlerOptions configure a Handler.
type HandlerOptions struct {
	// EvalTimeout defaults to DefaultEvalTimeout; it must stay under TimeoutSeconds.
	EvalTimeout time.Duration
	// IsClusterNamespace says whether a ManagedCluster of that name exists (input.clusterNamespace).
	IsClusterNamespace func(ctx context.Context, namespace string) bool
	// FeatureGates are reported as input.featureGates (NilExecutorValidating, ...).
	FeatureGates featuregate.FeatureGate
	// HubIdentity returns the hub's own user name, "" while unknown; its requests, like those
	// of system:masters, are judged by the embedded policies only.
	HubIdentity func(ctx context.Context) string
	// AwaitLoad says the set given to NewHandler holds the embedded policies only and a Loader
	// puts the full set in force with SetPolicies: until its first call Loaded stays open, the
	// webhook server applies no configuration, and a request of anyone but the privileged
	// waits for it (Handle).
	AwaitLoad bool
	// Groups are the API groups the handler's webhook is registered for; the zero value
	// registers every group the policies match.
	Groups Groups
	Logger logr.Logger
}

// Groups selects API groups. The hub's registration-webhook and work-webhook components,
// run apart, each register the policies of their own groups, so that the API server sends
// a request only to the webhook configuration of the process serving its group.
type Groups struct {
	// Only, when not empty, selects these groups and no other; Except leaves these out.
	Only, Except []string
}

// Has says whether g selects group.
func (g Groups) Has(group string) bool {
	return (len(g.Only) == 0 || slices.Contains(g.Only, group)) && !slices.Contains(g.Except, group)
}

var _ webhook.Shared = (*Handler)(nil)

// NewHandler returns a handler enforcing set until SetPolicies replaces it.
func NewHandler(set *policy.Set, opts HandlerOptions) (*Handler, error) {
	if opts.EvalTimeout <= 0 {
		opts.EvalTimeout = DefaultEvalTimeout
	}
	if opts.EvalTimeout >= TimeoutSeconds*time.Second {
		return nil, fmt.Errorf("admission: evaluation timeout %s must be under the webhook's %ds", opts.EvalTimeout, TimeoutSeconds)
	}
	m, err := registerMetrics()
	if err != nil {
		return nil, err
	}
	h := &Handler{
		evalTimeout: opts.EvalTimeout, isCluster: opts.IsClusterNamespace, gates: gateValues(opts.FeatureGates),
		privileged: opts.HubIdentity, groups: opts.Groups, metrics: m, log: opts.Logger, loaded: make(chan struct{}),
	}
	h.set.Store(set)
	if !opts.AwaitLoad {
		h.loadOnce.Do(func() { close(h.loaded) })
	}
	return h, nil
}

// gateValues reads every gate g knows.
func gateValues(g featuregate.FeatureGate) map[string]bool {
	out := map[string]bool{}
	if g == nil {
		return out
	}
	for _, f := range g.KnownFeatures() {
		name, _, _ := strings.Cut(f, "=")
		if name == "AllAlpha" || name == "AllBeta" {
			continue
		}
		out[name] = g.Enabled(featuregate.Feature(name))
	}
	return out
}

// Policies is the set in force.
func (h *Handler) Policies() *policy.Set { return h.set.Load() }

// SetPolicies puts set in force and reports whether the webhook's rules changed, or this is
// the first load the handler awaited (the caller then has the server re-register:
// webhook.Server.Resync).
func (h *Handler) SetPolicies(set *policy.Set) bool {
	old := h.set.Swap(set)
	first := false
	h.loadOnce.Do(func() { close(h.loaded); first = true })
	return first || old == nil || !equalRules(old.Rules(), set.Rules())
}

// Loaded is closed once the policies of the ConfigMaps are in force (see
// HandlerOptions.AwaitLoad).
func (h *Handler) Loaded() <-chan struct{} { return h.loaded }

// Current reports whether the policies in force were loaded from the policy ConfigMaps as
// they are now (the Loader's check; a handler without Loader is always current). The webhook
// server asks before it narrows the rules another replica may have widened.
func (h *Handler) Current(ctx context.Context) (bool, error) {
	if h.current == nil {
		return true, nil
	}
	return h.current(ctx)
}

func equalRules(a, b map[string]map[string][]string) bool {
	return fmt.Sprint(a) == fmt.Sprint(b) // maps print sorted
}

// metadataOnly holds for an UPDATE that changes neither the spec (metadata.generation), the
// labels nor the annotations: only finalizers, owner references or managed fields. Such
// updates are not sent, so an agent or controller can finish a cleanup (drop its finalizer)
// while the hub is down. Every OCM resource served has a status subresource, so generation
// moves with the spec.
const metadataOnly = `request.operation == 'UPDATE' && has(object.metadata.generation) && has(oldObject.metadata.generation) && ` +
	`object.metadata.generation == oldObject.metadata.generation && ` +
	`(has(object.metadata.labels) ? object.metadata.labels : {}) == (has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}) && ` +
	`(has(object.metadata.annotations) ? object.metadata.annotations : {}) == (has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {})`

// Registration sends what the policies match in the handler's groups (HandlerOptions.Groups),
// except status writes and metadata-only updates, failing closed with a short timeout. A
// request of another group that still reaches the handler (a configuration written before
// the groups were split) is judged all the same.
func (h *Handler) Registration() webhook.Registration {
	var rules []admissionregistrationv1.RuleWithOperations
	for group, resources := range h.set.Load().Rules() {
		if !h.groups.Has(group) {
			continue
		}
		for resource, ops := range resources {
			r := admissionregistrationv1.RuleWithOperations{
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource},
					Scope: ptr(admissionregistrationv1.AllScopes),
				},
			}
			for _, op := range ops {
				r.Operations = append(r.Operations, admissionregistrationv1.OperationType(op))
			}
			rules = append(rules, r)
		}
	}
	sortRules(rules)
	return webhook.Registration{
		Name: Name, Path: Path, Rules: rules,
		FailurePolicy:   admissionregistrationv1.Fail,
		TimeoutSeconds:  TimeoutSeconds,
		MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "not-metadata-only", Expression: "!(" + metadataOnly + ")"}},
	}
}

// Handle evaluates the matching policies.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	resource := req.Resource.Resource
	in, err := policy.NewInput(&req.AdmissionRequest, policy.InputOptions{
		FeatureGates:       h.gates,
		IsClusterNamespace: func(ns string) bool { return h.isCluster != nil && h.isCluster(ctx, ns) },
	})
	if err != nil {
		h.metrics.requests.WithLabelValues(resource, "error").Inc()
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s %s/%s: %w", req.Kind.Kind, req.Namespace, req.Name, err))
	}
	privileged := h.isPrivileged(ctx, req.UserInfo.Username, req.UserInfo.Groups)
	evalCtx, cancel := context.WithTimeout(ctx, h.evalTimeout)
	defer cancel()
	if !privileged {
		// Until the first load the set is the embedded policies only, which would admit what
		// the ConfigMaps' policies deny (a hub starting, a new replica): wait for the load
		// within the evaluation's deadline, and fail closed if it does not come.
		select {
		case <-h.loaded:
		case <-evalCtx.Done():
			h.metrics.requests.WithLabelValues(resource, "error").Inc()
			return admission.Errored(http.StatusServiceUnavailable, fmt.Errorf("%s %s/%s: the hub has not loaded the policy ConfigMaps yet (denied: policies fail closed)",
				req.Kind.Kind, req.Namespace, req.Name))
		}
	}
	set := h.set.Load()
	d, err := set.Evaluate(evalCtx, in, SkipFor(privileged))
	h.metrics.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		h.metrics.requests.WithLabelValues(resource, "error").Inc()
		return admission.Errored(http.StatusInternalServerError, err)
	}
	var warnings []string
	for _, w := range d.Warnings {
		warnings = append(warnings, fmt.Sprintf("policy %s: %s", w.Policy, w.Message))
	}
	for _, e := range d.Errors {
		reason := "error"
		if e.Timeout {
			reason = "timeout"
		}
		h.metrics.errors.WithLabelValues(e.Policy, reason).Inc()
		h.log.Error(e.Err, "policy evaluation failed; the request is denied", "policy", e.Policy, "source", e.Source, "reason", reason,
			"resource", resource, "namespace", req.Namespace, "name", req.Name, "user", req.UserInfo.Username)
	}
	if d.Allowed() {
		h.metrics.requests.WithLabelValues(resource, "allowed").Inc()
		return admission.Allowed("").WithWarnings(warnings...)
	}
	h.metrics.requests.WithLabelValues(resource, "denied").Inc()
	var msgs []string
	for _, dn := range d.Denials {
		msgs = append(msgs, fmt.Sprintf("policy %s: %s", dn.Policy, dn.Message))
	}
	for _, e := range d.Errors {
		msgs = append(msgs, e.Error()+" (denied: policies fail closed)")
	}
	status := metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: strings.Join(msgs, "; "),
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}.WithWarnings(warnings...)
}

// isPrivileged: system:masters and the hub itself.
func (h *Handler) isPrivileged(ctx context.Context, user string, groups []string) bool {
	if Privileged(user, groups, "") {
		return true
	}
	return h.privileged != nil && user != "" && Privileged(user, nil, h.privileged(ctx))
}

// HubIdentityFunc returns a HubIdentity that asks whoami (a SelfSubjectReview) until it
// succeeds and then remembers the name. Callers that find it unknown share one request, which
// runs under its own one-second deadline; each waits for it only as long as its own context
// allows, so no request is held behind another's round-trip.
func HubIdentityFunc(whoami func(ctx context.Context) (string, error), log logr.Logger) func(ctx context.Context) string {
	var known atomic.Pointer[string]
	var flight singleflight.Group
	return func(ctx context.Context) string {
		if n := known.Load(); n != nil {
			return *n
		}
		answer := flight.DoChan("whoami", func() (any, error) {
			// Not the first caller's cancellation: the answer serves every caller waiting.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			n, err := whoami(ctx)
			if err == nil && n != "" {
				known.Store(&n)
			}
			return n, err
		})
		select {
		case r := <-answer:
			if r.Err != nil {
				log.V(1).Info("cannot tell the hub's own identity yet", "error", r.Err.Error())
				return ""
			}
			return r.Val.(string)
		case <-ctx.Done():
			return ""
		}
	}
}

func ptr[T any](v T) *T { return &v }
