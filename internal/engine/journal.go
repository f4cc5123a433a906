package engine

import "github.com/dssio/dss/internal/store"

// Journal records applied commands so that they survive a restart.
//
// Append is called under the engine lock for every command that changed
// the machine, in apply order. Flush is called on the delivery goroutine
// only; when it returns nil, every command appended before the call is as
// durable as the journal's policy promises. Commands appended while a
// Flush runs wait for the next one.
type Journal interface {
	Append(c *store.Command) error
	Flush() error
}
