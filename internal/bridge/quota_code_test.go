package bridge

import (
	"fmt"
	"testing"
	"time"

	"cloud2mqtt/internal/cloud"
	"cloud2mqtt/internal/scheduler"
)

// A read held because the account's quota is spent is answered with code
// 429 on <id>/error, whether a 429 said so or an answer's "0 left" did.
func TestErrorCodeQuotaSpent(t *testing.T) {
	w := scheduler.QuotaWindow{Name: "API-RateLimit", Limit: 45, HasRemaining: true, Reset: time.Now().Add(time.Minute)}
	limited := &cloud.APIError{Kind: cloud.ErrRateLimited, Endpoint: cloud.EndpointState, HTTPStatus: 429}
	for _, err := range []error{
		&scheduler.QuotaError{Window: w},
		fmt.Errorf("poller: read x: %w", &scheduler.QuotaError{Window: w, Err: limited}),
	} {
		if got := errorCode(err); got != 429 {
			t.Errorf("errorCode(%v) = %d, want 429", err, got)
		}
	}
}
