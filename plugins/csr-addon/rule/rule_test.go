package rule

import (
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/sdk/sdktest"
)

func TestReviewCSR(t *testing.T) {
	for _, tc := range Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			req := Sample()
			tc.Modify(&req)
			d, err := sdktest.ReviewCSR(Approver{}, sdktest.NewHost(""), req)
			if err != nil {
				t.Fatal(err)
			}
			if d.Decision != tc.Want || !strings.Contains(d.Message, tc.Msg) {
				t.Fatalf("decision %s %q, want %s with %q", d.Decision, d.Message, tc.Want, tc.Msg)
			}
		})
	}
}
