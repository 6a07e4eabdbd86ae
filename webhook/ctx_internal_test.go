package webhook

import "context"

// ctx is the context of the internal tests' store calls: never
// cancelled.
var ctx = context.Background()
