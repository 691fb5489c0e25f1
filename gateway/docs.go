package gateway

import (
	"net/http"
	"sort"
	"sync"

	"github.com/invoicing-ao/gateway/gateway/apidocs"
	"github.com/invoicing-ao/gateway/web"
)

// portal is built once per process: the document is embedded, so every
// Handler serves the same files.
var portal = sync.OnceValues(func() (*apidocs.Portal, error) {
	all := web.ProblemCodes()
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
func (s *Server) routeDocs(rt *web.Router) {
	p, err := portal()
	if err != nil {
		panic(err)
	}
	for _, f := range p.Files() {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			rt.Handle(m, f.Path, func(*http.Request, web.Params) (web.Answer, error) {
				return web.Answer{Serve: f}, nil // with validators and gzip (apidocs.File.ServeHTTP)
			})
		}
	}
	redirect := http.RedirectHandler(apidocs.DocsPath, http.StatusMovedPermanently)
	rt.HandleAs(http.MethodGet, apidocs.DocsPath+"/", "", func(*http.Request, web.Params) (web.Answer, error) {
		return web.Answer{Serve: redirect}, nil
	})
}
