// Package registration keeps the webhooks of the controller's
// ValidatingWebhookConfiguration in line with the applied config
// (registration.go): the leader fills them from the configuration's
// template annotation (webhook.RegistrationTemplate), the config's rules
// and the serving certificate's CA once the controller is ready, updates
// them when one of those changes, and removes them when the last replica
// stops. It never creates or recreates the configuration. The controller
// drives it through New, SetRules, Kick, Run and Stopped; the end-to-end
// tests (test/e2e) exercise it against a real API server.
package registration
