package csr

import (
	"context"
	"fmt"
	"sort"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// RegistryReviewers serves the CSRApproval modules loaded in a Wasm plugin registry.
type RegistryReviewers struct {
	Registry *wasm.Registry
}

// Reviewers returns one Reviewer per loaded CSRApproval module and one per CSRApproval plugin
// that is configured with failurePolicy Fail but failed to load (its every review fails, so it
// blocks approval as a failing loaded plugin would), sorted by name. A plugin with failurePolicy
// Ignore that failed to load is skipped.
func (r RegistryReviewers) Reviewers() []Reviewer {
	mods := r.Registry.List(abi.TypeCSRApproval)
	unavailable := r.Registry.Unavailable(abi.TypeCSRApproval)
	out := make([]Reviewer, 0, len(mods)+len(unavailable))
	for _, m := range mods {
		out = append(out, registryReviewer{name: m.Name(), reg: r.Registry, failClosed: m.FailurePolicy() != wasm.FailurePolicyIgnore})
	}
	for _, u := range unavailable {
		if u.FailurePolicy != wasm.FailurePolicyIgnore {
			out = append(out, unavailableReviewer{u})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
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

// unavailableReviewer stands for a fail-closed plugin that is configured but has no module.
type unavailableReviewer struct{ u wasm.Unavailable }

func (r unavailableReviewer) Name() string { return r.u.Name }

func (r unavailableReviewer) FailClosed() bool { return true }

func (r unavailableReviewer) ReviewCSR(context.Context, []byte) ([]byte, error) {
	return nil, fmt.Errorf("wasm plugin %q: %w (%s: %s)", r.u.Name, wasm.ErrNotLoaded, r.u.Reason, r.u.Message)
}
