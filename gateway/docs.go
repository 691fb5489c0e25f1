package gateway

import (
	"bytes"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/invoicing-ao/gateway/gateway/apidocs"
)

// portal is built once per process: the document is embedded, so every
// Handler serves the same files.
var portal = sync.OnceValues(func() (*apidocs.Portal, error) {
	all := problemCodes()
	codes := make([]apidocs.Code, 0, len(all))
	for name, pc := range all {
		codes = append(codes, apidocs.Code{Name: name, Status: pc.Status, Title: pc.Title})
	}
	sort.Slice(codes, func(i, j int) bool {
		if codes[i].Status != codes[j].Status {
			return codes[i].Status < codes[j].Status
		}
		return codes[i].Name < codes[j].Name
	})
	return apidocs.New(apidocs.Config{Codes: codes})
})

// routeDocs serves the developer portal (OpenAPI document, explorer, collection,
// errors guide) on the public listener. It needs no key: it is public
// documentation. The embedded document is checked by the tests, so failing
// to build it is a programming error.
func (s *Server) routeDocs(rt *routes) {
	p, err := portal()
	if err != nil {
		panic(err)
	}
	for _, f := range p.Files() {
		h := serveDocFile(f)
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			rt.handle(m, f.Path, m+" "+f.Path, func(http.ResponseWriter, *http.Request, httprouter.Params) (answer, error) {
				return answer{serve: h}, nil
			})
		}
	}
	redirect := http.RedirectHandler(apidocs.DocsPath, http.StatusMovedPermanently)
	rt.handle(http.MethodGet, apidocs.DocsPath+"/", "", func(http.ResponseWriter, *http.Request, httprouter.Params) (answer, error) {
		return answer{serve: redirect}, nil
	})
}

// serveDocFile serves one portal file with validators (ETag, 304) and, when
// the client accepts it, gzip. It replaces the chain's Cache-Control:
// documentation is public and may be cached, unlike API answers.
func serveDocFile(f *apidocs.File) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	})
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
