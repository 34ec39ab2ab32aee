// Package leader is the controller's leader election (leader.go): a
// Leadership says whether this replica writes the config's status, its
// Events, the webhook registration and the status of watched objects
// (always, without leader election), Campaign runs the election over a
// Lease (client-go leaderelection) and a term per won lease, and
// DefaultIdentity names the replica. The Lease's name (LeaseName) and
// durations are the controller's options (Options.LeaderElection and the
// lease fields).
package leader
