// Package webhook delivers signed events to the URLs that projects register.
//
// It holds the mechanics of one delivery: signing the body ([Sign],
// [StandardSignature], [Headers]), refusing private targets at registration
// ([ValidateURL], [CheckTarget]) and again at dial time ([NewClient],
// [WithReach]), posting ([Post]) and the retry schedule ([NextDelay]).
// Receivers check a delivery with [Verify] or [VerifyStandard].
//
// The [Worker] also delivers the OpenID providers' back-channel logout
// requests (store.BackchannelLogoutEvent), which share the outbox, the
// queue and the retry schedule but no webhook: each goes to one client's
// back-channel logout URI as a form its Backchannel function prepares.
//
// Every signature is keyed by the webhook secret exactly as shown to the
// project: the ASCII bytes of its hex string, never the decoded bytes. A
// receiver using a Standard Webhooks library passes [StandardKey] of the
// secret, that is "whsec_" followed by the base64 of those bytes.
package webhook
