package abi

import (
	"errors"
	"strconv"

	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

// FeedbackExtractor declaration, version 1 (FeedbackExtractorVersion).
//
// At load time the host calls declare_resources (input: empty) and the plugin answers with a
// FeedbackResources document naming the group/kinds it extracts feedback for. The host refuses
// a module whose declaration does not decode or validate, and calls extract_feedback only for
// resources of a declared group/kind. Like declare_inputs, the answer may depend on
// pluginConfig but must be stable for a given one.

// MaxFeedbackResources bounds a declaration.
const MaxFeedbackResources = 64

// GroupKind names a kind of Kubernetes resource: Group is the API group ("" for the core
// group: Pod, ConfigMap, …), Kind the kind as in the object's "kind" field. The version is not
// part of it: a plugin reads whatever version the ManifestWork applied (see
// ResourceIdentifier.Version in its request).
type GroupKind struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
}

// String is "Kind.group", or "Kind" for the core group, as kubectl writes it.
func (g GroupKind) String() string {
	if g.Group == "" {
		return g.Kind
	}
	return g.Kind + "." + g.Group
}

// FeedbackResources is the declare_resources answer.
type FeedbackResources struct {
	Resources []GroupKind `json:"resources"`
}

// Serves reports whether the declaration lists group/kind.
func (d *FeedbackResources) Serves(group, kind string) bool {
	for _, r := range d.Resources {
		if r.Group == group && r.Kind == kind {
			return true
		}
	}
	return false
}

// Validate checks a declaration: between 1 and MaxFeedbackResources entries, each a valid
// group (empty or a lowercase DNS subdomain) and kind (a letter, then letters, digits or
// '-', at most 63 characters), no duplicates.
func (d *FeedbackResources) Validate() error {
	if len(d.Resources) == 0 {
		return &MessageError{Message: "feedback resources", Err: fieldErr("resources", errors.New("must declare at least one group/kind"))}
	}
	if len(d.Resources) > MaxFeedbackResources {
		return &MessageError{Message: "feedback resources", Err: fieldErr("resources",
			errors.New(strconv.Itoa(len(d.Resources))+" entries, at most "+strconv.Itoa(MaxFeedbackResources)+" allowed"))}
	}
	for i, r := range d.Resources {
		var err error
		switch {
		case !validKind(r.Kind):
			err = fieldErr("kind", errors.New(strconv.Quote(r.Kind)+" is not a kind (a letter, then letters, digits or '-', at most 63 characters)"))
		case !validGroup(r.Group):
			err = fieldErr("group", errors.New(strconv.Quote(r.Group)+` is not an API group ("" for the core group, else a lowercase DNS subdomain)`))
		}
		for j := 0; err == nil && j < i; j++ {
			if d.Resources[j] == r {
				err = errors.New(r.String() + " duplicates resources[" + strconv.Itoa(j) + "]")
			}
		}
		if err != nil {
			return &MessageError{Message: "feedback resources", Err: prefixPath("resources", indexErr(i, err))}
		}
	}
	return nil
}

func validKind(k string) bool {
	if k == "" || len(k) > 63 || !isLetter(k[0]) || k[len(k)-1] == '-' {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !isLetter(c) && !isDigit(c) && c != '-' {
			return false
		}
	}
	return true
}

// validGroup accepts "" and lowercase RFC 1123 subdomains.
func validGroup(g string) bool {
	if g == "" {
		return true
	}
	if len(g) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(g); i++ {
		if i < len(g) && g[i] != '.' {
			if c := g[i]; !isLower(c) && !isDigit(c) && c != '-' {
				return false
			}
			continue
		}
		label := g[start:i]
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

func isLower(c byte) bool  { return c >= 'a' && c <= 'z' }
func isLetter(c byte) bool { return isLower(c) || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// AppendJSON appends the declaration as JSON.
func (d *FeedbackResources) AppendJSON(dst []byte) []byte {
	w := jsonlite.NewWriter(dst)
	w.BeginObject()
	w.Key("resources")
	if d.Resources == nil {
		w.Null()
	} else {
		w.BeginArray()
		for _, r := range d.Resources {
			w.BeginObject()
			w.StringField("group", r.Group)
			w.StringField("kind", r.Kind)
			w.EndObject()
		}
		w.EndArray()
	}
	w.EndObject()
	return w.Bytes()
}

// DecodeJSON replaces d with the declaration in data. Unknown fields are ignored; an absent
// group is the core group. It does not validate (the host calls Validate).
func (d *FeedbackResources) DecodeJSON(data []byte) error {
	*d = FeedbackResources{}
	return decodeDoc("feedback resources", data, func(r *jsonlite.Reader, key string) error {
		if key != "resources" {
			return nil
		}
		if r.Null() {
			return nil
		}
		d.Resources = []GroupKind{}
		return r.Array(func(i int) error {
			var gk GroupKind
			err := r.Object(func(key string) error {
				var err error
				switch key {
				case "group":
					gk.Group, err = r.String()
				case "kind":
					gk.Kind, err = r.String()
				}
				return fieldErr(key, err)
			})
			d.Resources = append(d.Resources, gk)
			return indexErr(i, err)
		})
	})
}
