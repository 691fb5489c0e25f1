package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/invoicing-ao/gateway/web"
)

// adminHandler is the admin listener's handler, assembled here where every
// piece is wired: this instance's health and readiness (the public API's,
// gateway.Server.Health), its metrics, and the admin API, console and
// runtime profiles (admin.Service.Routes), in web's chain with the host
// check (adminHosts) and without the public listener's telemetry and CORS.
// It is never mounted on the public listener.
func (d *deps) adminHandler() http.Handler {
	return web.Listener(web.Config{Logger: d.logger, HostCheck: true, Hosts: d.adminHosts},
		d.server.Health,
		func(rt *web.Router) {
			// No token for /metrics: scrapers need no power over keys, and
			// the metrics hold no secret and no company data.
			rt.Handle(http.MethodGet, "/metrics", web.MetricsRoute(d.metrics))
		},
		d.admin.Routes)
}

// newRegistry is the registry the admin listener serves on /metrics: the
// runtime's and the process's metrics, and those each component registers
// as connectWith wires it. A registry of its own, not the process-wide
// default: tests run several gateways in one process.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
