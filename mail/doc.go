// Package mail sends latchkey's messages: it renders a queued code or
// link into a text+HTML message, hands it to a Transport (SMTP, or an
// outbox directory of .eml files when no SMTP server is configured), and
// runs the durable queue the store keeps, retrying transient failures.
package mail
