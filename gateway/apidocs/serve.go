package apidocs

import (
	"bytes"
	"net/http"
	"strings"
	"time"
)

// ServeHTTP serves the file with validators (ETag, 304) and, when the
// client accepts it and the file is Compressible, gzip. It replaces the
// listener's Cache-Control with the file's own: documentation and the
// console's files are public and may be cached, unlike API answers.
func (f *File) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", f.ContentType)
	h.Set("Cache-Control", f.CacheControl)
	if f.CSP != "" {
		h.Set("Content-Security-Policy", f.CSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
	}
	body, tag := f.Body, f.ETag
	if f.Compressible() {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			body, tag = f.Gzipped()
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("ETag", tag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding value allows gzip (not
// refused with q=0).
func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
