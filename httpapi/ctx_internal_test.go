package httpapi

import "context"

// ctx is the context of the internal tests' and benchmarks' store and
// service calls: never cancelled.
var ctx = context.Background()
