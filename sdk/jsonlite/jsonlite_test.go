package jsonlite

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func FuzzAppendStringMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{"", "plain", `q"uote\`, "ctl\x00\x1f\n\r\t", "<html>&", "\u2028\u2029", "bad\xffutf8", "é日本🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json gives %s", s, got, want)
		}
	})
}

func FuzzStringMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`""`, `"a"`, `"\u00e9\ud83d\ude42"`, `"\ud800"`, `"\ud800\u0041"`, `"bad\xff"`, `"\x01"`, `"\q"`, `"unterminated`, `null`, `12`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want string
		wantErr := json.Unmarshal(data, &want)
		r := NewReader(data)
		got, err := r.String()
		if err == nil {
			err = r.End()
		}
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: jsonlite error %v, encoding/json error %v", data, err, wantErr)
		}
		if err == nil && got != want {
			t.Fatalf("%q: jsonlite %q, encoding/json %q", data, got, want)
		}
	})
}

func FuzzValidMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2.5e3,-0,true,false,null,"x"]}`, `{"a":}`, `[1,]`, `01`, `1.`, `-`, `1e`, `"x"  `, ` {"a" : {"b": [ ] } } `, `{"a":1}x`, `tru`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, want := Valid(data), json.Valid(data)
		if got != want {
			// jsonlite stops at MaxDepth; encoding/json allows deeper nesting.
			var se *SyntaxError
			r := NewReader(data)
			if err := r.Skip(); errors.As(err, &se) && strings.Contains(se.Msg, "nesting deeper") {
				return
			}
			t.Fatalf("%q: Valid %v, json.Valid %v", data, got, want)
		}
	})
}

func TestWriter(t *testing.T) {
	w := NewWriter(nil)
	w.BeginObject()
	w.StringField("s", "x")
	w.IntField("i", -42)
	w.BoolField("b", true)
	w.Key("n")
	w.Null()
	w.StringsField("l", nil)
	w.Key("a")
	w.BeginArray()
	w.BeginObject()
	w.EndObject()
	w.Raw([]byte(`{"r":1}`))
	w.Raw(nil)
	w.EndArray()
	w.EndObject()
	want := `{"s":"x","i":-42,"b":true,"n":null,"l":[],"a":[{},{"r":1},null]}`
	if got := string(w.Bytes()); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if !json.Valid(w.Bytes()) {
		t.Fatal("output is not valid JSON")
	}
}

func TestReaderObjectAndArray(t *testing.T) {
	r := NewReader([]byte(` {"name": "x", "skip": {"deep": [1, {"a": null}]}, "n": 7, "list": ["a", "b"], "flag": true, "nil": null} `))
	var name string
	var n int64
	var list []string
	var flag, sawNil bool
	err := r.Object(func(key string) error {
		var err error
		switch key {
		case "name":
			name, err = r.String()
		case "n":
			n, err = r.Int()
		case "list":
			err = r.Array(func(i int) error {
				s, err := r.String()
				list = append(list, s)
				return err
			})
		case "flag":
			flag, err = r.Bool()
		case "nil":
			sawNil = r.Null()
		}
		return err
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		t.Fatal(err)
	}
	if name != "x" || n != 7 || strings.Join(list, ",") != "a,b" || !flag || !sawNil {
		t.Fatalf("decoded name=%q n=%d list=%v flag=%v nil=%v", name, n, list, flag, sawNil)
	}
}

func TestReaderErrorsCarryOffsets(t *testing.T) {
	for _, tc := range []struct {
		in   string
		read func(*Reader) error
		msg  string
	}{
		{`1.5`, func(r *Reader) error { _, err := r.Int(); return err }, "offset 0: expected an integer, found a fraction"},
		{`99999999999999999999`, func(r *Reader) error { _, err := r.Int(); return err }, "integer out of range"},
		{`"x"`, func(r *Reader) error { _, err := r.Int(); return err }, "expected an integer"},
		{`{"a" 1}`, func(r *Reader) error { return r.Skip() }, "offset 5: expected ':'"},
		{`[1 2]`, func(r *Reader) error { return r.Skip() }, "offset 3: expected ',' or ']'"},
		{`{"a":1`, func(r *Reader) error { return r.Skip() }, "unterminated object"},
		{`{1:2}`, func(r *Reader) error { return r.Skip() }, "expected an object key"},
		{`x`, func(r *Reader) error { return r.Skip() }, "unexpected character 'x'"},
		{``, func(r *Reader) error { return r.Skip() }, "unexpected end of input"},
		{strings.Repeat("[", MaxDepth+1), func(r *Reader) error { return r.Skip() }, "nesting deeper than 512"},
	} {
		err := tc.read(NewReader([]byte(tc.in)))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.msg)
		}
	}
}

func TestLookup(t *testing.T) {
	doc := []byte(`{"metadata": {"name": "web"}, "status": {"replicas": 3, "conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing"}]}}`)
	for _, tc := range []struct {
		path  []string
		want  string
		found bool
	}{
		{[]string{"status", "replicas"}, "3", true},
		{[]string{"metadata"}, `{"name": "web"}`, true},
		{[]string{"status", "conditions", "1", "type"}, `"Progressing"`, true},
		{[]string{"status", "conditions", "2"}, "", false},
		{[]string{"status", "conditions", "x"}, "", false},
		{[]string{"status", "replicas", "deeper"}, "", false},
		{[]string{"spec"}, "", false},
		{nil, string(doc), true},
	} {
		got, found, err := Lookup(doc, tc.path...)
		if err != nil || found != tc.found || string(got) != tc.want {
			t.Errorf("Lookup %v = %q, %v, %v; want %q, %v", tc.path, got, found, err, tc.want, tc.found)
		}
	}
	if _, _, err := Lookup([]byte(`{"a": [1, }`), "a", "1"); err == nil {
		t.Error("no error for malformed JSON on the path")
	}
}
