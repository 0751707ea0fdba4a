package override

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// decode reads one manifest as JSON objects, keeping numbers exact (json.Number).
func decode(raw []byte) (map[string]any, error) {
	if len(raw) > MaxManifestBytes {
		return nil, fmt.Errorf("the manifest is %d bytes, at most %d", len(raw), MaxManifestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("decoding the manifest: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decoding the manifest: data after the object")
	}
	if obj == nil {
		return nil, errors.New("the manifest is not a JSON object")
	}
	return obj, nil
}

// canonical is obj as compact JSON with sorted keys and no HTML escaping: the one encoding
// of a changed manifest, so equal content gives equal bytes and equal hashes.
func canonical(obj map[string]any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, fmt.Errorf("encoding the manifest: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// identity is what no override may change of a manifest.
type identity struct {
	APIVersion, Kind, Namespace, Name string
}

func identityOf(obj map[string]any) identity {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	meta, _ := obj["metadata"].(map[string]any)
	return identity{APIVersion: str(obj, "apiVersion"), Kind: str(obj, "kind"), Namespace: str(meta, "namespace"), Name: str(meta, "name")}
}

// group is the API group of the apiVersion ("" for the core group).
func (id identity) group() string {
	if i := strings.LastIndex(id.APIVersion, "/"); i >= 0 {
		return id.APIVersion[:i]
	}
	return ""
}

// String names the manifest as failures do: "apps/Deployment web/web", "ConfigMap web/cfg",
// "Namespace web".
func (id identity) String() string {
	kind := id.Kind
	if g := id.group(); g != "" {
		kind = g + "/" + kind
	}
	if id.Namespace != "" {
		return kind + " " + id.Namespace + "/" + id.Name
	}
	return kind + " " + id.Name
}

func (id identity) diff(to identity) string {
	var parts []string
	for _, f := range []struct{ name, a, b string }{
		{"apiVersion", id.APIVersion, to.APIVersion}, {"kind", id.Kind, to.Kind},
		{"metadata.namespace", id.Namespace, to.Namespace}, {"metadata.name", id.Name, to.Name},
	} {
		if f.a != f.b {
			parts = append(parts, fmt.Sprintf("%s %q → %q", f.name, f.a, f.b))
		}
	}
	return strings.Join(parts, ", ")
}

// podTemplatePaths locate the pod template (metadata and spec) of the workload kinds; the
// Pod is its own template.
var podTemplatePaths = map[string][]string{
	"Pod":         {},
	"Deployment":  {"spec", "template"},
	"ReplicaSet":  {"spec", "template"},
	"StatefulSet": {"spec", "template"},
	"DaemonSet":   {"spec", "template"},
	"Job":         {"spec", "template"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template"},
}

// podTemplate returns the object holding the pod's metadata and spec, or nil for kinds
// without one or manifests that have none yet.
func podTemplate(obj map[string]any) (map[string]any, error) {
	path, ok := podTemplatePaths[identityOf(obj).Kind]
	if !ok {
		return nil, nil
	}
	m := obj
	for i, k := range path {
		v, ok := m[k]
		if !ok || v == nil {
			return nil, nil
		}
		next, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", strings.Join(path[:i+1], "."))
		}
		m = next
	}
	return m, nil
}

// containers returns the pod's containers (and initContainers when init is set), each with
// its path for messages.
func containers(obj map[string]any, init bool) ([]map[string]any, error) {
	tpl, err := podTemplate(obj)
	if err != nil || tpl == nil {
		return nil, err
	}
	spec, ok := tpl["spec"].(map[string]any)
	if !ok {
		return nil, nil
	}
	keys := []string{"containers"}
	if init {
		keys = append(keys, "initContainers")
	}
	var out []map[string]any
	for _, k := range keys {
		v, ok := spec[k]
		if !ok || v == nil {
			continue
		}
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s is not a list", k)
		}
		for i, c := range list {
			cm, ok := c.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s[%d] is not an object", k, i)
			}
			out = append(out, cm)
		}
	}
	return out, nil
}

// selectContainers filters cs by names (none: all); a name that matches no container is an
// error, since the rule said it is there.
func selectContainers(cs []map[string]any, names []string) ([]map[string]any, error) {
	if len(names) == 0 {
		return cs, nil
	}
	var out []map[string]any
	for _, n := range names {
		found := false
		for _, c := range cs {
			if c["name"] == n {
				out = append(out, c)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("container %q not found", n)
		}
	}
	return out, nil
}

// imageRef is an image reference [registry/]repository[:tag][@digest].
type imageRef struct {
	Registry, Repository, Tag, Digest string
}

// parseImage splits ref: the registry is the first component when it has "." or ":" or is
// "localhost"; the digest follows "@"; the tag follows the last ":" of the last component.
func parseImage(ref string) imageRef {
	var r imageRef
	if i := strings.Index(ref, "@"); i >= 0 {
		ref, r.Digest = ref[:i], ref[i+1:]
	}
	if i := strings.Index(ref, "/"); i >= 0 {
		first := ref[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" {
			r.Registry, ref = first, ref[i+1:]
		}
	}
	last := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.LastIndex(last, ":"); i >= 0 {
		r.Tag = last[i+1:]
		ref = ref[:len(ref)-len(last)+i]
	}
	r.Repository = ref
	return r
}

func (r imageRef) String() string {
	var b strings.Builder
	if r.Registry != "" {
		b.WriteString(r.Registry)
		b.WriteByte('/')
	}
	b.WriteString(r.Repository)
	if r.Tag != "" {
		b.WriteByte(':')
		b.WriteString(r.Tag)
	}
	if r.Digest != "" {
		b.WriteByte('@')
		b.WriteString(r.Digest)
	}
	return b.String()
}
