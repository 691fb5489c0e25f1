package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %s", u.Redacted(), res.Status)
	}
	fmt.Fprintln(c.stdout, "ok")
	return nil
}
