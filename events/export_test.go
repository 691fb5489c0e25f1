package events

import "time"

// setLeaseMargin shortens how long a claimed delivery stays an instance's
// past its timeout, for tests of an instance that dies mid-delivery.
func (s *Service) setLeaseMargin(d time.Duration) { s.leaseMargin = d }
