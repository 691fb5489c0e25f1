package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// admit applies the company's rate limit for the key's mode and reports its
// state in the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers):
// the policy is the burst (q) over the time it takes to refill (w), and the
// state is what remains (r) and when the bucket is full again (t).
func (s *Server) admit(r *http.Request, st *web.State, company string, mode invoicing.Mode) error {
	d, err := s.limiter.Allow(r.Context(), company, mode)
	if err != nil {
		return err
	}
	s.metrics.decided(mode, d)
	policy := mode.Lower()
	window := 1
	if d.Limit.Rate > 0 {
		window = web.CeilSeconds(time.Duration(float64(d.Limit.Burst) / d.Limit.Rate * float64(time.Second)))
	}
	reset := int((d.Reset + time.Second - 1) / time.Second)
	// Both values are built in one buffer and share one string, backed by
	// the request's record (web.State.SetHeader): one allocation on every
	// admitted request.
	var buf [128]byte
	b := append(buf[:0], '"')
	b = append(b, policy...)
	b = append(b, `";q=`...)
	b = strconv.AppendInt(b, int64(d.Limit.Burst), 10)
	b = append(b, ";w="...)
	b = strconv.AppendInt(b, int64(window), 10)
	cut := len(b)
	b = append(b, '"')
	b = append(b, policy...)
	b = append(b, `";r=`...)
	b = strconv.AppendInt(b, int64(max(d.Remaining, 0)), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, int64(reset), 10)
	both := string(b)
	st.SetHeader("Ratelimit-Policy", both[:cut]) // the canonical forms of RateLimit-Policy and RateLimit
	st.SetHeader("Ratelimit", both[cut:])
	if !d.Allowed {
		return &web.Error{Code: "rate_limit_" + policy, RetryAfter: d.RetryAfter,
			Detail: "The company's " + string(mode) + " rate limit (" + strconv.FormatFloat(d.Limit.Rate, 'f', -1, 64) +
				" requests/s, burst " + strconv.Itoa(d.Limit.Burst) + ") is exhausted; retry after the Retry-After delay."}
	}
	return nil
}
