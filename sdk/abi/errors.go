package abi

import "strconv"

// FieldError locates a decoding or validation problem inside a message: Path is
// the field, e.g. "subject.organizations[1]" or "values[0].fieldValue.type".
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

// prefixPath puts elem in front of the path of err, creating a FieldError if needed.
func prefixPath(elem string, err error) error {
	if err == nil {
		return nil
	}
	if fe, ok := err.(*FieldError); ok {
		switch {
		case fe.Path == "":
			fe.Path = elem
		case fe.Path[0] == '[':
			fe.Path = elem + fe.Path
		default:
			fe.Path = elem + "." + fe.Path
		}
		return fe
	}
	return &FieldError{Path: elem, Err: err}
}

func fieldErr(key string, err error) error { return prefixPath(key, err) }

func indexErr(i int, err error) error { return prefixPath("["+strconv.Itoa(i)+"]", err) }

// MessageError names the ABI message a problem was found in.
type MessageError struct {
	Message string
	Err     error
}

func (e *MessageError) Error() string { return e.Message + ": " + e.Err.Error() }

func (e *MessageError) Unwrap() error { return e.Err }

func wrapDecode(message string, err error) error {
	if err == nil {
		return nil
	}
	return &MessageError{Message: message, Err: err}
}
