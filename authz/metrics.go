package authz

import "github.com/prometheus/client_golang/prometheus"

// Collector reports the key cache, its renewals, the Redis lookups of keys
// and the keys refused without one: the binary registers it on the
// registry its admin listener serves on /metrics. The counts are read at
// scrape time and cost nothing between scrapes.
func (k *Keyring) Collector() prometheus.Collector { return keyringCollector{k} }

type keyringCollector struct{ k *Keyring }

var (
	descKeyCache = prometheus.NewDesc("gateway_key_cache_lookups_total",
		"API key verifications by cache outcome (hit, miss, negative, stale).", []string{"result"}, nil)
	descKeyRenewals = prometheus.NewDesc("gateway_key_cache_renewals_total",
		"Keys in use read again ahead of their cache expiry, off the request path, by result (renewed, dropped: no longer active, failed: Redis did not answer).", []string{"result"}, nil)
	descKeyLookups = prometheus.NewDesc("gateway_key_lookups_total",
		"Redis lookups of API keys on the request path, by key (known: verified by this instance before; unknown: under the bound of lookups of unknown keys) and result (found; invalid: no record, revoked or of the other mode; failed: Redis did not answer).", []string{"key", "result"}, nil)
	descKeyRefused = prometheus.NewDesc("gateway_key_refused_total",
		"API keys refused without a Redis lookup, by reason: malformed, checksum, legacy_form (401 invalid_api_key); source_limit, instance_limit (over the bound of lookups of unknown keys: 429 key_lookups_limited).", []string{"reason"}, nil)
	descKeyLegacy = prometheus.NewDesc("gateway_key_legacy_form_verified_total",
		"Requests verified with an API key of the first form, without checksum: while it grows, refusing that form would lock keys out.", nil, nil)
)

func (keyringCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descKeyCache, descKeyRenewals, descKeyLookups, descKeyRefused, descKeyLegacy} {
		ch <- d
	}
}

func (c keyringCollector) Collect(ch chan<- prometheus.Metric) {
	counter := prometheus.CounterValue
	st := c.k.Stats()
	for _, r := range []struct {
		name string
		n    uint64
	}{{"hit", st.Hits}, {"miss", st.Misses}, {"negative", st.Negative}, {"stale", st.Stale}} {
		ch <- prometheus.MustNewConstMetric(descKeyCache, counter, float64(r.n), r.name)
	}
	ch <- prometheus.MustNewConstMetric(descKeyRenewals, counter, float64(st.Renewed), "renewed")
	ch <- prometheus.MustNewConstMetric(descKeyRenewals, counter, float64(st.RenewDropped), "dropped")
	ch <- prometheus.MustNewConstMetric(descKeyRenewals, counter, float64(st.RenewFailed), "failed")
	ls := c.k.LookupStats()
	for _, l := range []struct {
		key string
		r   LookupResults
	}{{"known", ls.Known}, {"unknown", ls.Unknown}} {
		ch <- prometheus.MustNewConstMetric(descKeyLookups, counter, float64(l.r.Found), l.key, "found")
		ch <- prometheus.MustNewConstMetric(descKeyLookups, counter, float64(l.r.Invalid), l.key, "invalid")
		ch <- prometheus.MustNewConstMetric(descKeyLookups, counter, float64(l.r.Failed), l.key, "failed")
	}
	for _, reason := range refusalNames {
		ch <- prometheus.MustNewConstMetric(descKeyRefused, counter, float64(ls.Refused[reason]), reason)
	}
	ch <- prometheus.MustNewConstMetric(descKeyLegacy, counter, float64(ls.LegacyVerified))
}
