package jsonlite

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is the type of the next JSON value.
type Kind byte

const (
	Invalid Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

// MaxDepth bounds nesting so hostile input cannot exhaust the stack.
const MaxDepth = 512

// SyntaxError reports malformed JSON and where it was found.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return "invalid JSON at offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Reader decodes one JSON document token by token. Typed getters treat null as
// the zero value, matching what encoding/json leaves in a fresh struct.
type Reader struct {
	data  []byte
	pos   int
	depth int
}

// NewReader returns a reader over data. Returned raw slices alias data.
func NewReader(data []byte) *Reader { return &Reader{data: data} }

// Offset is the current byte offset.
func (r *Reader) Offset() int { return r.pos }

func (r *Reader) errf(msg string) error { return &SyntaxError{Offset: r.pos, Msg: msg} }

func (r *Reader) ws() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// Peek returns the kind of the next value without consuming it.
func (r *Reader) Peek() Kind {
	r.ws()
	if r.pos >= len(r.data) {
		return Invalid
	}
	switch c := r.data[r.pos]; {
	case c == 'n':
		return Null
	case c == 't' || c == 'f':
		return Bool
	case c == '"':
		return String
	case c == '[':
		return Array
	case c == '{':
		return Object
	case c == '-' || (c >= '0' && c <= '9'):
		return Number
	}
	return Invalid
}

func (r *Reader) literal(word string) error {
	if len(r.data)-r.pos < len(word) || string(r.data[r.pos:r.pos+len(word)]) != word {
		return r.errf("expected " + word)
	}
	r.pos += len(word)
	return nil
}

// Null consumes a null if one is next and reports whether it did.
func (r *Reader) Null() bool {
	if r.Peek() == Null && r.literal("null") == nil {
		return true
	}
	return false
}

// End checks that only whitespace remains.
func (r *Reader) End() error {
	r.ws()
	if r.pos != len(r.data) {
		return r.errf("unexpected data after the value")
	}
	return nil
}

// Bool reads true, false or null (false).
func (r *Reader) Bool() (bool, error) {
	switch r.Peek() {
	case Null:
		return false, r.literal("null")
	case Bool:
		if r.data[r.pos] == 't' {
			return true, r.literal("true")
		}
		return false, r.literal("false")
	}
	return false, r.errf("expected a boolean")
}

// Int reads an integer number or null (0). Fractions, exponents and values that do
// not fit in int64 are errors.
func (r *Reader) Int() (int64, error) {
	switch r.Peek() {
	case Null:
		return 0, r.literal("null")
	case Number:
	default:
		return 0, r.errf("expected an integer")
	}
	start := r.pos
	integer, err := r.number()
	if err != nil {
		return 0, err
	}
	if !integer {
		r.pos = start
		return 0, r.errf("expected an integer, found a fraction or exponent")
	}
	v, perr := strconv.ParseInt(string(r.data[start:r.pos]), 10, 64)
	if perr != nil {
		r.pos = start
		return 0, r.errf("integer out of range")
	}
	return v, nil
}

// number scans a number at r.pos and reports whether it had neither fraction nor exponent.
func (r *Reader) number() (integer bool, err error) {
	d := r.data
	integer = true
	if r.pos < len(d) && d[r.pos] == '-' {
		r.pos++
	}
	switch {
	case r.pos < len(d) && d[r.pos] == '0':
		r.pos++
	case r.pos < len(d) && d[r.pos] >= '1' && d[r.pos] <= '9':
		for r.pos < len(d) && d[r.pos] >= '0' && d[r.pos] <= '9' {
			r.pos++
		}
	default:
		return false, r.errf("malformed number")
	}
	if r.pos < len(d) && d[r.pos] == '.' {
		integer = false
		r.pos++
		if r.pos >= len(d) || d[r.pos] < '0' || d[r.pos] > '9' {
			return false, r.errf("malformed number: digit expected after '.'")
		}
		for r.pos < len(d) && d[r.pos] >= '0' && d[r.pos] <= '9' {
			r.pos++
		}
	}
	if r.pos < len(d) && (d[r.pos] == 'e' || d[r.pos] == 'E') {
		integer = false
		r.pos++
		if r.pos < len(d) && (d[r.pos] == '+' || d[r.pos] == '-') {
			r.pos++
		}
		if r.pos >= len(d) || d[r.pos] < '0' || d[r.pos] > '9' {
			return false, r.errf("malformed number: digit expected in exponent")
		}
		for r.pos < len(d) && d[r.pos] >= '0' && d[r.pos] <= '9' {
			r.pos++
		}
	}
	return integer, nil
}

// String reads a string or null ("").
func (r *Reader) String() (string, error) {
	switch r.Peek() {
	case Null:
		return "", r.literal("null")
	case String:
	default:
		return "", r.errf("expected a string")
	}
	r.pos++ // opening quote
	start := r.pos
	d := r.data
	// Fast path: no escapes and valid UTF-8 means the bytes are the value.
	plain := true
	for ; r.pos < len(d); r.pos++ {
		c := d[r.pos]
		if c == '"' {
			break
		}
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
		if c < 0x20 {
			return "", r.errf("control character in string")
		}
	}
	if plain {
		if r.pos >= len(d) {
			return "", r.errf("unterminated string")
		}
		s := string(d[start:r.pos])
		r.pos++
		return s, nil
	}
	buf := make([]byte, 0, r.pos-start+16)
	buf = append(buf, d[start:r.pos]...)
	for {
		if r.pos >= len(d) {
			return "", r.errf("unterminated string")
		}
		c := d[r.pos]
		switch {
		case c == '"':
			r.pos++
			return string(buf), nil
		case c < 0x20:
			return "", r.errf("control character in string")
		case c == '\\':
			var err error
			if buf, err = r.escape(buf); err != nil {
				return "", err
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			r.pos++
		default:
			ru, size := utf8.DecodeRune(d[r.pos:])
			if ru == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, d[r.pos:r.pos+size]...)
			}
			r.pos += size
		}
	}
}

func (r *Reader) escape(buf []byte) ([]byte, error) {
	d := r.data
	if r.pos+1 >= len(d) {
		return buf, r.errf("unterminated escape")
	}
	c := d[r.pos+1]
	r.pos += 2
	switch c {
	case '"', '\\', '/':
		return append(buf, c), nil
	case 'b':
		return append(buf, '\b'), nil
	case 'f':
		return append(buf, '\f'), nil
	case 'n':
		return append(buf, '\n'), nil
	case 'r':
		return append(buf, '\r'), nil
	case 't':
		return append(buf, '\t'), nil
	case 'u':
		ru, err := r.hex4()
		if err != nil {
			return buf, err
		}
		if utf16.IsSurrogate(ru) {
			// A high surrogate must pair with a following \u low surrogate; a lone
			// one decodes to U+FFFD, as in encoding/json.
			if r.pos+1 < len(d) && d[r.pos] == '\\' && d[r.pos+1] == 'u' {
				save := r.pos
				r.pos += 2
				lo, err := r.hex4()
				if err != nil {
					return buf, err
				}
				if pair := utf16.DecodeRune(ru, lo); pair != utf8.RuneError {
					return utf8.AppendRune(buf, pair), nil
				}
				r.pos = save
			}
			ru = utf8.RuneError
		}
		return utf8.AppendRune(buf, ru), nil
	}
	r.pos -= 2
	return buf, r.errf("invalid escape")
}

func (r *Reader) hex4() (rune, error) {
	if len(r.data)-r.pos < 4 {
		return 0, r.errf("short \\u escape")
	}
	var v rune
	for _, c := range r.data[r.pos : r.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, r.errf("invalid hex digit in \\u escape")
		}
	}
	r.pos += 4
	return v, nil
}

// Object iterates the members of an object, calling fn with each key while the
// reader is positioned at the member's value. fn should consume that value; if it
// consumes nothing the value is skipped. null is an object with no members.
func (r *Reader) Object(fn func(key string) error) error {
	switch r.Peek() {
	case Null:
		return r.literal("null")
	case Object:
	default:
		return r.errf("expected an object")
	}
	if empty, err := r.open('}'); err != nil || empty {
		return err
	}
	for {
		if r.Peek() != String {
			return r.errf("expected an object key")
		}
		key, err := r.String()
		if err != nil {
			return err
		}
		r.ws()
		if r.pos >= len(r.data) || r.data[r.pos] != ':' {
			return r.errf("expected ':' after object key")
		}
		r.pos++
		r.ws()
		before := r.pos
		if err := fn(key); err != nil {
			return err
		}
		if done, err := r.next(before, '}', "object"); err != nil || done {
			return err
		}
	}
}

// Array iterates the elements of an array, calling fn with each index while the
// reader is positioned at the element. Unconsumed elements are skipped. null is an
// empty array.
func (r *Reader) Array(fn func(i int) error) error {
	switch r.Peek() {
	case Null:
		return r.literal("null")
	case Array:
	default:
		return r.errf("expected an array")
	}
	if empty, err := r.open(']'); err != nil || empty {
		return err
	}
	for i := 0; ; i++ {
		r.ws()
		before := r.pos
		if err := fn(i); err != nil {
			return err
		}
		if done, err := r.next(before, ']', "array"); err != nil || done {
			return err
		}
	}
}

// open enters the object or array whose opening byte is at r.pos. If the container
// is empty it consumes the closing byte too, leaves it, and reports empty.
func (r *Reader) open(close byte) (empty bool, err error) {
	if err := r.enter(); err != nil {
		return false, err
	}
	r.pos++
	r.ws()
	if r.pos < len(r.data) && r.data[r.pos] == close {
		r.pos++
		r.depth--
		return true, nil
	}
	return false, nil
}

// next finishes a member of an object or array that started at before: it skips
// the value if the callback consumed none of it, then consumes the ',' or the
// closing byte that follows, reporting done (and leaving the container) on the
// latter.
func (r *Reader) next(before int, close byte, container string) (done bool, err error) {
	if r.pos == before {
		if err := r.Skip(); err != nil {
			return false, err
		}
	}
	r.ws()
	if r.pos >= len(r.data) {
		return false, r.errf("unterminated " + container)
	}
	switch r.data[r.pos] {
	case ',':
		r.pos++
		return false, nil
	case close:
		r.pos++
		r.depth--
		return true, nil
	default:
		return false, r.errf("expected ',' or '" + string(close) + "' in " + container)
	}
}

func (r *Reader) enter() error {
	if r.depth >= MaxDepth {
		return r.errf("nesting deeper than " + strconv.Itoa(MaxDepth))
	}
	r.depth++
	return nil
}

// Skip consumes the next value, validating it.
func (r *Reader) Skip() error {
	switch r.Peek() {
	case Null:
		return r.literal("null")
	case Bool:
		_, err := r.Bool()
		return err
	case Number:
		_, err := r.number()
		return err
	case String:
		return r.skipString()
	case Array:
		return r.Array(func(int) error { return r.Skip() })
	case Object:
		return r.Object(func(string) error { return r.Skip() })
	}
	if r.pos >= len(r.data) {
		return r.errf("unexpected end of input")
	}
	return r.errf("unexpected character " + strconv.QuoteRune(rune(r.data[r.pos])))
}

// skipString validates a string without building it.
func (r *Reader) skipString() error {
	r.pos++
	d := r.data
	for r.pos < len(d) {
		c := d[r.pos]
		switch {
		case c == '"':
			r.pos++
			return nil
		case c < 0x20:
			return r.errf("control character in string")
		case c == '\\':
			if _, err := r.escape(nil); err != nil {
				return err
			}
		default:
			r.pos++
		}
	}
	return r.errf("unterminated string")
}

// Raw consumes the next value and returns its text (aliasing the input).
func (r *Reader) Raw() ([]byte, error) {
	r.ws()
	start := r.pos
	if err := r.Skip(); err != nil {
		return nil, err
	}
	return r.data[start:r.pos], nil
}

// Valid reports whether data is exactly one JSON value (surrounding whitespace allowed).
func Valid(data []byte) bool {
	r := NewReader(data)
	return r.Skip() == nil && r.End() == nil
}

// Lookup finds the value at path inside the JSON document raw. Path elements name
// object keys, or array indexes written in decimal. It returns the value's text
// (aliasing raw) and whether it was found; err reports malformed JSON met on the way.
func Lookup(raw []byte, path ...string) (value []byte, found bool, err error) {
	r := NewReader(raw)
	for _, elem := range path {
		hit := false
		switch r.Peek() {
		case Object:
			err = r.Object(func(key string) error {
				if hit || key != elem {
					return r.Skip()
				}
				hit = true
				// Stop here: returning errStop leaves the reader at the member's value.
				return errStop
			})
		case Array:
			idx, convErr := strconv.Atoi(elem)
			if convErr != nil || idx < 0 {
				return nil, false, nil
			}
			err = r.Array(func(i int) error {
				if i != idx {
					return r.Skip()
				}
				hit = true
				return errStop
			})
		default:
			return nil, false, nil
		}
		if err == errStop {
			err = nil
		}
		if err != nil {
			return nil, false, err
		}
		if !hit {
			return nil, false, nil
		}
	}
	v, err := r.Raw()
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

type stopError struct{}

func (stopError) Error() string { return "stop" }

var errStop error = stopError{}
