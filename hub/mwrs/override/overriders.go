package override

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
)

// patchOptions are RFC 6902 as written: replace and remove of a missing path fail, no
// negative indices, and copies are bounded.
func patchOptions() *jsonpatch.ApplyOptions {
	o := jsonpatch.NewApplyOptions()
	o.SupportNegativeIndices = false
	o.AccumulatedCopySizeLimit = 1 << 20
	o.EnsurePathExistsOnAdd = false
	o.AllowMissingPathOnRemove = false
	return o
}

// notApplicableError is an overrider meeting a kind it has nothing to change in (image on a
// ConfigMap). A rule without manifest selectors skips such manifests; a rule that selected
// the manifest fails, since it said the manifest has what it changes.
type notApplicableError struct{ msg string }

func (e *notApplicableError) Error() string { return e.msg }

func notApplicable(format string, args ...any) error {
	return &notApplicableError{msg: fmt.Sprintf(format, args...)}
}

// ---- jsonPatch

type patchOp struct {
	op, path, from string
	value          json.RawMessage
	tmpl           *tmpl
	valueType      string
}

type jsonPatchOverrider []patchOp

func compileJSONPatch(ops []flotillav1alpha1.JSONPatchOperation, fld *field.Path) (overrider, field.ErrorList) {
	var errs field.ErrorList
	out := make(jsonPatchOverrider, 0, len(ops))
	for j, o := range ops {
		of := fld.Index(j)
		po := patchOp{op: o.Op, path: o.Path, from: o.From, valueType: o.ValueType}
		takesValue := o.Op == "add" || o.Op == "replace" || o.Op == "test"
		hasValue := o.Value != nil && len(o.Value.Raw) > 0
		switch {
		case takesValue && hasValue == (o.ValueTemplate != ""):
			errs = append(errs, field.Invalid(of, o.Op, "add, replace and test take value or valueTemplate"))
		case !takesValue && (hasValue || o.ValueTemplate != ""):
			errs = append(errs, field.Invalid(of, o.Op, "remove, move and copy take neither value nor valueTemplate"))
		}
		if (o.Op == "move" || o.Op == "copy") != (o.From != "") {
			errs = append(errs, field.Invalid(of.Child("from"), o.From, "from is for move and copy"))
		}
		for _, p := range []struct{ name, v string }{{"path", o.Path}, {"from", o.From}} {
			if err := checkPointer(p.v); err != nil {
				errs = append(errs, field.Invalid(of.Child(p.name), p.v, err.Error()))
			}
		}
		if hasValue {
			if !json.Valid(o.Value.Raw) {
				errs = append(errs, field.Invalid(of.Child("value"), string(o.Value.Raw), "not JSON"))
			}
			po.value = o.Value.Raw
		}
		if o.ValueTemplate != "" {
			t, e := compileTemplate(o.ValueTemplate, of.Child("valueTemplate"))
			errs = append(errs, e...)
			po.tmpl = t
		}
		switch o.ValueType {
		case "", flotillav1alpha1.ValueTypeString, flotillav1alpha1.ValueTypeInteger, flotillav1alpha1.ValueTypeNumber,
			flotillav1alpha1.ValueTypeBoolean, flotillav1alpha1.ValueTypeJSON:
		default:
			errs = append(errs, field.NotSupported(of.Child("valueType"), o.ValueType, []string{"String", "Integer", "Number", "Boolean", "JSON"}))
		}
		out = append(out, po)
	}
	return out, errs
}

// checkPointer checks a JSON pointer's syntax ("" is the whole document).
func checkPointer(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return errors.New("a JSON pointer starts with /")
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return errors.New("invalid JSON pointer escape (~0 or ~1)")
		}
	}
	return nil
}

// typed converts a rendered valueTemplate to its JSON value.
func typed(s, typ string) (json.RawMessage, error) {
	switch typ {
	case flotillav1alpha1.ValueTypeInteger:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("valueTemplate gave %q, not an Integer", s)
		}
		return json.RawMessage(strconv.FormatInt(n, 10)), nil
	case flotillav1alpha1.ValueTypeNumber:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("valueTemplate gave %q, not a Number", s)
		}
		return json.Marshal(f)
	case flotillav1alpha1.ValueTypeBoolean:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("valueTemplate gave %q, not a Boolean", s)
		}
		return json.Marshal(b)
	case flotillav1alpha1.ValueTypeJSON:
		if !json.Valid([]byte(s)) {
			return nil, fmt.Errorf("valueTemplate gave %q, not JSON", truncate(s, 64))
		}
		return json.RawMessage(s), nil
	default:
		return json.Marshal(s)
	}
}

func (p jsonPatchOverrider) apply(rc *ruleContext, obj map[string]any) (map[string]any, error) {
	doc, err := canonical(obj)
	if err != nil {
		return nil, err
	}
	// One operation at a time, so a failure names the operation.
	for j, o := range p {
		op := map[string]any{"op": o.op, "path": o.path}
		if o.from != "" {
			op["from"] = o.from
		}
		switch {
		case o.tmpl != nil:
			s, err := o.tmpl.execute(rc.values)
			if err != nil {
				return nil, fmt.Errorf("jsonPatch[%d].valueTemplate: %w", j, err)
			}
			v, err := typed(s, o.valueType)
			if err != nil {
				return nil, fmt.Errorf("jsonPatch[%d]: %w", j, err)
			}
			op["value"] = v
		case o.value != nil:
			op["value"] = o.value
		}
		raw, err := json.Marshal([]any{op})
		if err != nil {
			return nil, err
		}
		patch, err := jsonpatch.DecodePatch(raw)
		if err != nil {
			return nil, fmt.Errorf("jsonPatch[%d]: %w", j, err)
		}
		doc, err = patch.ApplyWithOptions(doc, patchOptions())
		if err != nil {
			return nil, fmt.Errorf("jsonPatch[%d] %s %s: %w", j, o.op, o.path, err)
		}
		if len(doc) > MaxManifestBytes {
			return nil, fmt.Errorf("jsonPatch[%d]: the manifest grew over %d bytes", j, MaxManifestBytes)
		}
	}
	return decode(doc)
}

// ---- mergePatch

// mergePatchOverrider holds the patch with its string leaves parsed as templates.
type mergePatchOverrider struct{ tree any }

func compileMergePatch(raw []byte, fld *field.Path) (overrider, field.ErrorList) {
	obj, err := decode(raw)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(fld, string(raw), "a merge patch is a JSON object")}
	}
	var errs field.ErrorList
	var walk func(v any, f *field.Path) any
	walk = func(v any, f *field.Path) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for _, k := range slices.Sorted(maps.Keys(x)) {
				c := x[k]
				out[k] = walk(c, f.Key(k))
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, c := range x {
				out[i] = walk(c, f.Index(i))
			}
			return out
		case string:
			t, e := compileTemplate(x, f)
			errs = append(errs, e...)
			return t
		default:
			return v
		}
	}
	return mergePatchOverrider{tree: walk(obj, fld)}, errs
}

// renderTree renders the templates of a compiled tree.
func renderTree(v any, values map[string]any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			c := x[k]
			r, err := renderTree(c, values)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			r, err := renderTree(c, values)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = r
		}
		return out, nil
	case *tmpl:
		return x.execute(values)
	default:
		return v, nil
	}
}

func (m mergePatchOverrider) apply(rc *ruleContext, obj map[string]any) (map[string]any, error) {
	patch, err := renderTree(m.tree, rc.values)
	if err != nil {
		return nil, fmt.Errorf("mergePatch.%w", err)
	}
	p, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	doc, err := canonical(obj)
	if err != nil {
		return nil, err
	}
	out, err := jsonpatch.MergePatch(doc, p)
	if err != nil {
		return nil, fmt.Errorf("mergePatch: %w", err)
	}
	return decode(out)
}

// ---- image

type imageOverrider struct {
	containers                         []string
	path                               string
	registry, repository, tag, digest  *tmpl
	setRegistry, setRepo, setTag, setD bool
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func compileImage(o *flotillav1alpha1.ImageOverride, fld *field.Path) (overrider, field.ErrorList) {
	var errs field.ErrorList
	io := imageOverrider{containers: o.Containers, path: o.Path,
		setRegistry: o.Registry != "", setRepo: o.Repository != "", setTag: o.Tag != "", setD: o.Digest != ""}
	for _, f := range []struct {
		name, src string
		dst       **tmpl
	}{{"registry", o.Registry, &io.registry}, {"repository", o.Repository, &io.repository}, {"tag", o.Tag, &io.tag}, {"digest", o.Digest, &io.digest}} {
		t, e := compileTemplate(f.src, fld.Child(f.name))
		errs = append(errs, e...)
		*f.dst = t
	}
	if io.setD && !strings.Contains(o.Digest, "{{") && !digestPattern.MatchString(o.Digest) {
		errs = append(errs, field.Invalid(fld.Child("digest"), o.Digest, "not sha256:<64 hex>"))
	}
	if !io.setRegistry && !io.setRepo && !io.setTag && !io.setD {
		errs = append(errs, field.Required(fld, "set at least one of registry, repository, tag, digest"))
	}
	if o.Path != "" && len(o.Containers) > 0 {
		errs = append(errs, field.Invalid(fld.Child("path"), o.Path, "path and containers are exclusive"))
	}
	if err := checkPointer(o.Path); err != nil {
		errs = append(errs, field.Invalid(fld.Child("path"), o.Path, err.Error()))
	}
	return io, errs
}

func (o imageOverrider) rewrite(rc *ruleContext, image string) (string, error) {
	ref := parseImage(image)
	var err error
	exec := func(set bool, t *tmpl, name string, dst *string) {
		if err != nil || !set {
			return
		}
		var s string
		if s, err = t.execute(rc.values); err != nil {
			err = fmt.Errorf("image.%s: %w", name, err)
			return
		}
		*dst = s
	}
	exec(o.setRegistry, o.registry, "registry", &ref.Registry)
	exec(o.setRepo, o.repository, "repository", &ref.Repository)
	exec(o.setTag, o.tag, "tag", &ref.Tag)
	if o.setTag && !o.setD {
		ref.Digest = "" // a new tag names another image than the old digest
	}
	exec(o.setD, o.digest, "digest", &ref.Digest)
	if err != nil {
		return "", err
	}
	if o.setD && !digestPattern.MatchString(ref.Digest) {
		return "", fmt.Errorf("image.digest: %q is not sha256:<64 hex>", ref.Digest)
	}
	if ref.Repository == "" {
		return "", fmt.Errorf("image: %q has no repository", ref.String())
	}
	return ref.String(), nil
}

func (o imageOverrider) apply(rc *ruleContext, obj map[string]any) (map[string]any, error) {
	if o.path != "" {
		v, err := pointerGet(obj, o.path)
		if err != nil {
			return nil, fmt.Errorf("image.path: %w", err)
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("image.path %s is not a string", o.path)
		}
		img, err := o.rewrite(rc, s)
		if err != nil {
			return nil, err
		}
		return obj, pointerSet(obj, o.path, img)
	}
	all, err := containers(obj, true)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	if all == nil {
		return nil, notApplicable("image: kind %s has no pod template; set path", identityOf(obj).Kind)
	}
	cs, err := selectContainers(all, o.containers)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	for _, c := range cs {
		s, _ := c["image"].(string)
		img, err := o.rewrite(rc, s)
		if err != nil {
			return nil, fmt.Errorf("container %v: %w", c["name"], err)
		}
		c["image"] = img
	}
	return obj, nil
}

// pointerTokens splits a JSON pointer into its unescaped tokens.
func pointerTokens(p string) []string {
	parts := strings.Split(p, "/")[1:]
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

func pointerGet(obj map[string]any, p string) (any, error) {
	var cur any = obj
	for _, tok := range pointerTokens(p) {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil, fmt.Errorf("%s: %q not found", p, tok)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("%s: index %q out of range", p, tok)
			}
			cur = x[i]
		default:
			return nil, fmt.Errorf("%s: %q is inside a scalar", p, tok)
		}
	}
	return cur, nil
}

// pointerSet replaces the existing value at p (pointerGet found it).
func pointerSet(obj map[string]any, p string, v any) error {
	toks := pointerTokens(p)
	parentPtr := "/" + strings.Join(escapeAll(toks[:len(toks)-1]), "/")
	if len(toks) == 1 {
		parentPtr = ""
	}
	parent, err := pointerGet(obj, parentPtr)
	if err != nil {
		return err
	}
	last := toks[len(toks)-1]
	switch x := parent.(type) {
	case map[string]any:
		x[last] = v
	case []any:
		i, _ := strconv.Atoi(last)
		x[i] = v
	}
	return nil
}

func escapeAll(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
	}
	return out
}

// ---- command, args

type listOverrider struct {
	key        string
	containers []string
	operation  string
	values     []*tmpl
}

func compileList(key string, o *flotillav1alpha1.ContainerListOverride, fld *field.Path) (overrider, field.ErrorList) {
	var errs field.ErrorList
	lo := listOverrider{key: key, containers: o.Containers, operation: o.Operation}
	switch o.Operation {
	case "":
		lo.operation = flotillav1alpha1.ListReplace
	case flotillav1alpha1.ListReplace, flotillav1alpha1.ListAppend, flotillav1alpha1.ListPrepend:
	default:
		errs = append(errs, field.NotSupported(fld.Child("operation"), o.Operation, []string{"Replace", "Append", "Prepend"}))
	}
	for i, v := range o.Values {
		t, e := compileTemplate(v, fld.Child("values").Index(i))
		errs = append(errs, e...)
		lo.values = append(lo.values, t)
	}
	return lo, errs
}

func (o listOverrider) apply(rc *ruleContext, obj map[string]any) (map[string]any, error) {
	vals := make([]any, 0, len(o.values))
	for i, t := range o.values {
		s, err := t.execute(rc.values)
		if err != nil {
			return nil, fmt.Errorf("%s.values[%d]: %w", o.key, i, err)
		}
		vals = append(vals, s)
	}
	all, err := containers(obj, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.key, err)
	}
	if all == nil {
		return nil, notApplicable("%s: kind %s has no pod template", o.key, identityOf(obj).Kind)
	}
	cs, err := selectContainers(all, o.containers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.key, err)
	}
	for _, c := range cs {
		var cur []any
		if v, ok := c[o.key]; ok && v != nil {
			if cur, ok = v.([]any); !ok {
				return nil, fmt.Errorf("%s of container %v is not a list", o.key, c["name"])
			}
		}
		switch o.operation {
		case flotillav1alpha1.ListAppend:
			c[o.key] = append(append([]any{}, cur...), vals...)
		case flotillav1alpha1.ListPrepend:
			c[o.key] = append(append([]any{}, vals...), cur...)
		default:
			c[o.key] = append([]any{}, vals...)
		}
	}
	return obj, nil
}

// ---- labels, annotations

type metadataOverrider struct {
	key    string
	set    map[string]*tmpl
	remove []string
}

func compileMetadata(key string, o *flotillav1alpha1.MetadataOverride, fld *field.Path) (overrider, field.ErrorList) {
	var errs field.ErrorList
	mo := metadataOverrider{key: key, set: map[string]*tmpl{}, remove: o.Remove}
	for _, k := range slices.Sorted(maps.Keys(o.Set)) {
		v := o.Set[k]
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(fld.Child("set").Key(k), k, "not a "+strings.TrimSuffix(key, "s")+" key: "+msg))
		}
		t, e := compileTemplate(v, fld.Child("set").Key(k))
		errs = append(errs, e...)
		mo.set[k] = t
	}
	for i, k := range o.Remove {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(fld.Child("remove").Index(i), k, "not a "+strings.TrimSuffix(key, "s")+" key: "+msg))
		}
	}
	if len(o.Set) == 0 && len(o.Remove) == 0 {
		errs = append(errs, field.Required(fld, "set or remove a key"))
	}
	return mo, errs
}

func (o metadataOverrider) apply(rc *ruleContext, obj map[string]any) (map[string]any, error) {
	rendered := make(map[string]any, len(o.set))
	for _, k := range slices.Sorted(maps.Keys(o.set)) {
		t := o.set[k]
		s, err := t.execute(rc.values)
		if err != nil {
			return nil, fmt.Errorf("%s.set[%s]: %w", o.key, k, err)
		}
		if o.key == "labels" {
			if msgs := validation.IsValidLabelValue(s); len(msgs) > 0 {
				return nil, fmt.Errorf("labels.set[%s]: %q is not a label value: %s", k, truncate(s, 64), msgs[0])
			}
		}
		rendered[k] = s
	}
	targets := []map[string]any{obj}
	tpl, err := podTemplate(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.key, err)
	}
	if tpl != nil && identityOf(obj).Kind != "Pod" {
		targets = append(targets, tpl)
	}
	for _, t := range targets {
		meta, err := childObject(t, "metadata")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.key, err)
		}
		m, err := childObject(meta, o.key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.key, err)
		}
		for k, v := range rendered {
			m[k] = v
		}
		for _, k := range o.remove {
			delete(m, k)
		}
		if len(m) == 0 {
			delete(meta, o.key)
		}
	}
	return obj, nil
}

// childObject returns m[key] as an object, creating it when absent.
func childObject(m map[string]any, key string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		c := map[string]any{}
		m[key] = c
		return c, nil
	}
	c, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", key)
	}
	return c, nil
}

// ---- replicas

type replicasOverrider struct {
	value *int32
	tmpl  *tmpl
}

func compileReplicas(o *flotillav1alpha1.ReplicasOverride, fld *field.Path) (overrider, field.ErrorList) {
	if (o.Value == nil) == (o.Template == "") {
		return nil, field.ErrorList{field.Invalid(fld, "", "set value or template")}
	}
	if o.Value != nil {
		if *o.Value < 0 {
			return nil, field.ErrorList{field.Invalid(fld.Child("value"), *o.Value, "must be >= 0")}
		}
		return replicasOverrider{value: o.Value}, nil
	}
	t, errs := compileTemplate(o.Template, fld.Child("template"))
	return replicasOverrider{tmpl: t}, errs
}

var scalable = map[string]bool{"Deployment": true, "StatefulSet": true, "ReplicaSet": true}

func (o replicasOverrider) apply(rc *ruleContext, obj map[string]any) (map[string]any, error) {
	n := int64(0)
	if o.value != nil {
		n = int64(*o.value)
	} else {
		s, err := o.tmpl.execute(rc.values)
		if err != nil {
			return nil, fmt.Errorf("replicas.template: %w", err)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("replicas.template gave %q, not an int32 >= 0", truncate(s, 64))
		}
		n = v
	}
	spec, _ := obj["spec"].(map[string]any)
	if _, ok := spec["replicas"]; !ok && !scalable[identityOf(obj).Kind] {
		return nil, notApplicable("replicas: kind %s has no spec.replicas", identityOf(obj).Kind)
	}
	spec, err := childObject(obj, "spec")
	if err != nil {
		return nil, fmt.Errorf("replicas: %w", err)
	}
	spec["replicas"] = json.Number(strconv.FormatInt(n, 10))
	return obj, nil
}

// ---- env

type envOverrider struct {
	containers []string
	names      []string
	values     []*tmpl
	remove     []string
}

func compileEnv(o *flotillav1alpha1.EnvOverride, fld *field.Path) (overrider, field.ErrorList) {
	var errs field.ErrorList
	eo := envOverrider{containers: o.Containers, remove: o.Remove}
	seen := map[string]bool{}
	for i, e := range o.Set {
		if e.Name == "" {
			errs = append(errs, field.Required(fld.Child("set").Index(i).Child("name"), ""))
		}
		if seen[e.Name] {
			errs = append(errs, field.Duplicate(fld.Child("set").Index(i).Child("name"), e.Name))
		}
		seen[e.Name] = true
		t, te := compileTemplate(e.Value, fld.Child("set").Index(i).Child("value"))
		errs = append(errs, te...)
		eo.names = append(eo.names, e.Name)
		eo.values = append(eo.values, t)
	}
	if len(o.Set) == 0 && len(o.Remove) == 0 {
		errs = append(errs, field.Required(fld, "set or remove a variable"))
	}
	return eo, errs
}

func (o envOverrider) apply(rc *ruleContext, obj map[string]any) (map[string]any, error) {
	vals := make([]string, len(o.values))
	for i, t := range o.values {
		s, err := t.execute(rc.values)
		if err != nil {
			return nil, fmt.Errorf("env.set[%d].value: %w", i, err)
		}
		vals[i] = s
	}
	all, err := containers(obj, true)
	if err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	if all == nil {
		return nil, notApplicable("env: kind %s has no pod template", identityOf(obj).Kind)
	}
	cs, err := selectContainers(all, o.containers)
	if err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	for _, c := range cs {
		var env []any
		if v, ok := c["env"]; ok && v != nil {
			if env, ok = v.([]any); !ok {
				return nil, fmt.Errorf("env of container %v is not a list", c["name"])
			}
		}
		out := make([]any, 0, len(env)+len(o.names))
		for _, e := range env {
			em, _ := e.(map[string]any)
			if name, _ := em["name"].(string); slices.Contains(o.remove, name) {
				continue
			}
			out = append(out, e)
		}
	set:
		for i, name := range o.names {
			v := map[string]any{"name": name, "value": vals[i]}
			for j, e := range out {
				if em, _ := e.(map[string]any); em["name"] == name {
					out[j] = v
					continue set
				}
			}
			out = append(out, v)
		}
		if len(out) == 0 {
			delete(c, "env")
		} else {
			c["env"] = out
		}
	}
	return obj, nil
}

// ---- expandTemplates

type expandTemplates struct{}

func (expandTemplates) apply(rc *ruleContext, obj map[string]any) (map[string]any, error) {
	var walk func(v any, path string) (any, error)
	walk = func(v any, path string) (any, error) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				c := x[k]
				r, err := walk(c, path+"/"+escapeAll([]string{k})[0])
				if err != nil {
					return nil, err
				}
				x[k] = r
			}
			return x, nil
		case []any:
			for i, c := range x {
				r, err := walk(c, path+"/"+strconv.Itoa(i))
				if err != nil {
					return nil, err
				}
				x[i] = r
			}
			return x, nil
		case string:
			if !strings.Contains(x, "{{") {
				return x, nil
			}
			t, err := parseTemplate(x)
			if err != nil {
				return nil, fmt.Errorf("expandTemplates %s: %w", path, err)
			}
			s, err := t.execute(rc.values)
			if err != nil {
				return nil, fmt.Errorf("expandTemplates %s: %w", path, err)
			}
			return s, nil
		default:
			return v, nil
		}
	}
	out, err := walk(obj, "")
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// ---- transform

type transformOverrider struct {
	plugin string
	params json.RawMessage
}

func compileTransform(o *flotillav1alpha1.TransformOverride, fld *field.Path) (overrider, field.ErrorList) {
	var errs field.ErrorList
	if o.Plugin == "" {
		errs = append(errs, field.Required(fld.Child("plugin"), "name a ManifestTransformer WasmPlugin"))
	}
	var params json.RawMessage
	if o.Params != nil {
		params = o.Params.Raw
		if len(params) > MaxParamsBytes {
			errs = append(errs, field.TooLong(fld.Child("params"), len(params), MaxParamsBytes))
		}
	}
	return transformOverrider{plugin: o.Plugin, params: params}, errs
}

func (o transformOverrider) apply(rc *ruleContext, obj map[string]any) (map[string]any, error) {
	if rc.in.Transformer == nil {
		return nil, fmt.Errorf("transform: no transformer for WasmPlugin %s", o.plugin)
	}
	raw, err := canonical(obj)
	if err != nil {
		return nil, err
	}
	out, err := rc.in.Transformer.Transform(rc.ctx, TransformRequest{
		Plugin: o.plugin, Params: o.params, ReplicaSet: rc.in.ReplicaSet, Override: rc.override, Rule: rc.rule,
		Values: rc.values, Manifest: raw,
	})
	if err != nil {
		return nil, fmt.Errorf("transform with WasmPlugin %s: %w", o.plugin, err)
	}
	obj, err = decode(out)
	if err != nil {
		return nil, fmt.Errorf("transform with WasmPlugin %s: %w", o.plugin, err)
	}
	return obj, nil
}
