// Package informer fills the controller's stores from the API server: one
// store per watched resource, kept current by client-go dynamic informers.
//
//	watcher.go     Start: the informers of one watched.Resource (its label
//	               and field selectors; one per watched namespace, or one
//	               cluster-wide) feeding one store.Store indexed as the
//	               resource says. Every object is pruned to what the
//	               templates read (watched.Keep, the informer's transform)
//	               before it is cached, its small parts shared through a
//	               table per informer (watched.ShareTable, forgotten at
//	               each idle memory return: ForgetShared). Sink, the
//	               informers' event handler, applies each add, update and
//	               delete to the store and
//	               tells Updates: Changed, or, for an update that changes
//	               no field the templates read (Updates.RendersAlike, asked
//	               by the controller), StoredAlike; resyncs (the same
//	               resourceVersion) tell nothing.
//	statusonly.go  statusOnly: an update of an object's status only (its
//	               resourceVersion and managedFields aside), told to
//	               Updates.Settled so the live loop can wait for company.
//	list.go        the informer's list: paged (listPageSize objects a
//	               page), each page pruned before the next is read, so at
//	               most one page of whole objects is held; the streaming
//	               watch-list, where the API server serves one, comes first.
//	prepared.go    Prepared: the watchers a proposed config's admission
//	               starts where the stores in use do not hold what it reads
//	               (admission.Source); kept for the next admission, adopted
//	               by the config loop (Take) when the config is applied,
//	               stopped when unused for 5 minutes, at the next idle
//	               memory return once listed, refused by the API
//	               server (RBAC, no such resource), or the least recently
//	               used of more than 4.
//
// Which watchers run, and when a config switches stores, is the config
// loop's (package controller, configloop.go); what a change starts is the
// live loop's (live.go, alike.go).
package informer
