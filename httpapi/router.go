package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// route is one registered method and path pattern (httprouter syntax).
type route struct {
	Method, Path string
}

// router is httprouter with every route instrumented: a route's
// requests are counted and timed under its pattern (Metrics.instrument).
// It also remembers what is registered, so the tests can hold every
// route against the OpenAPI document. Register routes through its
// methods; the embedded router's own ServeFiles is not instrumented.
type router struct {
	*httprouter.Router
	metrics *Metrics
	routes  []route
}

func newRouter(m *Metrics) *router {
	return &router{Router: httprouter.New(), metrics: m}
}

// Handle registers h for method and path.
func (r *router) Handle(method, path string, h httprouter.Handle) {
	r.routes = append(r.routes, route{method, path})
	r.Router.Handle(method, path, r.metrics.instrument(method, path, h))
}

// Handler registers an http.Handler for method and path.
func (r *router) Handler(method, path string, h http.Handler) {
	r.Handle(method, path, func(w http.ResponseWriter, req *http.Request, _ httprouter.Params) { h.ServeHTTP(w, req) })
}

// HandlerFunc registers an http.HandlerFunc for method and path.
func (r *router) HandlerFunc(method, path string, h http.HandlerFunc) { r.Handler(method, path, h) }

// GET registers h for GET path.
func (r *router) GET(path string, h httprouter.Handle) { r.Handle(http.MethodGet, path, h) }

// HEAD registers h for HEAD path.
func (r *router) HEAD(path string, h httprouter.Handle) { r.Handle(http.MethodHead, path, h) }

// OPTIONS registers h for OPTIONS path.
func (r *router) OPTIONS(path string, h httprouter.Handle) { r.Handle(http.MethodOptions, path, h) }

// POST registers h for POST path.
func (r *router) POST(path string, h httprouter.Handle) { r.Handle(http.MethodPost, path, h) }

// PUT registers h for PUT path.
func (r *router) PUT(path string, h httprouter.Handle) { r.Handle(http.MethodPut, path, h) }

// PATCH registers h for PATCH path.
func (r *router) PATCH(path string, h httprouter.Handle) { r.Handle(http.MethodPatch, path, h) }

// DELETE registers h for DELETE path.
func (r *router) DELETE(path string, h httprouter.Handle) { r.Handle(http.MethodDelete, path, h) }
