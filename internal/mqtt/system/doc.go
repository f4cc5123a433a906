// Package system holds the counters of the broker core that its $SYS
// topics publish (Info), updated atomically by the core as connections
// and messages come and go.
package system
