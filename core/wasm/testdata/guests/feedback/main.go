// Command feedback is a FeedbackExtractor test plugin written against the bare Extism ABI.
// Its declare_resources answer is its pluginConfig verbatim, so a test can load any
// declaration, valid or not, except for the configs "fail" (an error) and "panic" (a trap);
// without a config it declares Deployment.apps. extract_feedback reports the input's size
// and the plugin's "name" (a field of the config, which the declaration decoder ignores), or
// misbehaves when the config has "mode": "trap" (a Go panic), "garbage" (output that is not
// JSON) or "jsonraw" (a JsonRaw value).
package main

import (
	"strconv"
	"strings"

	"flotilla.test/guests/internal/xt"
)

func main() {}

//go:wasmexport declare_resources
func declareResources() int32 {
	switch config := string(xt.Config("pluginConfig")); config {
	case "":
		xt.Output([]byte(`{"resources":[{"group":"apps","kind":"Deployment"}]}`))
	case `"fail"`:
		return xt.Fail("no resources for this config")
	case `"panic"`:
		panic("declaring resources")
	default:
		xt.Output([]byte(config))
	}
	return 0
}

//go:wasmexport extract_feedback
func extractFeedback() int32 {
	config := string(xt.Config("pluginConfig"))
	switch {
	case strings.Contains(config, `"mode":"trap"`):
		panic("extracting feedback")
	case strings.Contains(config, `"mode":"garbage"`):
		xt.Output([]byte("not json"))
		return 0
	case strings.Contains(config, `"mode":"jsonraw"`):
		xt.Output([]byte(`{"values":[{"name":"Raw","fieldValue":{"type":"JsonRaw","jsonRaw":"{}"}}]}`))
		return 0
	}
	name := "feedback"
	if _, rest, ok := strings.Cut(config, `"name":"`); ok {
		name, _, _ = strings.Cut(rest, `"`)
	}
	n := len(xt.Input())
	xt.Output([]byte(`{"values":[{"name":"InputBytes","fieldValue":{"type":"Integer","integer":` + strconv.Itoa(n) +
		`}},{"name":"ExtractedBy","fieldValue":{"type":"String","string":"` + name + `"}}]}`))
	return 0
}
