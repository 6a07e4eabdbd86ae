package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"latchkey/store"
)

// EventTypes are the event types a webhook can subscribe to (each with
// its data: docs/api.md, "Events").
var EventTypes = []string{
	"user.registered", "user.updated", "user.deleted",
	"session.created", "session.revoked",
	"totp.enrolled", "totp.removed", "sms.enrolled", "backup_codes.generated",
	"passkey.registered", "passkey.removed",
	"oidc.consent_granted",
}

// MaxPerProject is how many webhooks a project may have.
const MaxPerProject = 20

// ErrNotFound is returned for an unknown webhook id or another project's.
var ErrNotFound = errors.New("Webhook not found")

// InputError is a request the caller must fix; Error is safe to show.
type InputError struct{ Msg string }

// Error is the message for the caller.
func (e *InputError) Error() string { return e.Msg }

// Service registers, lists and deletes webhooks and lists deliveries.
// It is safe for concurrent use.
type Service struct {
	DB   store.DB
	Keys *store.Keyring
	Now  func() time.Time
	// AllowPrivate lets live-mode webhooks target private addresses.
	AllowPrivate bool
	// Resolver resolves host names at registration (nil: the default).
	Resolver *net.Resolver
}

// Created is a new webhook; Secret is shown only here.
type Created struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// View is a webhook as the list shows it.
type View struct {
	ID         string   `json:"id"`
	ProjectID  string   `json:"project_id"`
	URL        string   `json:"url"`
	Secret     string   `json:"secret"`
	CreatedAt  string   `json:"created_at"`
	EventTypes []string `json:"event_types"`
}

// Create registers a webhook for projectID that belongs to mode, the
// calling key's mode ("live" or "test"): a live-mode webhook may target
// public addresses only, a test-mode one public and loopback addresses,
// and either any address when AllowPrivate is set (see ReachFor); a
// refused target is an *InputError. eventTypes nil subscribes to every
// event type; otherwise each entry must be one of EventTypes. Bad input is
// an *InputError; a project that has MaxPerProject webhooks gets one too.
func (s *Service) Create(ctx context.Context, projectID, mode, rawURL string, eventTypes []string) (*Created, error) {
	u, err := ValidateURL(rawURL)
	if err != nil {
		return nil, &InputError{err.Error()}
	}
	if eventTypes != nil {
		for _, t := range eventTypes {
			if !slices.Contains(EventTypes, t) {
				return nil, &InputError{"eventTypes: unknown event type " + quote(t) + "."}
			}
		}
		// Sorted without duplicates; an empty list stays empty (not
		// null): the webhook is subscribed to no event type.
		eventTypes = slices.Compact(slices.Sorted(slices.Values(eventTypes)))
		if eventTypes == nil {
			eventTypes = []string{}
		}
	}
	if err := CheckTarget(ctx, u, ReachFor(mode, s.AllowPrivate), s.Resolver); err != nil {
		return nil, &InputError{err.Error()}
	}
	secretBytes := make([]byte, 32)
	if _, err := rand.Read(secretBytes); err != nil {
		return nil, err
	}
	secret := hex.EncodeToString(secretBytes)
	w := &store.Webhook{ID: newID(), ProjectID: projectID, URL: u.String(), EventTypes: eventTypes, Mode: mode, CreatedAt: s.Now().UTC()}
	if w.Secret, err = s.Keys.Seal([]byte(secret), []byte("webhook:"+w.ID)); err != nil {
		return nil, err
	}
	err = s.DB.Update(ctx, func(tx store.Tx) error {
		existing, err := tx.Webhooks(projectID)
		if err != nil {
			return err
		}
		if len(existing) >= MaxPerProject {
			return &InputError{"A project can have at most 20 webhooks."}
		}
		return tx.PutWebhook(w)
	})
	if err != nil {
		return nil, err
	}
	return &Created{ID: w.ID, URL: w.URL, Secret: secret}, nil
}

// newID returns a time-ordered UUID (version 7).
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}

// ModeOf returns the mode w belongs to. A webhook stored before webhooks
// had a mode belongs to live mode: test-mode keys do not see it, and it
// gets live mode's narrower reach.
func ModeOf(w *store.Webhook) string {
	if w.Mode == "test" {
		return "test"
	}
	return "live"
}

// webhookOf returns projectID's webhook id if it belongs to mode, else
// ErrNotFound: a key never sees, nor learns of, the other mode's webhooks.
func webhookOf(tx store.Tx, projectID, mode, id string) (*store.Webhook, error) {
	w, err := tx.Webhook(projectID, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && ModeOf(w) != modeName(mode)) {
		return nil, ErrNotFound
	}
	return w, err
}

// modeName is the mode of a key: "test", or "live" for anything else.
func modeName(mode string) string {
	if mode == "test" {
		return "test"
	}
	return "live"
}

// List returns projectID's webhooks of mode with their secrets, oldest
// first; the other mode's webhooks are left out.
func (s *Service) List(ctx context.Context, projectID, mode string) ([]View, error) {
	out := []View{}
	err := s.DB.View(ctx, func(tx store.Tx) error {
		ws, err := tx.Webhooks(projectID)
		if err != nil {
			return err
		}
		ws = slices.DeleteFunc(ws, func(w *store.Webhook) bool { return ModeOf(w) != modeName(mode) })
		slices.SortStableFunc(ws, func(a, b *store.Webhook) int { return a.CreatedAt.Compare(b.CreatedAt) })
		for _, w := range ws {
			secret, err := s.Keys.Open(w.Secret, []byte("webhook:"+w.ID))
			if err != nil {
				return err
			}
			out = append(out, View{ID: w.ID, ProjectID: w.ProjectID, URL: w.URL, Secret: string(secret),
				CreatedAt: w.CreatedAt.UTC().Format(timeFormat), EventTypes: w.EventTypes})
		}
		return nil
	})
	return out, err
}

// AdminView is a webhook as the admin API lists it: no secret, with the
// mode of the key that created it.
type AdminView struct {
	ID         string   `json:"id"`
	ProjectID  string   `json:"projectId"`
	URL        string   `json:"url"`
	EventTypes []string `json:"eventTypes"`
	Mode       string   `json:"mode"`
	CreatedAt  string   `json:"createdAt"`
}

// AdminList returns every webhook of projectID, of both modes, oldest
// first, without secrets (the operator's view).
func (s *Service) AdminList(ctx context.Context, projectID string) ([]AdminView, error) {
	out := []AdminView{}
	err := s.DB.View(ctx, func(tx store.Tx) error {
		ws, err := tx.Webhooks(projectID)
		if err != nil {
			return err
		}
		slices.SortStableFunc(ws, func(a, b *store.Webhook) int { return a.CreatedAt.Compare(b.CreatedAt) })
		for _, w := range ws {
			out = append(out, adminView(w))
		}
		return nil
	})
	return out, err
}

// adminView returns the operator's view of w.
func adminView(w *store.Webhook) AdminView {
	return AdminView{ID: w.ID, ProjectID: w.ProjectID, URL: w.URL, EventTypes: w.EventTypes,
		Mode: w.Mode, CreatedAt: w.CreatedAt.UTC().Format(timeFormat)}
}

// timeFormat is RFC 3339 UTC with milliseconds.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// Delete removes projectID's webhook id, cancelling its pending
// deliveries and removing its history: a webhook with deliveries is
// deleted too, where the common form of this API fails with a 500
// (docs/choices.md, "Webhooks"). Another project's or the other mode's
// webhook is ErrNotFound.
func (s *Service) Delete(ctx context.Context, projectID, mode, id string) error {
	return s.DB.Update(ctx, func(tx store.Tx) error {
		w, err := webhookOf(tx, projectID, mode, id)
		if err != nil {
			return err
		}
		return tx.DeleteWebhook(w)
	})
}

// DeliveryView is one delivery attempt as the API shows it.
type DeliveryView struct {
	ID             string  `json:"id"`
	EventID        string  `json:"event_id"`
	EventType      string  `json:"event_type"`
	Attempt        int     `json:"attempt"`
	Status         string  `json:"status"`
	ResponseStatus *int    `json:"response_status"`
	Error          *string `json:"error"`
	DurationMS     int64   `json:"duration_ms"`
	CreatedAt      string  `json:"created_at"`
	NextAttemptAt  *string `json:"next_attempt_at"`
}

// Deliveries lists the newest delivery attempts of projectID's webhook
// id; another project's or the other mode's webhook is ErrNotFound.
func (s *Service) Deliveries(ctx context.Context, projectID, mode, id string, limit int) ([]DeliveryView, error) {
	out := []DeliveryView{}
	err := s.DB.View(ctx, func(tx store.Tx) error {
		if _, err := webhookOf(tx, projectID, mode, id); err != nil {
			return err
		}
		ds, err := tx.Deliveries(id, limit)
		for _, d := range ds {
			out = append(out, viewDelivery(d))
		}
		return err
	})
	return out, err
}

// viewDelivery returns the API view of d.
func viewDelivery(d *store.Delivery) DeliveryView {
	v := DeliveryView{ID: d.ID, EventID: d.EventID, EventType: d.EventType, Attempt: d.Attempt, Status: d.Status,
		DurationMS: d.DurationMS, CreatedAt: d.CreatedAt.UTC().Format(timeFormat)}
	if v.ID == "" {
		v.ID = strconv.FormatUint(d.Seq, 10) // a record from before ids
	}
	if d.ResponseStatus != 0 {
		rs := d.ResponseStatus
		v.ResponseStatus = &rs
	}
	if d.Error != "" {
		e := d.Error
		v.Error = &e
	}
	if d.NextAttemptAt != nil {
		n := d.NextAttemptAt.UTC().Format(timeFormat)
		v.NextAttemptAt = &n
	}
	return v
}
