package rollout

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
)

// config is a RolloutStrategy after validation: only the member selected by
// Type has been read, and every field is parsed.
type config struct {
	typ  clusterv1alpha1.RolloutType
	path string // field path of the selected member, e.g. "rolloutStrategy.progressive"

	minSuccessTime time.Duration
	deadline       time.Duration // valid when hasDeadline
	hasDeadline    bool          // false for "None" or empty

	maxFailures    threshold
	maxConcurrency threshold // Progressive only

	mandatory []clusterv1alpha1.MandatoryDecisionGroup
}

// threshold is a parsed IntOrString count or percentage.
type threshold struct {
	percent bool
	value   int    // the count, or the percentage (0..100)
	raw     string // as written, for messages
}

// zero reports whether the threshold is 0 or 0% (or was left empty).
func (t threshold) zero() bool { return t.value == 0 }

// of resolves the threshold against total: a count as is, a percentage of total
// rounded up, as OCM resolves both maxConcurrency and maxFailures (intstr's
// scaled value with roundUp): users moving from OCM get the same thresholds.
func (t threshold) of(total int) int {
	if t.percent {
		return (t.value*total + 99) / 100
	}
	return t.value
}

// describe renders the resolved threshold for messages: "2", or "2 (20% of 10)".
func (t threshold) describe(resolved, total int) string {
	if t.percent {
		return fmt.Sprintf("%d (%s of %d)", resolved, t.raw, total)
	}
	return strconv.Itoa(resolved)
}

func parseStrategy(s clusterv1alpha1.RolloutStrategy) (*config, error) {
	typ := s.Type
	if typ == "" {
		typ = clusterv1alpha1.All // the API default
	}
	// rolloutType, the documentation's name for type: type's default All hides whether
	// type was written, so an explicit rolloutType wins over All.
	if s.RolloutType != "" && typ == clusterv1alpha1.All {
		typ = s.RolloutType
	}
	cfg := &config{typ: typ}
	var rc clusterv1alpha1.RolloutConfig
	switch typ {
	case clusterv1alpha1.All:
		cfg.path = "rolloutStrategy.all"
		if s.All != nil {
			rc = s.All.RolloutConfig
		}
	case clusterv1alpha1.Progressive:
		cfg.path = "rolloutStrategy.progressive"
		if p := s.Progressive; p != nil {
			rc = p.RolloutConfig
			cfg.mandatory = p.MandatoryDecisionGroups.MandatoryDecisionGroups
			mc, err := parseThreshold(cfg.path+".maxConcurrency", p.MaxConcurrency)
			if err != nil {
				return nil, err
			}
			cfg.maxConcurrency = mc
		}
	case clusterv1alpha1.ProgressivePerGroup:
		cfg.path = "rolloutStrategy.progressivePerGroup"
		if p := s.ProgressivePerGroup; p != nil {
			rc = p.RolloutConfig
			cfg.mandatory = p.MandatoryDecisionGroups.MandatoryDecisionGroups
		}
	default:
		return nil, fmt.Errorf("rolloutStrategy.type: unknown rollout type %q (want All, Progressive or ProgressivePerGroup)", s.Type)
	}

	if rc.MinSuccessTime.Duration < 0 {
		return nil, fmt.Errorf("%s.minSuccessTime: %s must not be negative", cfg.path, rc.MinSuccessTime.Duration)
	}
	cfg.minSuccessTime = rc.MinSuccessTime.Duration

	// ProgressDeadline wins; the deprecated Timeout is read only when it is empty.
	field, value := cfg.path+".progressDeadline", rc.ProgressDeadline
	if value == "" && rc.Timeout != "" {
		field, value = cfg.path+".timeout", rc.Timeout
	}
	d, finite, err := parseDeadline(field, value)
	if err != nil {
		return nil, err
	}
	cfg.deadline, cfg.hasDeadline = d, finite

	mf, err := parseThreshold(cfg.path+".maxFailures", rc.MaxFailures)
	if err != nil {
		return nil, err
	}
	cfg.maxFailures = mf

	for i, m := range cfg.mandatory {
		if m.GroupName == "" && m.GroupIndex < 0 {
			return nil, fmt.Errorf("%s.mandatoryDecisionGroups[%d].groupIndex: %d must not be negative", cfg.path, i, m.GroupIndex)
		}
	}
	return cfg, nil
}

// parseThreshold accepts what the CRD pattern ^((100|[0-9]{1,2})%|[0-9]+)$
// accepts, as an int or a string: a non-negative count, or an integer
// percentage from 0 to 100. An empty string is 0.
func parseThreshold(field string, v intstr.IntOrString) (threshold, error) {
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 0 {
			return threshold{}, fmt.Errorf("%s: %d must not be negative", field, v.IntVal)
		}
		return threshold{value: int(v.IntVal), raw: strconv.Itoa(int(v.IntVal))}, nil
	case intstr.String:
		s := v.StrVal
		if s == "" {
			return threshold{raw: "0"}, nil
		}
		if num, ok := strings.CutSuffix(s, "%"); ok {
			n, err := strconv.Atoi(num)
			if !allDigits(num) || err != nil || n > 100 {
				return threshold{}, fmt.Errorf("%s: %q is not a percentage between 0 and 100", field, s)
			}
			return threshold{percent: true, value: n, raw: s}, nil
		}
		n, err := strconv.Atoi(s)
		if !allDigits(s) || err != nil {
			return threshold{}, fmt.Errorf("%s: %q is neither a count nor a percentage such as \"25%%\"", field, s)
		}
		return threshold{value: n, raw: s}, nil
	default:
		return threshold{}, fmt.Errorf("%s: unknown IntOrString type %d", field, v.Type)
	}
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// parseDeadline reads a progressDeadline: "None" or empty is no deadline (finite
// false); anything else must be a non-negative Go duration such as 90s, 10m, 2h
// or 1h30m. "0s" is a deadline that has always expired, as in OCM.
func parseDeadline(field, s string) (d time.Duration, finite bool, err error) {
	if s == "" || s == "None" {
		return 0, false, nil
	}
	d, err = time.ParseDuration(s)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %q is neither a duration (such as 90s, 10m or 2h) nor \"None\"", field, s)
	}
	if d < 0 {
		return 0, false, fmt.Errorf("%s: %q must not be negative", field, s)
	}
	return d, true, nil
}
