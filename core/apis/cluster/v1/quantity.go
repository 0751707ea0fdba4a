package v1

import (
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MilliValue is q in milli-units saturated to [math.MinInt64+1, math.MaxInt64]: how placement
// hands a cluster's resources to prioritizers (the Wasm ABI's unit), without overflowing on
// huge quantities and keeping math.MinInt64 free to mean "absent".
func MilliValue(q *resource.Quantity) int64 {
	if v, ok := q.AsInt64(); ok {
		switch {
		case v > math.MaxInt64/1000:
			return math.MaxInt64
		case v < math.MinInt64/1000:
			return math.MinInt64 + 1
		}
		return v * 1000
	}
	if q.Cmp(*resource.NewQuantity(math.MaxInt64/1000, resource.DecimalSI)) > 0 {
		return math.MaxInt64
	}
	if q.Cmp(*resource.NewQuantity(math.MinInt64/1000, resource.DecimalSI)) < 0 {
		return math.MinInt64 + 1
	}
	return q.MilliValue()
}
