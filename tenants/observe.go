package tenants

import (
	"context"

	"github.com/invoicing-ao/gateway/invoicing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

const tracerName = "github.com/invoicing-ao/gateway/tenants"

// allowTraced is Allow inside a "ratelimit.Allow" span, made only under a
// recording parent so that untraced requests pay nothing for it. The span
// says what was decided and who decided it (Redis, this instance's lease, or
// its fallback); the company is the server span's business.
func (l *Limiter) allowTraced(ctx context.Context, companyID string, m invoicing.Mode) (Decision, error) {
	ctx, span := l.tracer.Start(ctx, "ratelimit.Allow")
	defer span.End()
	d, err := l.allow(ctx, companyID, m)
	if err != nil {
		span.SetStatus(codes.Error, "no decision")
		return d, err
	}
	source := "redis"
	switch {
	case d.Local:
		source = "local"
	case d.Leased:
		source = "lease"
	}
	span.SetAttributes(
		attribute.Bool("ratelimit.allowed", d.Allowed),
		attribute.String("ratelimit.source", source),
		attribute.String("ratelimit.mode", string(m)),
		attribute.Int("ratelimit.remaining", max(d.Remaining, 0)),
	)
	return d, nil
}
