package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// route is one registered method and path pattern (httprouter syntax).
type route struct {
	Method, Path string
}

// router is httprouter that remembers what is registered, so the tests
// can hold every route against the OpenAPI document. Register routes
// through its methods.
type router struct {
	*httprouter.Router
	routes []route
}

func newRouter() *router {
	return &router{Router: httprouter.New()}
}

// Handle registers h for method and path.
func (r *router) Handle(method, path string, h httprouter.Handle) {
	r.routes = append(r.routes, route{method, path})
	r.Router.Handle(method, path, h)
}

// GET registers h for GET path.
func (r *router) GET(path string, h httprouter.Handle) { r.Handle(http.MethodGet, path, h) }

// POST registers h for POST path.
func (r *router) POST(path string, h httprouter.Handle) { r.Handle(http.MethodPost, path, h) }

// PUT registers h for PUT path.
func (r *router) PUT(path string, h httprouter.Handle) { r.Handle(http.MethodPut, path, h) }

// PATCH registers h for PATCH path.
func (r *router) PATCH(path string, h httprouter.Handle) { r.Handle(http.MethodPatch, path, h) }

// DELETE registers h for DELETE path.
func (r *router) DELETE(path string, h httprouter.Handle) { r.Handle(http.MethodDelete, path, h) }
