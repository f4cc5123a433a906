// Package storage holds the forms in which a persistence hook of the broker
// core stores and returns clients, subscriptions, messages in flight,
// retained messages and the $SYS counters (the core restores them at start
// from a hook that provides them). dss keeps none of these: its state
// store has its own journal.
package storage
