// Package override is the hub's validating admission webhook for ManifestWorkReplicaSetOverride
// (flotilla.dev/v1alpha1), served by hub/webhook.
//
// It runs override.Compile, the check the controller and the CLI run too, so an override that
// would never render (a JSON patch add without a value, a template that does not parse, a bad
// selector) is refused when written, naming the field, instead of failing later on every
// cluster. Errors are a field.ErrorList, so the API server answers 422 Invalid, e.g.
//
//	admission webhook "manifestworkreplicasetoverrides.validate.flotilla.dev" denied the request:
//	ManifestWorkReplicaSetOverride.flotilla.dev "eu" is invalid:
//	spec.rules[0].jsonPatch[0].value: Required value: ...
//
// Who may write an override is a policy, not a check here: policies/override_target.rego.
// Like the ManifestWork webhook it sees creates and spec-changing updates only.
package override

import (
	"context"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	mwrsoverride "github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// Name is the webhook's name in the configuration, as the API server quotes it in denials.
const Name = "manifestworkreplicasetoverrides.validate.flotilla.dev"

// Path is where the Server serves it.
const Path = "/validate/flotilla.dev/v1alpha1/manifestworkreplicasetoverrides"

const (
	// DefaultTimeout bounds one Compile; the API server waits 5 s for the webhook.
	DefaultTimeout = 2 * time.Second
	// maxObjectBytes caps the object decoded: the spec's cap (Compile checks it exactly)
	// with room for metadata and status.
	maxObjectBytes = 2 * mwrsoverride.MaxSpecBytes
)

// Options configures the handler.
type Options struct {
	// Timeout bounds the validation of one request; 0 means DefaultTimeout.
	Timeout time.Duration
}

// Handler validates override creates and updates; it is a webhook.Validating.
type Handler struct {
	opts    Options
	decoder admission.Decoder
}

var _ webhook.Validating = (*Handler)(nil)

// New returns the handler.
func New(opts Options) *Handler {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	scheme := runtime.NewScheme()
	// Registering a static type list cannot fail.
	_ = flotillav1alpha1.AddToScheme(scheme)
	return &Handler{opts: opts, decoder: admission.NewDecoder(scheme)}
}

// specChanged lets through creates and those updates that change the spec.
const specChanged = `request.operation != 'UPDATE' || !has(object.metadata.generation) || !has(oldObject.metadata.generation) || object.metadata.generation != oldObject.metadata.generation`

// Registration sends creates and spec-changing updates of manifestworkreplicasetoverrides.
func (h *Handler) Registration() webhook.Registration {
	scope := admissionregistrationv1.NamespacedScope
	return webhook.Registration{
		Name: Name,
		Path: Path,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{flotillav1alpha1.GroupVersion.Group},
				APIVersions: []string{flotillav1alpha1.GroupVersion.Version},
				Resources:   []string{"manifestworkreplicasetoverrides"},
				Scope:       &scope,
			},
		}},
		FailurePolicy:   admissionregistrationv1.Fail,
		MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "spec-changed", Expression: specChanged}},
	}
}

var gk = flotillav1alpha1.GroupVersion.WithKind("ManifestWorkReplicaSetOverride").GroupKind()

// Handle validates one request.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	if n := len(req.Object.Raw); n > maxObjectBytes {
		return denied(apierrors.NewInvalid(gk, req.Name, field.ErrorList{field.TooLong(field.NewPath("spec"), n, mwrsoverride.MaxSpecBytes)}))
	}
	o := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
	if err := h.decoder.DecodeRaw(req.Object, o); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding ManifestWorkReplicaSetOverride %s/%s: %w", req.Namespace, req.Name, err))
	}
	name := o.Name
	if name == "" {
		name = req.Name
	}
	errs, err := h.compile(ctx, name, &o.Spec)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("validating ManifestWorkReplicaSetOverride %s/%s: %w", req.Namespace, name, err))
	}
	if len(errs) > 0 {
		return denied(apierrors.NewInvalid(gk, name, errs))
	}
	return admission.Allowed("")
}

// compile runs Compile under the handler's deadline. Compile takes no context; its size caps
// bound it, and the deadline keeps a slow one from holding the API server's request: the
// request is refused and the goroutine finishes on its own.
func (h *Handler) compile(ctx context.Context, name string, spec *flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec) (field.ErrorList, error) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.Timeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("compiling the spec: %w", err)
	}
	done := make(chan field.ErrorList, 1)
	go func() {
		_, errs := mwrsoverride.Compile(name, spec, field.NewPath("spec"))
		done <- errs
	}()
	select {
	case errs := <-done:
		return errs, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("compiling the spec did not finish within %s: %w", h.opts.Timeout, ctx.Err())
	}
}

// denied answers with err's Status, which the API server returns to the client with the
// webhook's name in front of the message.
func denied(err *apierrors.StatusError) admission.Response {
	status := err.Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}
