package httpapi

import (
	"errors"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
	"latchkey/webhook"
)

// webhookErr maps the webhook package's errors into the taxonomy.
func webhookErr(err error) error {
	var in *webhook.InputError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, webhook.ErrNotFound):
		return auth.ErrWebhookNotFound
	case errors.As(err, &in):
		return auth.Invalid("%s", in.Msg)
	}
	return err
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	var in struct {
		URL        string   `json:"url"`
		EventTypes []string `json:"eventTypes"`
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	created, err := s.hooks.Create(r.Context(), c.Project.ID, c.Mode, in.URL, in.EventTypes)
	if err != nil {
		return webhookErr(err)
	}
	return ok(w, struct {
		Success bool             `json:"success"`
		Webhook *webhook.Created `json:"webhook"`
	}{true, created})
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	list, err := s.hooks.List(r.Context(), c.Project.ID, c.Mode)
	if err != nil {
		return webhookErr(err)
	}
	return ok(w, struct {
		Success  bool           `json:"success"`
		Webhooks []webhook.View `json:"webhooks"`
	}{true, list})
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *auth.Caller) error {
	if err := s.hooks.Delete(r.Context(), c.Project.ID, c.Mode, p.ByName("id")); err != nil {
		return webhookErr(err)
	}
	return ok(w, nil)
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, p httprouter.Params, c *auth.Caller) error {
	limit, err := queryInt(r.URL.Query().Get("limit"), 100)
	if err != nil {
		return err
	}
	ds, err := s.hooks.Deliveries(r.Context(), c.Project.ID, c.Mode, p.ByName("id"), min(limit, 1000))
	if err != nil {
		return webhookErr(err)
	}
	return ok(w, struct {
		Success    bool                   `json:"success"`
		Deliveries []webhook.DeliveryView `json:"deliveries"`
	}{true, ds})
}
