package events

import "time"

// setLeaseMargin shortens how long a claimed delivery stays an instance's
// past its timeout, for tests of an instance that dies mid-delivery.
func (qu *queue) setLeaseMargin(d time.Duration) { qu.leaseMargin = d }
