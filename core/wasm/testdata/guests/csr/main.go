// Command csr is a minimal CSRApproval test plugin written against the bare Extism
// ABI: it approves requests for accepted clusters and denies the rest.
package main

import (
	"bytes"

	"flotilla.test/guests/internal/xt"
)

func main() {}

//go:wasmexport review_csr
func reviewCSR() int32 {
	if bytes.Contains(xt.Input(), []byte(`"clusterAccepted":true`)) {
		xt.Output([]byte(`{"decision":"Approve","message":"cluster is accepted"}`))
	} else {
		xt.Output([]byte(`{"decision":"Deny","message":"cluster is not accepted"}`))
	}
	return 0
}
