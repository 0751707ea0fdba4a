package webhook

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// DefaultTimeoutSeconds is how long the API server waits for a webhook unless its
// Registration says otherwise.
const DefaultTimeoutSeconds = 10

// Validating is a validating admission handler the Server serves and registers. Handle gets
// every request the API server sends for the Registration's rules (controller-runtime's
// admission.Request: operation, user, object and oldObject as JSON) and answers with
// admission.Allowed / admission.Denied / a Status (admission.Response). A panic is turned
// into an error response.
//
// Registration is read whenever the Server writes the ValidatingWebhookConfiguration, so a
// handler whose rules change at run time (a policy engine loading policies) calls
// Server.Resync after the change.
type Validating interface {
	admission.Handler
	Registration() Registration
}

// Shared is a Validating whose rules follow state it loads at run time and that every hub
// replica serves through the one configuration (hub/admission's policies). Each replica's
// Server writes the configuration, so one that has not loaded, or has not yet seen the latest
// state, must not take away rules another replica's state needs. The Server therefore applies
// no configuration until Loaded is closed, and it drops rules the live configuration has for
// the handler only once Current confirms the handler's state is the newest, which is then what
// every up-to-date replica has; otherwise it applies the union of its rules and the live ones.
// Wider rules cost only calls the handler allows; a replica that sees the newer state later
// narrows them (on its next sync, at most a resync period later). Each apply is guarded by the
// resourceVersion read, so a write by another replica in between is never overwritten unseen.
type Shared interface {
	Validating
	// Loaded is closed once the handler has loaded its state.
	Loaded() <-chan struct{}
	// Current reports whether the state Registration follows is the newest, by a consistent
	// read; asked only before rules would be dropped.
	Current(ctx context.Context) (bool, error)
}

// Registration says where a handler is served and which requests the API server sends it:
// one entry of the ValidatingWebhookConfiguration. Zero values take the defaults noted.
type Registration struct {
	// Name is the webhook's name in the configuration, unique within the Server and fully
	// qualified (at least three DNS labels), e.g. manifestworks.validate.flotilla.dev. It
	// appears in the API server's errors: admission webhook "<Name>" denied the request.
	Name string
	// Path is the URL path the handler is served at, e.g. /validate/manifestworks.
	Path string
	// Rules are the operations and resources sent to the handler.
	Rules []admissionregistrationv1.RuleWithOperations
	// FailurePolicy applies when the API server cannot reach the handler or it errs.
	// Default Fail.
	FailurePolicy admissionregistrationv1.FailurePolicyType
	// SideEffects default None: the handler changes nothing outside the request, so dry-run
	// requests are sent to it too.
	SideEffects admissionregistrationv1.SideEffectClass
	// TimeoutSeconds, between 1 and 30; default DefaultTimeoutSeconds.
	TimeoutSeconds int32
	// MatchPolicy default Equivalent: a request through another version of a matched
	// resource is converted and sent too.
	MatchPolicy admissionregistrationv1.MatchPolicyType
	// NamespaceSelector and ObjectSelector narrow the requests sent; nil matches all.
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
	// MatchConditions are CEL expressions the API server evaluates before calling the
	// handler; it is called only when all are true. An expression that fails to evaluate
	// counts as a failure to call (FailurePolicy applies), so guard with has().
	MatchConditions []admissionregistrationv1.MatchCondition
	// Mutating makes the webhook a mutating one: its handler may answer with patches
	// (admission.PatchResponseFromRaw), and the Server lists it in a
	// MutatingWebhookConfiguration of the same name as its ValidatingWebhookConfiguration.
	// The API server calls mutating webhooks before validating ones. A Shared handler cannot
	// be mutating.
	Mutating bool
}

// withDefaults fills in the zero values.
func (r Registration) withDefaults() Registration {
	if r.FailurePolicy == "" {
		r.FailurePolicy = admissionregistrationv1.Fail
	}
	if r.SideEffects == "" {
		r.SideEffects = admissionregistrationv1.SideEffectClassNone
	}
	if r.TimeoutSeconds == 0 {
		r.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if r.MatchPolicy == "" {
		r.MatchPolicy = admissionregistrationv1.Equivalent
	}
	return r
}

// validate checks what the API server would reject or what would break the Server's mux.
func (r Registration) validate() error {
	if errs := validation.IsDNS1123Subdomain(r.Name); len(errs) > 0 || strings.Count(r.Name, ".") < 2 {
		return fmt.Errorf("webhook name %q must be a fully qualified DNS name with at least three labels", r.Name)
	}
	if !strings.HasPrefix(r.Path, "/") || r.Path == "/" || r.Path == probePath {
		return fmt.Errorf("webhook %s: path %q must start with / and not be / or %s", r.Name, r.Path, probePath)
	}
	if len(r.Rules) == 0 {
		return fmt.Errorf("webhook %s: no rules", r.Name)
	}
	if r.Mutating && r.Path == probePath {
		return fmt.Errorf("webhook %s: the probe path cannot be mutating", r.Name)
	}
	if r.TimeoutSeconds < 1 || r.TimeoutSeconds > 30 {
		return fmt.Errorf("webhook %s: timeoutSeconds %d must be between 1 and 30", r.Name, r.TimeoutSeconds)
	}
	return nil
}

// validatingWebhook is the configuration entry for r, reached through clientConfig.
func (r Registration) validatingWebhook(clientConfig admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.ValidatingWebhook {
	failure, sideEffects, timeout, match := r.FailurePolicy, r.SideEffects, r.TimeoutSeconds, r.MatchPolicy
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    r.Name,
		ClientConfig:            clientConfig,
		Rules:                   r.Rules,
		FailurePolicy:           &failure,
		MatchPolicy:             &match,
		NamespaceSelector:       r.NamespaceSelector,
		ObjectSelector:          r.ObjectSelector,
		SideEffects:             &sideEffects,
		TimeoutSeconds:          &timeout,
		AdmissionReviewVersions: []string{"v1"},
		MatchConditions:         r.MatchConditions,
	}
}

// mutatingWebhook is the MutatingWebhookConfiguration entry for r, reached through
// clientConfig. Its patches are not re-checked by reinvocation: they only add.
func (r Registration) mutatingWebhook(clientConfig admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.MutatingWebhook {
	v := r.validatingWebhook(clientConfig)
	never := admissionregistrationv1.NeverReinvocationPolicy
	return admissionregistrationv1.MutatingWebhook{
		Name:                    v.Name,
		ClientConfig:            v.ClientConfig,
		Rules:                   v.Rules,
		FailurePolicy:           v.FailurePolicy,
		MatchPolicy:             v.MatchPolicy,
		NamespaceSelector:       v.NamespaceSelector,
		ObjectSelector:          v.ObjectSelector,
		SideEffects:             v.SideEffects,
		TimeoutSeconds:          v.TimeoutSeconds,
		AdmissionReviewVersions: v.AdmissionReviewVersions,
		MatchConditions:         v.MatchConditions,
		ReinvocationPolicy:      &never,
	}
}
