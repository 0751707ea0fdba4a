package work

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/library"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/log"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// Condition rules (manifestConfigs[].conditionRules) derive conditions of a manifest from its
// live object, as OCM's agent does: a CEL rule sets its condition True when all of its
// expressions are true; a WellKnownConditions rule evaluates the built-in rule of the
// object's kind for its condition (Complete for Jobs and Pods). Conditions made by rules carry
// a reason starting with ConditionRule, which is how they are told from the agent's own, and
// the generation of the work they were evaluated for, which is how those of a removed rule are
// pruned. A Complete manifest is no longer applied; the work's conditions aggregate the rules'.

// Limits on CEL evaluation, the API server's for runtime CEL (as OCM's agent uses them): one
// expression may cost at most celPerCallLimit (about 0.1s), the rules of one manifest at most
// celManifestBudget (about 1s) per status sync; an expression past either fails.
const (
	celPerCallLimit   = uint64(celconfig.PerCallLimit)
	celManifestBudget = int64(celconfig.RuntimeCELCostBudget)
	// maxRuleMessage bounds the message of a rule-made condition (the API allows 32768 bytes).
	maxRuleMessage = 1024
	// celProgramCacheSize bounds the compiled programs kept, by expression text.
	celProgramCacheSize = 1024
)

// reasonRulesAggregated is the reason of the work-level conditions aggregated from the
// manifests' rule-made ones (OCM's); like theirs it starts with ConditionRule.
const reasonRulesAggregated = "ConditionRulesAggregated"

// wellKnownRules are the built-in rules of WellKnownConditions, by kind and condition: a Job
// is Complete when it finished (its Complete or Failed condition is True), a Pod when its
// phase is Succeeded or Failed, as in OCM.
var wellKnownRules = map[schema.GroupVersionKind]map[string]workv1.ConditionRule{
	{Group: "batch", Version: "v1", Kind: "Job"}: {workv1.ManifestComplete: {
		Condition: workv1.ManifestComplete,
		Type:      workv1.CelConditionExpressionsType,
		CelExpressions: []string{`has(object.status) && hasConditions(object.status) &&
			object.status.conditions.exists(c, (c.type == 'Complete' || c.type == 'Failed') && c.status == 'True')`},
		MessageExpression: `result ? "Job is finished" : "Job is not finished"`,
	}},
	{Group: "", Version: "v1", Kind: "Pod"}: {workv1.ManifestComplete: {
		Condition:         workv1.ManifestComplete,
		Type:              workv1.CelConditionExpressionsType,
		CelExpressions:    []string{`has(object.status) && has(object.status.phase) && object.status.phase in ['Succeeded', 'Failed']`},
		MessageExpression: `has(object.status) && has(object.status.phase) ? "Pod is in phase " + object.status.phase : "Pod has no phase yet"`,
	}},
}

// ruleEvaluator evaluates condition rules. Compiled programs are cached by expression text, so
// a status sync recompiles nothing; compile errors are cached too.
type ruleEvaluator struct {
	// ruleEnv has the variable object; messageEnv also result, the outcome of the expressions.
	ruleEnv, messageEnv *cel.Env
	programs            *lru.Cache
	perCallLimit        uint64
	budget              int64
}

type programKey struct {
	message bool
	expr    string
}

type compiledExpr struct {
	prg cel.Program
	err error
}

var (
	sharedEvaluatorOnce sync.Once
	sharedEvaluator     *ruleEvaluator
	sharedEvaluatorErr  error
)

// conditionRules returns the process's evaluator (its cache is shared by every agent).
func conditionRules() (*ruleEvaluator, error) {
	sharedEvaluatorOnce.Do(func() { sharedEvaluator, sharedEvaluatorErr = newRuleEvaluator(celPerCallLimit, celManifestBudget) })
	return sharedEvaluator, sharedEvaluatorErr
}

func newRuleEvaluator(perCallLimit uint64, budget int64) (*ruleEvaluator, error) {
	ruleEnv, err := celEnv(cel.Variable("object", cel.DynType))
	if err != nil {
		return nil, fmt.Errorf("condition rules: CEL environment: %w", err)
	}
	messageEnv, err := celEnv(cel.Variable("object", cel.DynType), cel.Variable("result", cel.BoolType))
	if err != nil {
		return nil, fmt.Errorf("condition rules: CEL environment: %w", err)
	}
	return &ruleEvaluator{ruleEnv: ruleEnv, messageEnv: messageEnv, programs: lru.New(celProgramCacheSize),
		perCallLimit: perCallLimit, budget: budget}, nil
}

// celEnv is OCM's condition-rule environment: the Kubernetes CEL libraries (those of the API
// server's validation rules) and hasConditions.
func celEnv(vars ...cel.EnvOption) (*cel.Env, error) {
	return cel.NewEnv(slices.Concat(vars, []cel.EnvOption{
		cel.OptionalTypes(),
		ext.Strings(),
		library.Lists(),
		library.Regex(),
		library.URLs(),
		library.Quantity(),
		library.IP(),
		library.CIDR(),
		library.Format(),
		library.SemverLib(),
		cel.Function("hasConditions", cel.Overload("status_has_conditions",
			[]*cel.Type{cel.DynType}, cel.BoolType, cel.UnaryBinding(hasConditions))),
	})...)
}

// hasConditions(status) is true when status is a map whose conditions key holds a non-empty list.
func hasConditions(v ref.Val) ref.Val {
	m, ok := v.(traits.Mapper)
	if !ok {
		return types.False
	}
	conds, found := m.Find(types.String("conditions"))
	if !found {
		return types.False
	}
	l, ok := conds.(traits.Lister)
	return types.Bool(ok && l.Size() != types.IntZero)
}

// program compiles expr in the rule (or message) environment, or returns the cached program.
func (e *ruleEvaluator) program(expr string, message bool) (cel.Program, error) {
	key := programKey{message: message, expr: expr}
	if c, ok := e.programs.Get(key); ok {
		return c.(compiledExpr).prg, c.(compiledExpr).err
	}
	env := e.ruleEnv
	if message {
		env = e.messageEnv
	}
	var c compiledExpr
	ast, iss := env.Compile(expr)
	if err := iss.Err(); err != nil {
		c.err = errors.New(issuesMessage(err))
	} else if c.prg, err = env.Program(ast,
		cel.CostLimit(e.perCallLimit),
		cel.CostTracking(&library.CostEstimator{}),
		cel.InterruptCheckFrequency(celconfig.CheckFrequency)); err != nil {
		c.err = &internalError{err}
	}
	e.programs.Add(key, c)
	return c.prg, c.err
}

// internalError is a failure of evaluation that is not the expression's fault.
type internalError struct{ err error }

func (e *internalError) Error() string { return e.err.Error() }

// issuesMessage is CEL's compile report without the source excerpts under each error.
func issuesMessage(err error) string {
	var lines []string
	for l := range strings.SplitSeq(err.Error(), "\n") {
		if !strings.HasPrefix(l, " |") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// eval runs expr against vars within the remaining budget, which it lowers by the cost spent.
func (e *ruleEvaluator) eval(ctx context.Context, expr string, message bool, vars map[string]any, budget *int64) (ref.Val, error) {
	if *budget <= 0 {
		return nil, fmt.Errorf("CEL evaluation budget of the manifest's rules (%d) exhausted", e.budget)
	}
	prg, err := e.program(expr, message)
	if err != nil {
		return nil, err
	}
	out, details, err := prg.ContextEval(ctx, vars)
	if details != nil && details.ActualCost() != nil {
		*budget -= int64(*details.ActualCost())
	}
	var cancelled interpreter.EvalCancelledError
	switch {
	case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
		return nil, fmt.Errorf("CEL expression exceeded its cost limit (%d)", e.perCallLimit)
	case err != nil && ctx.Err() != nil:
		// The agent is stopping: not the expression's fault.
		return nil, &internalError{err}
	case err != nil:
		return nil, err
	case *budget < 0:
		return nil, fmt.Errorf("CEL evaluation budget of the manifest's rules (%d) exceeded", e.budget)
	}
	return out, nil
}

// evaluate returns the conditions rules make of obj, in the rules' order. Evaluation errors
// never fail the manifest: they are the condition's message. A WellKnownConditions rule for a
// kind or condition with no built-in rule makes no condition (as in OCM).
func (e *ruleEvaluator) evaluate(ctx context.Context, obj *unstructured.Unstructured, rules []workv1.ConditionRule) []metav1.Condition {
	budget := e.budget
	var out []metav1.Condition
	for _, rule := range rules {
		if rule.Condition == "" {
			continue
		}
		var c metav1.Condition
		switch rule.Type {
		case workv1.WellKnownConditionsType:
			known, ok := wellKnownRules[obj.GroupVersionKind()][rule.Condition]
			if !ok {
				continue
			}
			if rule.Message != "" {
				known.Message = rule.Message
			}
			if rule.MessageExpression != "" {
				known.MessageExpression = rule.MessageExpression
			}
			c = e.evaluateCEL(ctx, obj, known, &budget)
		case workv1.CelConditionExpressionsType:
			c = e.evaluateCEL(ctx, obj, rule, &budget)
		default:
			c = metav1.Condition{Status: metav1.ConditionUnknown, Reason: workv1.ConditionRuleInvalid,
				Message: fmt.Sprintf("unrecognized condition rule type %q", rule.Type)}
		}
		c.Type = rule.Condition
		if len(c.Message) > maxRuleMessage {
			// Messages quote expressions and values; the API caps a condition's message.
			c.Message = strings.ToValidUTF8(c.Message[:maxRuleMessage], "") + "..."
		}
		if c.Reason != workv1.ConditionRuleEvaluated {
			log.FromContext(ctx).V(1).Info("condition rule not evaluated", "condition", rule.Condition, "reason", c.Reason, "message", c.Message)
		}
		out = append(out, c)
	}
	return out
}

// evaluateCEL evaluates one rule's expressions (all true: True; one false: False; an error or
// a result that is not a bool: False with ConditionRuleExpressionError), then its message.
func (e *ruleEvaluator) evaluateCEL(ctx context.Context, obj *unstructured.Unstructured, rule workv1.ConditionRule, budget *int64) metav1.Condition {
	vars := map[string]any{"object": obj.Object}
	result := true
	for _, expr := range rule.CelExpressions {
		out, err := e.eval(ctx, expr, false, vars, budget)
		if err != nil {
			var ie *internalError
			if errors.As(err, &ie) {
				return metav1.Condition{Status: metav1.ConditionUnknown, Reason: workv1.ConditionRuleInternalError, Message: err.Error()}
			}
			return metav1.Condition{Status: metav1.ConditionFalse, Reason: workv1.ConditionRuleExpressionError, Message: err.Error()}
		}
		b, ok := out.Value().(bool)
		if !ok {
			return metav1.Condition{Status: metav1.ConditionFalse, Reason: workv1.ConditionRuleExpressionError,
				Message: fmt.Sprintf("expected a bool result, got %s: %s", out.Type().TypeName(), expr)}
		}
		if !b {
			result = false
			break
		}
	}
	c := metav1.Condition{Status: metav1.ConditionFalse, Reason: workv1.ConditionRuleEvaluated}
	if result {
		c.Status = metav1.ConditionTrue
	}
	c.Message = e.message(ctx, obj, rule, result, budget)
	return c
}

// message is the condition's message: messageExpression's result when it is a non-empty
// string (its error when it fails), otherwise message, otherwise "Manifest is (not) <condition>".
func (e *ruleEvaluator) message(ctx context.Context, obj *unstructured.Unstructured, rule workv1.ConditionRule, result bool, budget *int64) string {
	if rule.MessageExpression != "" {
		out, err := e.eval(ctx, rule.MessageExpression, true, map[string]any{"object": obj.Object, "result": result}, budget)
		if err != nil {
			return "messageExpression: " + err.Error()
		}
		s, ok := out.Value().(string)
		if !ok {
			return fmt.Sprintf("messageExpression: expected a string result, got %s", out.Type().TypeName())
		}
		if s != "" {
			return s
		}
	}
	if rule.Message != "" {
		return rule.Message
	}
	if result {
		return "Manifest is " + rule.Condition
	}
	return "Manifest is not " + rule.Condition
}

// isRuleCondition tells conditions made by condition rules (and their aggregates) from the
// agent's own by their reason.
func isRuleCondition(c metav1.Condition) bool {
	return strings.HasPrefix(c.Reason, "ConditionRule")
}

// pruneRuleConditions drops rule-made conditions not evaluated for this generation: a rule
// removed from the work changes its generation, so those are its leftovers.
func pruneRuleConditions(conds *[]metav1.Condition, generation int64) {
	*conds = slices.DeleteFunc(*conds, func(c metav1.Condition) bool {
		return isRuleCondition(c) && c.ObservedGeneration != generation
	})
}

// setRuleConditions evaluates the manifest's condition rules against its live object, sets
// the conditions they make (for this generation) and prunes those of removed rules.
func setRuleConditions(ctx context.Context, conds *[]metav1.Condition, obj *unstructured.Unstructured, option *workv1.ManifestConfigOption, generation int64) {
	if option != nil && len(option.ConditionRules) > 0 {
		var made []metav1.Condition
		if e, err := conditionRules(); err != nil {
			for _, rule := range option.ConditionRules {
				made = append(made, metav1.Condition{Type: rule.Condition, Status: metav1.ConditionUnknown,
					Reason: workv1.ConditionRuleInternalError, Message: err.Error()})
			}
		} else {
			made = e.evaluate(ctx, obj, option.ConditionRules)
		}
		for _, c := range made {
			c.ObservedGeneration = generation
			meta.SetStatusCondition(conds, c)
		}
	}
	pruneRuleConditions(conds, generation)
}

// aggregateRuleConditions sets a work-level condition for each type of rule-made manifest
// condition, as OCM does: False when a manifest's is False, else Unknown when one is Unknown,
// else True (Progressing: True when any is True); so the work is Complete when every manifest
// with a Complete rule is. Applied and Available are the agent's own and left to it. Work-level
// aggregates of rules gone are pruned.
func aggregateRuleConditions(conds *[]metav1.Condition, manifests []workv1.ManifestCondition, generation int64) {
	type tally struct {
		trues, falses, unknowns int
		message                 string
	}
	tallies := map[string]*tally{}
	for _, m := range manifests {
		for _, c := range m.Conditions {
			if !isRuleCondition(c) || c.Type == workv1.WorkApplied || c.Type == workv1.WorkAvailable {
				continue
			}
			t := tallies[c.Type]
			if t == nil {
				t = &tally{}
				tallies[c.Type] = t
			}
			switch c.Status {
			case metav1.ConditionTrue:
				t.trues++
			case metav1.ConditionFalse:
				t.falses++
			default:
				t.unknowns++
			}
			t.message = c.Message
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(tallies)) {
		t := tallies[typ]
		status := metav1.ConditionTrue
		switch {
		case typ == workv1.WorkProgressing && t.trues > 0:
		case typ == workv1.WorkProgressing && t.unknowns > 0:
			status = metav1.ConditionUnknown
		case typ == workv1.WorkProgressing:
			status = metav1.ConditionFalse
		case t.falses > 0:
			status = metav1.ConditionFalse
		case t.unknowns > 0 || t.trues == 0:
			status = metav1.ConditionUnknown
		}
		msg := t.message
		if n := t.trues + t.falses + t.unknowns; n != 1 || msg == "" {
			msg = fmt.Sprintf("Aggregated from %d manifest conditions", n)
		}
		meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reasonRulesAggregated,
			Message: msg, ObservedGeneration: generation})
	}
	pruneRuleConditions(conds, generation)
}

// completeBefore reports whether the work's status has the manifest (matched by resource
// meta, not ordinal, as OCM) Complete: such a manifest is not applied any more.
func completeBefore(m workv1.ManifestResourceMeta, previous []workv1.ManifestCondition) bool {
	m.Ordinal = 0
	for _, p := range previous {
		pm := p.ResourceMeta
		pm.Ordinal = 0
		if pm == m {
			return meta.IsStatusConditionTrue(p.Conditions, workv1.ManifestComplete)
		}
	}
	return false
}
