// Package cfgstatus writes the controller's view of its
// HAProxyTemplateConfig on the config's status (status.go): the
// conditions (Set), the failures of the current resources (SetFailures),
// observedGeneration, and an Event with every change (Event, Warn). A
// condition is written, and its Event emitted, only when it changes, so a
// steady state writes nothing. Set and SetFailures do not wait for the
// API server: a writer goroutine, running only while there is something
// to write, writes the newest of each in one update (Wait waits for it);
// Events are emitted at once, one per change. With leader election only the leader
// writes; a follower keeps the newest of each, and Resume writes what
// changed while nobody led. The condition types themselves belong to the
// controller (pkg/controller: ConditionValid, ConditionPublished, ...).
package cfgstatus
