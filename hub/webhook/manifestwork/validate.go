package manifestwork

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/jqpath"
)

// DefaultMaxSize is the default cap on the total size of a ManifestWork's manifests: 500 KiB,
// OCM's default (its webhook's --manifestLimit).
const DefaultMaxSize = 500 * 1024

// maxManifestErrors bounds how many manifests are reported individually, so a workload of
// thousands of broken manifests still gets a readable answer.
const maxManifestErrors = 20

// Enum values the validation accepts, as the CRD schema lists them.
var (
	propagationPolicies = []workv1.DeletePropagationPolicyType{
		workv1.DeletePropagationPolicyTypeForeground, workv1.DeletePropagationPolicyTypeOrphan,
		workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
	}
	updateStrategies = []workv1.UpdateStrategyType{
		workv1.UpdateStrategyTypeUpdate, workv1.UpdateStrategyTypeCreateOnly,
		workv1.UpdateStrategyTypeServerSideApply, workv1.UpdateStrategyTypeReadOnly,
	}
	feedbackTypes       = []workv1.FeedBackType{workv1.WellKnownStatusType, workv1.JSONPathsType}
	feedbackScrapeTypes = []workv1.FeedbackScrapeType{workv1.FeedbackPollType, workv1.FeedbackWatchType}
	conditionRuleTypes  = []workv1.ConditionRuleType{workv1.WellKnownConditionsType, workv1.CelConditionExpressionsType}
	ignoreConditions    = []workv1.IgnoreFieldsCondition{
		workv1.IgnoreFieldsConditionOnSpokePresent, workv1.IgnoreFieldsConditionOnSpokeChange,
	}
	executorTypes = []workv1.ManifestWorkExecutorSubjectType{workv1.ExecutorSubjectTypeServiceAccount}
)

// Validate checks a ManifestWork as the hub's admission webhook does; see ValidateSpec.
func Validate(work *workv1.ManifestWork, maxSize int) field.ErrorList {
	errs, _ := ValidateSpec(&work.Spec, field.NewPath("spec"), maxSize)
	return errs
}

// ValidateSpec checks a ManifestWorkSpec found at fldPath (spec of a ManifestWork; the
// template of a ManifestWorkReplicaSet or the agentSpec of an AddOnTemplate reuse it) and
// returns its errors plus warnings about settings that are valid but have no effect.
// maxSize caps the total size of the manifests in bytes (their JSON encoding); 0 or less
// means DefaultMaxSize.
//
// It follows OCM's ManifestWork webhook (at least one manifest; the size cap and its message;
// every manifest decodes as an object with a name and without generateName; an executor of
// type ServiceAccount names one) and adds what OCM's agent would only fail on later:
// apiVersion and kind must be non-empty strings, names must be usable in a URL path,
// namespaces must be DNS labels, enum values must be known, identifiers of orphaning rules
// and manifest configs must name a resource, feedback JSON paths must parse, and ignoreFields
// jqPathExpressions must be bounded path expressions (jqpath.Parse). Every error names the
// field, with the index of the manifest or rule.
func ValidateSpec(spec *workv1.ManifestWorkSpec, fldPath *field.Path, maxSize int) (field.ErrorList, []string) {
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	var errs field.ErrorList
	var warnings []string
	errs = append(errs, validateManifests(spec.Workload.Manifests, fldPath.Child("workload", "manifests"), maxSize)...)
	if spec.DeleteOption != nil {
		e, w := validateDeleteOption(spec.DeleteOption, fldPath.Child("deleteOption"))
		errs, warnings = append(errs, e...), append(warnings, w...)
	}
	e, w := validateManifestConfigs(spec.ManifestConfigs, fldPath.Child("manifestConfigs"))
	errs, warnings = append(errs, e...), append(warnings, w...)
	if spec.Executor != nil {
		errs = append(errs, validateExecutor(spec.Executor, fldPath.Child("executor"))...)
	}
	return errs, warnings
}

// ManifestsSize is the total size the cap applies to: the bytes of every manifest's JSON.
func ManifestsSize(manifests []workv1.Manifest) int {
	total := 0
	for _, m := range manifests {
		total += len(manifestJSON(m))
	}
	return total
}

// manifestJSON returns a manifest's JSON: Raw as received, or Object encoded when a Go
// caller set that instead.
func manifestJSON(m workv1.Manifest) []byte {
	if m.Raw != nil || m.Object == nil {
		return m.Raw
	}
	b, err := json.Marshal(m.Object)
	if err != nil {
		return nil
	}
	return b
}

func validateManifests(manifests []workv1.Manifest, fldPath *field.Path, maxSize int) field.ErrorList {
	if len(manifests) == 0 {
		return field.ErrorList{field.Required(fldPath, "manifests should not be empty")}
	}
	var errs field.ErrorList
	if size := ManifestsSize(manifests); size > maxSize {
		errs = append(errs, &field.Error{
			Type: field.ErrorTypeTooLong, Field: fldPath.String(), BadValue: "<value omitted>",
			Detail: fmt.Sprintf("the size of manifests is %d bytes which exceeds the %d limit", size, maxSize),
		})
	}
	broken := 0
	for i, m := range manifests {
		e := validateManifest(manifestJSON(m), fldPath.Index(i))
		if len(e) == 0 {
			continue
		}
		if broken++; broken > maxManifestErrors {
			errs = append(errs, field.Forbidden(fldPath, fmt.Sprintf("more manifests are invalid; only the first %d are reported", maxManifestErrors)))
			break
		}
		errs = append(errs, e...)
	}
	return errs
}

// validateManifest checks one manifest: a JSON object with apiVersion, kind and
// metadata.name, no metadata.generateName, and a DNS-label namespace if any.
func validateManifest(raw []byte, fldPath *field.Path) field.ErrorList {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		detail := "must be a JSON object"
		if err != nil {
			detail += ": " + err.Error()
		}
		return field.ErrorList{field.Invalid(fldPath, "<value omitted>", detail)}
	}
	var errs field.ErrorList
	if apiVersion, e := stringField(obj, "apiVersion", fldPath); e != nil {
		errs = append(errs, e)
	} else if _, err := schema.ParseGroupVersion(apiVersion); err != nil {
		errs = append(errs, field.Invalid(fldPath.Child("apiVersion"), apiVersion, "must be group/version or version"))
	}
	if _, e := stringField(obj, "kind", fldPath); e != nil {
		errs = append(errs, e)
	}
	metaPath := fldPath.Child("metadata")
	meta, ok := obj["metadata"].(map[string]any)
	if _, present := obj["metadata"]; present && !ok {
		return append(errs, field.Invalid(metaPath, "<value omitted>", "must be an object"))
	}
	if name, e := stringField(meta, "name", metaPath); e != nil {
		errs = append(errs, e)
	} else {
		for _, msg := range path.IsValidPathSegmentName(name) {
			errs = append(errs, field.Invalid(metaPath.Child("name"), name, msg))
		}
	}
	if g, present := meta["generateName"]; present && g != "" && g != nil {
		errs = append(errs, field.Forbidden(metaPath.Child("generateName"), "generateName must not be set in manifest"))
	}
	if ns, present := meta["namespace"]; present && ns != nil {
		s, isString := ns.(string)
		switch {
		case !isString:
			errs = append(errs, field.Invalid(metaPath.Child("namespace"), ns, "must be a string"))
		case s != "":
			for _, msg := range validation.IsDNS1123Label(s) {
				errs = append(errs, field.Invalid(metaPath.Child("namespace"), s, msg))
			}
		}
	}
	return errs
}

// stringField returns obj[key] when it is a non-empty string, else the error for
// fldPath.key. A nil obj (absent metadata) has no fields.
func stringField(obj map[string]any, key string, fldPath *field.Path) (string, *field.Error) {
	v, present := obj[key]
	if !present || v == nil {
		return "", field.Required(fldPath.Child(key), "")
	}
	s, ok := v.(string)
	if !ok {
		return "", field.Invalid(fldPath.Child(key), v, "must be a string")
	}
	if s == "" {
		return "", field.Required(fldPath.Child(key), "")
	}
	return s, nil
}

func validateDeleteOption(opt *workv1.DeleteOption, fldPath *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	if !slices.Contains(propagationPolicies, opt.PropagationPolicy) {
		errs = append(errs, field.NotSupported(fldPath.Child("propagationPolicy"), opt.PropagationPolicy, propagationPolicies))
	}
	if opt.TTLSecondsAfterFinished != nil && *opt.TTLSecondsAfterFinished < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("ttlSecondsAfterFinished"), *opt.TTLSecondsAfterFinished, "must be greater than or equal to 0"))
	}
	if opt.SelectivelyOrphan != nil {
		rulesPath := fldPath.Child("selectivelyOrphans", "orphaningRules")
		for i, r := range opt.SelectivelyOrphan.OrphaningRules {
			errs = append(errs, validateResourceIdentifier(workv1.ResourceIdentifier(r), rulesPath.Index(i))...)
		}
		if len(opt.SelectivelyOrphan.OrphaningRules) > 0 && opt.PropagationPolicy != workv1.DeletePropagationPolicyTypeSelectivelyOrphan {
			warnings = append(warnings, fmt.Sprintf("%s: ignored unless %s is %s", fldPath.Child("selectivelyOrphans"),
				fldPath.Child("propagationPolicy"), workv1.DeletePropagationPolicyTypeSelectivelyOrphan))
		}
	}
	return errs, warnings
}

// validateResourceIdentifier requires a resource and a name; a namespace, if set, must be a
// DNS label.
func validateResourceIdentifier(id workv1.ResourceIdentifier, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if id.Resource == "" {
		errs = append(errs, field.Required(fldPath.Child("resource"), ""))
	}
	if id.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	if id.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(id.Namespace) {
			errs = append(errs, field.Invalid(fldPath.Child("namespace"), id.Namespace, msg))
		}
	}
	return errs
}

func validateManifestConfigs(configs []workv1.ManifestConfigOption, fldPath *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	seen := map[workv1.ResourceIdentifier]int{}
	for i, c := range configs {
		p := fldPath.Index(i)
		errs = append(errs, validateResourceIdentifier(c.ResourceIdentifier, p.Child("resourceIdentifier"))...)
		if first, dup := seen[c.ResourceIdentifier]; dup {
			warnings = append(warnings, fmt.Sprintf("%s: selects the same resource as %s, which takes precedence",
				p.Child("resourceIdentifier"), fldPath.Index(first).Child("resourceIdentifier")))
		} else {
			seen[c.ResourceIdentifier] = i
		}
		for j, r := range c.FeedbackRules {
			e, w := validateFeedbackRule(r, p.Child("feedbackRules").Index(j))
			errs, warnings = append(errs, e...), append(warnings, w...)
		}
		if c.UpdateStrategy != nil {
			errs = append(errs, validateUpdateStrategy(c.UpdateStrategy, p.Child("updateStrategy"))...)
		}
		for j, r := range c.ConditionRules {
			if !slices.Contains(conditionRuleTypes, r.Type) {
				errs = append(errs, field.NotSupported(p.Child("conditionRules").Index(j).Child("type"), r.Type, conditionRuleTypes))
			}
		}
		if c.FeedbackScrapeType != "" && !slices.Contains(feedbackScrapeTypes, c.FeedbackScrapeType) {
			errs = append(errs, field.NotSupported(p.Child("feedbackScrapeType"), c.FeedbackScrapeType, feedbackScrapeTypes))
		}
	}
	return errs, warnings
}

func validateFeedbackRule(r workv1.FeedbackRule, fldPath *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	if !slices.Contains(feedbackTypes, r.Type) {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), r.Type, feedbackTypes))
	}
	if r.Type == workv1.JSONPathsType && len(r.JsonPaths) == 0 {
		warnings = append(warnings, fmt.Sprintf("%s: type %s without jsonPaths reports nothing", fldPath, workv1.JSONPathsType))
	}
	for k, jp := range r.JsonPaths {
		p := fldPath.Child("jsonPaths").Index(k)
		if jp.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if jp.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
			continue
		}
		// The agent evaluates the path as kubectl does, wrapped in braces.
		if err := jsonpath.New(jp.Name).Parse("{" + jp.Path + "}"); err != nil {
			errs = append(errs, field.Invalid(p.Child("path"), jp.Path, "must be a JSONPath: "+err.Error()))
		}
	}
	return errs, warnings
}

func validateUpdateStrategy(s *workv1.UpdateStrategy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains(updateStrategies, s.Type) {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), s.Type, updateStrategies))
	}
	if ssa := s.ServerSideApply; ssa != nil {
		p := fldPath.Child("serverSideApply")
		if ssa.FieldManager != "" && !strings.HasPrefix(ssa.FieldManager, workv1.DefaultFieldManager) {
			errs = append(errs, field.Invalid(p.Child("fieldManager"), ssa.FieldManager, "must start with "+workv1.DefaultFieldManager))
		}
		for i, f := range ssa.IgnoreFields {
			fp := p.Child("ignoreFields").Index(i)
			if !slices.Contains(ignoreConditions, f.Condition) {
				errs = append(errs, field.NotSupported(fp.Child("condition"), f.Condition, ignoreConditions))
			}
			errs = append(errs, validateJQPathExpressions(f.JQPathExpressions, fp.Child("jqPathExpressions"))...)
		}
	}
	return errs
}

// validateJQPathExpressions refuses, as the agent would, jq expressions that do not parse,
// do not select fields, or could run without end (jqpath.Parse): the agent runs them on
// every managed cluster the work reaches.
func validateJQPathExpressions(exprs []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k, expr := range exprs {
		p := fldPath.Index(k)
		if len(expr) > jqpath.MaxLength {
			errs = append(errs, field.TooLong(p, expr, jqpath.MaxLength))
			continue
		}
		if _, err := jqpath.Parse(expr); err != nil {
			errs = append(errs, field.Invalid(p, expr, err.Error()))
		}
	}
	return errs
}

// validateExecutor requires a known subject type and, for ServiceAccount, the account's
// namespace and name (OCM: "executor service account can not be nil").
func validateExecutor(e *workv1.ManifestWorkExecutor, fldPath *field.Path) field.ErrorList {
	subject := fldPath.Child("subject")
	if !slices.Contains(executorTypes, e.Subject.Type) {
		return field.ErrorList{field.NotSupported(subject.Child("type"), e.Subject.Type, executorTypes)}
	}
	sa := e.Subject.ServiceAccount
	saPath := subject.Child("serviceAccount")
	if sa == nil {
		return field.ErrorList{field.Required(saPath, "executor service account can not be nil")}
	}
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{{"namespace", sa.Namespace}, {"name", sa.Name}} {
		if f.value == "" {
			errs = append(errs, field.Required(saPath.Child(f.name), ""))
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(f.value) {
			errs = append(errs, field.Invalid(saPath.Child(f.name), f.value, msg))
		}
	}
	return errs
}
