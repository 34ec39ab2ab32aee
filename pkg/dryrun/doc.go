// Package dryrun decides whether a proposed change may be admitted.
//
// The admission path reads top to bottom:
//
//	DryRunValidator.ValidateDirect (5 s)
//	  → store.Set.WithChange (overlay of the actual stores + the proposed object)
//	  → ProposalValidator.Validate (30 s): render.Engine.Render → haproxy.Checker.Check
//	  → TestRunner.Run (Workers: 1, 60 s; results cached by config hash)
//	  → Decision{Allowed, Reason, Phase, Warnings}
//
// The TestRunner is also what `htc validate` runs.
package dryrun
