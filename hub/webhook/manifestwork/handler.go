// Package manifestwork is the hub's validating admission webhook for ManifestWork
// (work.open-cluster-management.io/v1), served by hub/webhook.
//
// It matches OCM's ManifestWork webhook: at least one manifest, the total size of the
// manifests capped (DefaultMaxSize, 500 KiB, `flotilla hub --work-max-size`; OCM's
// --manifestLimit), every manifest an object with a name and without generateName. It checks
// further what the CRD schema cannot express or what the work agent
// would only fail on later (see ValidateSpec). Errors are a field.ErrorList, so the API server
// answers 422 Invalid naming the field, e.g.
//
//	admission webhook "manifestworks.validate.flotilla.dev" denied the request:
//	ManifestWork.work.open-cluster-management.io "w" is invalid:
//	spec.workload.manifests[2].metadata.name: Required value
//
// Who may use an executor ("execute-as", and OCM's NilExecutorValidating gate) is a policy,
// not a check here: policies/execute_as.rego, evaluated by hub/admission.
//
// The webhook is called for creates and for updates that change the spec (metadata.generation
// moves): an update of labels, annotations or finalizers (the work agent removing its
// finalizer while a cluster namespace is deleted) neither needs the webhook nor fails while
// the hub is down. Deletes and the status subresource are never sent.
package manifestwork

import (
	"context"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// Name is the webhook's name in the configuration, as the API server quotes it in denials.
const Name = "manifestworks.validate.flotilla.dev"

// Path is where the Server serves it.
const Path = "/validate/work.open-cluster-management.io/v1/manifestworks"

// Options configures the handler.
type Options struct {
	// MaxSize caps the total size of a work's manifests in bytes; 0 means DefaultMaxSize.
	MaxSize int
}

// Handler validates ManifestWork creates and updates; it is a webhook.Validating.
type Handler struct {
	opts    Options
	decoder admission.Decoder
}

var _ webhook.Validating = (*Handler)(nil)

// New returns the handler.
func New(opts Options) *Handler {
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	scheme := runtime.NewScheme()
	// Registering a static type list cannot fail.
	_ = workv1.AddToScheme(scheme)
	return &Handler{opts: opts, decoder: admission.NewDecoder(scheme)}
}

// MaxSize is the cap on the total size of a work's manifests.
func (h *Handler) MaxSize() int { return h.opts.MaxSize }

// specChanged lets through creates and those updates that change the spec: the API server has
// already bumped metadata.generation when validating webhooks run.
const specChanged = `request.operation != 'UPDATE' || !has(object.metadata.generation) || !has(oldObject.metadata.generation) || object.metadata.generation != oldObject.metadata.generation`

// Registration sends creates and spec-changing updates of manifestworks.
func (h *Handler) Registration() webhook.Registration {
	return webhook.Registration{
		Name: Name,
		Path: Path,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{workv1.GroupVersion.Group},
				APIVersions: []string{workv1.GroupVersion.Version},
				Resources:   []string{"manifestworks"},
				Scope:       ptr(admissionregistrationv1.NamespacedScope),
			},
		}},
		FailurePolicy:   admissionregistrationv1.Fail,
		MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "spec-changed", Expression: specChanged}},
	}
}

// Handle validates one request.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	work := &workv1.ManifestWork{}
	if err := h.decoder.DecodeRaw(req.Object, work); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	name := work.Name
	if name == "" {
		name = req.Name
	}
	errs, warnings := ValidateSpec(&work.Spec, field.NewPath("spec"), h.opts.MaxSize)
	if len(errs) > 0 {
		return denied(apierrors.NewInvalid(workv1.GroupVersion.WithKind("ManifestWork").GroupKind(), name, errs), warnings)
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// denied answers with err's Status, which the API server returns to the client with the
// webhook's name in front of the message.
func denied(err *apierrors.StatusError, warnings []string) admission.Response {
	status := err.Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}.WithWarnings(warnings...)
}

func ptr[T any](v T) *T { return &v }
