package csr

import (
	"context"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// RegistryReviewers serves the CSRApproval modules loaded in a Wasm plugin registry.
type RegistryReviewers struct {
	Registry *wasm.Registry
}

// Reviewers returns one Reviewer per loaded CSRApproval module, sorted by name.
func (r RegistryReviewers) Reviewers() []Reviewer {
	mods := r.Registry.List(abi.TypeCSRApproval)
	out := make([]Reviewer, 0, len(mods))
	for _, m := range mods {
		out = append(out, registryReviewer{name: m.Name(), reg: r.Registry, failClosed: m.FailurePolicy() != wasm.FailurePolicyIgnore})
	}
	return out
}

// Changed forwards the registry's CSRApproval events, coalesced, until ctx ends.
func (r RegistryReviewers) Changed(ctx context.Context) <-chan struct{} {
	events, cancel := r.Registry.Subscribe(abi.TypeCSRApproval)
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-events:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}

type registryReviewer struct {
	name       string
	reg        *wasm.Registry
	failClosed bool
}

func (r registryReviewer) Name() string { return r.name }

func (r registryReviewer) FailClosed() bool { return r.failClosed }

// ReviewCSR calls through the registry so a hot reload between listing and calling is served
// by the successor module rather than failing.
func (r registryReviewer) ReviewCSR(ctx context.Context, input []byte) ([]byte, error) {
	return r.reg.Call(ctx, r.name, abi.ExportReviewCSR, input)
}
