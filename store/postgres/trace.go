package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// roundTrips is a pgx tracer that tells store.Options.ObserveRoundTrip
// of each round trip: a statement on its own (BEGIN and COMMIT too), or
// a batch with its statements. (A statement's first run on a connection
// also prepares it, one more round trip that pgx does not trace; the
// statement cache makes that rare.)
type roundTrips func(statements int)

var (
	_ pgx.QueryTracer = roundTrips(nil)
	_ pgx.BatchTracer = roundTrips(nil)
)

// TraceQueryStart counts a statement sent on its own.
func (f roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	f(1)
	return ctx
}

// TraceQueryEnd does nothing.
func (f roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// batchSize carries a batch's statement count from its start to its end.
type batchSize struct{}

// TraceBatchStart notes the batch's size.
func (f roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, batchSize{}, data.Batch.Len())
}

// TraceBatchQuery does nothing: the batch is one round trip.
func (f roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd counts the batch.
func (f roundTrips) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	n, _ := ctx.Value(batchSize{}).(int)
	f(max(n, 1))
}
