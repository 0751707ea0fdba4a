package csr

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Reviewer is one configured CSRApproval plugin: a loaded, ready one, or a fail-closed one that
// failed to load and whose every review fails.
type Reviewer interface {
	// Name identifies the plugin in CSR conditions, Events and metrics.
	Name() string
	// ReviewCSR calls the plugin's review_csr export with the JSON Request (abi.CSRReview) and
	// returns its JSON answer (abi.CSRDecision).
	ReviewCSR(ctx context.Context, input []byte) ([]byte, error)
	// FailClosed is true for failurePolicy Fail: when the plugin fails, no CSR is approved
	// (a Deny from another plugin still denies). With Ignore the failure is skipped.
	FailClosed() bool
}

// Reviewers lists the CSRApproval plugins that currently take part in decisions, and tells when that set
// (or a plugin's configuration) changes so pending CSRs can be looked at again.
type Reviewers interface {
	Reviewers() []Reviewer
	// Changed returns a channel that receives a value after each change. It is closed when ctx ends.
	Changed(ctx context.Context) <-chan struct{}
}

// Verdict is one plugin's answer, or its failure.
type Verdict struct {
	Plugin   string
	Decision abi.CSRDecisionKind
	Message  string
	Err      error
	// FailClosed carries the plugin's failure policy: a failure then blocks approval.
	FailClosed bool
}

// Review shows r to one plugin. Any failure (trap, bad JSON, unknown decision) is a Verdict
// with Err set, which never counts as an approval.
func Review(ctx context.Context, p Reviewer, r Request) Verdict {
	v := Verdict{Plugin: p.Name(), FailClosed: p.FailClosed()}
	raw, err := p.ReviewCSR(ctx, r.AppendJSON(nil))
	if err != nil {
		v.Err = err
		return v
	}
	var out abi.CSRDecision
	if err := out.DecodeJSON(raw); err != nil {
		v.Err = fmt.Errorf("decoding review_csr output %q: %w", truncate(raw), err)
		return v
	}
	v.Decision, v.Message = out.Decision, out.Message
	return v
}

func truncate(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// Outcome is what the hub does with a CSR.
type Outcome struct {
	// Decision is abi.CSRApprove, abi.CSRDeny, or "" (leave the CSR for the admin).
	Decision abi.CSRDecisionKind
	// Plugin and Message explain the decision; for a Deny they name the denying plugin.
	Plugin  string
	Message string
}

// Combine folds verdicts: any Deny wins; otherwise a failed fail-closed plugin leaves the CSR
// undecided; otherwise any Approve approves; otherwise nothing is decided. A failed plugin never
// approves. Ties are broken by plugin name so the outcome is deterministic.
func Combine(verdicts []Verdict) Outcome {
	vs := append([]Verdict(nil), verdicts...)
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Plugin < vs[j].Plugin })
	var approve *Verdict
	blocked := false
	for i := range vs {
		v := &vs[i]
		if v.Err != nil {
			blocked = blocked || v.FailClosed
			continue
		}
		switch v.Decision {
		case abi.CSRDeny:
			return Outcome{Decision: abi.CSRDeny, Plugin: v.Plugin, Message: v.Message}
		case abi.CSRApprove:
			if approve == nil {
				approve = v
			}
		}
	}
	if approve != nil && !blocked {
		return Outcome{Decision: abi.CSRApprove, Plugin: approve.Plugin, Message: approve.Message}
	}
	return Outcome{}
}

// describe renders an outcome for a CSR condition message.
func (o Outcome) describe() string {
	verb := "approved"
	if o.Decision == abi.CSRDeny {
		verb = "denied"
	}
	msg := strings.TrimSpace(o.Message)
	if msg == "" {
		return fmt.Sprintf("%s by CSRApproval plugin %s", verb, o.Plugin)
	}
	return fmt.Sprintf("%s by CSRApproval plugin %s: %s", verb, o.Plugin, msg)
}
