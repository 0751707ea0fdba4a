// Package jsonlite is a small, reflection-free JSON reader and writer.
//
// Wasm guests built with the standard Go toolchain pay for encoding/json twice: in
// module size (it drags in reflect and fmt) and in speed inside the sandbox. The ABI
// messages are small and fixed, so the SDK encodes and decodes them by hand with this
// package. It is plain Go (errors, strconv, unicode/utf8) and builds for any target.
package jsonlite

import (
	"strconv"
	"unicode/utf8"
)

// Writer appends JSON text to a buffer. Callers emit tokens in document order
// (BeginObject, Key, value, …, EndObject); the writer inserts the commas.
// It does not check that the sequence forms a valid document.
type Writer struct {
	buf []byte
	// sep is true when the next key or value must be preceded by a comma.
	sep bool
}

// NewWriter returns a writer appending to dst (which may be nil).
func NewWriter(dst []byte) *Writer { return &Writer{buf: dst} }

// Bytes returns the text written so far.
func (w *Writer) Bytes() []byte { return w.buf }

func (w *Writer) value() {
	if w.sep {
		w.buf = append(w.buf, ',')
	}
	w.sep = true
}

// BeginObject writes '{'.
func (w *Writer) BeginObject() {
	w.value()
	w.buf = append(w.buf, '{')
	w.sep = false
}

// EndObject writes '}'.
func (w *Writer) EndObject() {
	w.buf = append(w.buf, '}')
	w.sep = true
}

// BeginArray writes '['.
func (w *Writer) BeginArray() {
	w.value()
	w.buf = append(w.buf, '[')
	w.sep = false
}

// EndArray writes ']'.
func (w *Writer) EndArray() {
	w.buf = append(w.buf, ']')
	w.sep = true
}

// Key writes an object key and the colon; the next call writes its value.
func (w *Writer) Key(k string) {
	if w.sep {
		w.buf = append(w.buf, ',')
	}
	w.buf = AppendString(w.buf, k)
	w.buf = append(w.buf, ':')
	w.sep = false
}

// String writes a string value.
func (w *Writer) String(s string) {
	w.value()
	w.buf = AppendString(w.buf, s)
}

// Int writes an integer value.
func (w *Writer) Int(i int64) {
	w.value()
	w.buf = strconv.AppendInt(w.buf, i, 10)
}

// Bool writes true or false.
func (w *Writer) Bool(b bool) {
	w.value()
	w.buf = strconv.AppendBool(w.buf, b)
}

// Null writes null.
func (w *Writer) Null() {
	w.value()
	w.buf = append(w.buf, "null"...)
}

// Raw writes pre-encoded JSON as a value; empty raw text is written as null.
// The caller vouches that raw is one valid JSON value (see Valid).
func (w *Writer) Raw(raw []byte) {
	if len(raw) == 0 {
		w.Null()
		return
	}
	w.value()
	w.buf = append(w.buf, raw...)
}

// StringField writes "k":"v".
func (w *Writer) StringField(k, v string) { w.Key(k); w.String(v) }

// BoolField writes "k":b.
func (w *Writer) BoolField(k string, b bool) { w.Key(k); w.Bool(b) }

// IntField writes "k":i.
func (w *Writer) IntField(k string, i int64) { w.Key(k); w.Int(i) }

// StringsField writes "k":["a","b"]; a nil or empty slice is written as [].
func (w *Writer) StringsField(k string, v []string) {
	w.Key(k)
	w.BeginArray()
	for _, s := range v {
		w.String(s)
	}
	w.EndArray()
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a quoted JSON string. Like encoding/json it escapes
// control characters, '<', '>', '&', U+2028 and U+2029, and replaces invalid UTF-8
// with U+FFFD, so the output is safe to embed anywhere.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
