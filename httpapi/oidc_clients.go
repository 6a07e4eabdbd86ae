package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// The clients of a project's OpenID provider, managed with the admin
// token (docs/api.md, "OpenID Connect clients").
func (s *Server) clientRoutes() {
	r := s.router
	r.POST("/api/v1/admin/projects/:id/clients", s.admin(s.createClient))
	r.GET("/api/v1/admin/projects/:id/clients", s.admin(s.listClients))
	r.GET("/api/v1/admin/projects/:id/clients/:client", s.admin(s.getClient))
	r.PATCH("/api/v1/admin/projects/:id/clients/:client", s.admin(s.updateClient))
	r.DELETE("/api/v1/admin/projects/:id/clients/:client", s.admin(s.deleteClient))
	r.POST("/api/v1/admin/projects/:id/clients/:client/secret", s.admin(s.rotateClientSecret))
	// A user's consents, under the user as the user's other admin
	// routes (user ids are unique across projects).
	r.GET("/api/v1/admin/users/:id/consents", s.admin(s.listConsents))
	r.DELETE("/api/v1/admin/users/:id/consents/:client", s.admin(s.revokeConsent))
}

type clientResponse struct {
	Success bool            `json:"success"`
	Client  auth.ClientView `json:"client"`
}

// clientSecretResponse carries a client with its secret, shown once
// (null for a public client).
type clientSecretResponse struct {
	Success      bool            `json:"success"`
	Client       auth.ClientView `json:"client"`
	ClientSecret *string         `json:"clientSecret"`
}

// withSecret returns the answer that shows secret once.
func withSecret(c auth.ClientView, secret string) clientSecretResponse {
	out := clientSecretResponse{Success: true, Client: c}
	if secret != "" {
		out.ClientSecret = &secret
	}
	return out
}

func (s *Server) createClient(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var in auth.ClientInput
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	c, secret, err := s.auth.CreateClient(r.Context(), p.ByName("id"), in)
	if err != nil {
		return err
	}
	return ok(w, withSecret(c, secret))
}

func (s *Server) listClients(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	cs, err := s.auth.Clients(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success bool              `json:"success"`
		Clients []auth.ClientView `json:"clients"`
	}{true, cs})
}

func (s *Server) getClient(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	c, err := s.auth.Client(r.Context(), p.ByName("id"), p.ByName("client"))
	if err != nil {
		return err
	}
	return ok(w, clientResponse{true, c})
}

func (s *Server) updateClient(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var in auth.ClientInput
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	c, err := s.auth.UpdateClient(r.Context(), p.ByName("id"), p.ByName("client"), in)
	if err != nil {
		return err
	}
	return ok(w, clientResponse{true, c})
}

func (s *Server) deleteClient(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := s.auth.DeleteClient(r.Context(), p.ByName("id"), p.ByName("client")); err != nil {
		return err
	}
	return ok(w, nil)
}

func (s *Server) rotateClientSecret(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := noFields(w, r); err != nil {
		return err
	}
	c, secret, err := s.auth.RotateClientSecret(r.Context(), p.ByName("id"), p.ByName("client"))
	if err != nil {
		return err
	}
	return ok(w, withSecret(c, secret))
}

func (s *Server) listConsents(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	cs, err := s.auth.UserConsents(r.Context(), "", p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success  bool               `json:"success"`
		Consents []auth.ConsentView `json:"consents"`
	}{true, cs})
}

func (s *Server) revokeConsent(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := s.auth.RevokeConsent(r.Context(), "", p.ByName("id"), p.ByName("client")); err != nil {
		return err
	}
	return ok(w, nil)
}
