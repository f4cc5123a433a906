// Package listeners accepts the network connections of the broker core:
// a Listener (the TCP listener, with or without TLS, in tcp.go) hands
// each accepted connection to the core, and the Listeners table starts and
// closes them together. The TCP listener retries accept errors (running
// out of descriptors, say) instead of ending, and reports them.
package listeners
