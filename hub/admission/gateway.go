package admission

import (
	"context"
	"errors"

	"github.com/flotilla-dev/flotilla/core/policy"
)

// ErrNotLoaded answers a gateway request that came before the first load of the policy
// ConfigMaps (within its evaluation deadline): the gateway refuses it (fail closed).
var ErrNotLoaded = errors.New("the hub has not loaded the policy ConfigMaps yet")

// EvaluateGateway judges a request of the cluster-gateway by the gateway policies
// (flotilla.gateway.*) of the set in force: the Loader compiles them from the same ConfigMaps
// as the admission policies, into the same set. As for admission, system:masters and the hub
// itself are judged by the embedded policies only (which hold no gateway policy), a request
// waits for the first load, and the evaluation has the handler's deadline (EvalTimeout); a
// policy that fails or runs out of time is an error in the Decision, which denies.
func (h *Handler) EvaluateGateway(ctx context.Context, in *policy.GatewayInput) (*policy.Decision, error) {
	privileged := h.isPrivileged(ctx, in.User.Username, in.User.Groups)
	evalCtx, cancel := context.WithTimeout(ctx, h.evalTimeout)
	defer cancel()
	if !privileged {
		select {
		case <-h.loaded:
		case <-evalCtx.Done():
			return nil, ErrNotLoaded
		}
	}
	d, err := h.set.Load().EvaluateGateway(evalCtx, in, SkipFor(privileged))
	if err != nil {
		return nil, err
	}
	for _, e := range d.Errors {
		reason := "error"
		if e.Timeout {
			reason = "timeout"
		}
		h.metrics.errors.WithLabelValues(e.Policy, reason).Inc()
		h.log.Error(e.Err, "gateway policy evaluation failed; the request is denied", "policy", e.Policy, "source", e.Source, "reason", reason,
			"cluster", in.Cluster.Name, "path", in.Request.Path, "user", in.User.Username)
	}
	return d, nil
}
