package webhook

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"latchkey/store"
)

// MaxDeliveryPage is the most delivery attempts AdminDeliveries returns
// at once.
const MaxDeliveryPage = 100

// AdminSummary is a webhook as the dashboard lists it: the operator's
// view (Mode always "live" or "test") and its newest delivery attempt,
// nil before the first.
type AdminSummary struct {
	AdminView
	Last *DeliveryView
}

// AdminSummaries returns every webhook of projectID, of both modes,
// oldest first, without secrets, each with its newest attempt. One read
// transaction of at most MaxPerProject webhooks and one attempt each.
func (s *Service) AdminSummaries(ctx context.Context, projectID string) ([]AdminSummary, error) {
	out := []AdminSummary{}
	err := s.DB.View(ctx, func(tx store.Tx) error {
		ws, err := tx.Webhooks(projectID)
		if err != nil {
			return err
		}
		slices.SortStableFunc(ws, func(a, b *store.Webhook) int { return a.CreatedAt.Compare(b.CreatedAt) })
		for _, w := range ws {
			v := AdminSummary{AdminView: adminView(w)}
			v.Mode = ModeOf(w)
			ds, _, err := tx.DeliveriesBefore(w.ID, 0, 1)
			if err != nil {
				return err
			}
			if len(ds) == 1 {
				d := viewDelivery(ds[0])
				v.Last = &d
			}
			out = append(out, v)
		}
		return nil
	})
	return out, err
}

// DeliveryPage is a page of one webhook's delivery attempts, newest
// first. NextCursor, passed as before, gives the next (older) page; it
// is nil on the last one.
type DeliveryPage struct {
	Webhook    AdminView
	Deliveries []DeliveryView
	NextCursor *string
}

// AdminDeliveries returns a page of the delivery attempts of projectID's
// webhook id, whatever its mode (the operator's view): limit of them (at
// most MaxDeliveryPage), older than before, the NextCursor of the
// previous page ("" from the newest). A page costs its own rows at any
// depth. ErrNotFound for an unknown webhook or another project's; an
// *InputError for a cursor that is not one.
func (s *Service) AdminDeliveries(ctx context.Context, projectID, id, before string, limit int) (DeliveryPage, error) {
	var seq uint64
	if before != "" {
		n, err := strconv.ParseUint(before, 10, 64)
		if err != nil || n == 0 {
			return DeliveryPage{}, &InputError{"before is not valid: pass the nextCursor of the previous page."}
		}
		seq = n
	}
	limit = min(max(limit, 1), MaxDeliveryPage)
	page := DeliveryPage{Deliveries: []DeliveryView{}}
	err := s.DB.View(ctx, func(tx store.Tx) error {
		w, err := tx.Webhook(projectID, id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		page.Webhook = adminView(w)
		page.Webhook.Mode = ModeOf(w)
		ds, more, err := tx.DeliveriesBefore(id, seq, limit)
		if err != nil {
			return err
		}
		for _, d := range ds {
			page.Deliveries = append(page.Deliveries, viewDelivery(d))
		}
		if more && len(ds) > 0 {
			c := strconv.FormatUint(ds[len(ds)-1].Seq, 10)
			page.NextCursor = &c
		}
		return nil
	})
	return page, err
}
