package gateway

import "github.com/prometheus/client_golang/prometheus"

// MetricsRegisterer registers collectors on the server's own registry, the
// one its admin listener serves on /metrics: components built beside the
// server (the webhooks) report there without knowing of it.
func (s *Server) MetricsRegisterer() prometheus.Registerer { return s.metrics.reg }
