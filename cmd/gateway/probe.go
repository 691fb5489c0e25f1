package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// cmdProbe asks a running gateway's health endpoint and succeeds only on 200.
// It exists for container health checks: the image has no shell, curl or
// wget, so `gateway probe http://127.0.0.1:8080/readyz` is the check.
func cmdProbe(ctx context.Context, c *invocation) error {
	u, err := url.Parse(c.args[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("needs an http:// URL, e.g. http://127.0.0.1:8080/readyz")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", u.Redacted(), err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %s", u.Redacted(), res.Status)
	}
	fmt.Fprintln(c.stdout, "ok")
	printDurability(c.stdout, body)
	return nil
}

// probeHints say what a check's state means, for the probe's lines.
var probeHints = map[string]map[string]string{
	"persistence": {"at_risk": "a Redis restart empties it; set appendonly yes"},
	"eviction":    {"at_risk": "Redis may delete the control plane's records under memory pressure; set maxmemory-policy noeviction"},
	"replicas":    {"at_risk": "no replica holds a copy of the control plane"},
}

// printDurability prints what /readyz says of Redis (redisDurability), a
// line per check, when it says it.
func printDurability(w io.Writer, body []byte) {
	var r struct {
		Durability map[string]json.RawMessage `json:"redisDurability"`
	}
	if json.Unmarshal(body, &r) != nil || r.Durability == nil {
		return
	}
	for _, name := range []string{"persistence", "eviction", "replicas"} {
		var c struct{ State, Value string }
		if json.Unmarshal(r.Durability[name], &c) != nil || c.State == "" {
			continue
		}
		line := "redis " + name + ": " + strings.ReplaceAll(c.State, "_", " ")
		if c.Value != "" {
			line += " (" + c.Value + ")"
		}
		switch h := probeHints[name][c.State]; {
		case h != "":
			line += ": " + h
		case c.State == "unknown":
			line += ": Redis does not say (CONFIG GET or INFO refused), or cannot be reached"
		}
		fmt.Fprintln(w, line)
	}
	var n int
	switch err := json.Unmarshal(r.Durability["changesWaitForReplicas"], &n); {
	case err != nil:
	case n == 0:
		fmt.Fprintln(w, "redis changes: done once the master has them (no replica waited for)")
	case n == 1:
		fmt.Fprintln(w, "redis changes: each confirmed by a replica before it is done")
	default:
		fmt.Fprintf(w, "redis changes: each confirmed by %d replicas before it is done\n", n)
	}
}
