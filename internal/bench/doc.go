// Package bench is the load generator behind `dss bench`: it drives any
// server that speaks the state store protocol over MQTT 5 and reports
// throughput, a latency histogram, errors and timeouts, and the CPU that
// the generator and (optionally) the server spent per request.
//
// # Basics
//
// Run starts Config.Clients connections. Each connection is driven by one
// goroutine that is closed-loop: it keeps Config.Inflight requests
// outstanding, and writes the next request as soon as a response (and the
// PUBACK of the request) came back. Requests are built by patching a
// pre-encoded MQTT PUBLISH template (packet id, correlation data, __ts and
// the key digits), and responses are decoded in place from the
// connection's read buffer, so the generator costs a few microseconds of
// CPU per request and is not what limits a measurement.
//
// Every response is validated: the correlation data must name an
// outstanding request, __stat must be 200, the payload must have the shape
// the operation allows (for example +OK for SET, a bulk string of the
// configured value size or $-1 for GET), and __ts must be present exactly
// when the protocol requires it. Anything else is counted as an error by
// kind, with a sample kept for the report.
//
// Only responses received inside the measured window (after Config.Warmup,
// for Config.Duration) count towards throughput and latency. Errors and
// timeouts are counted over the whole run, warm-up included.
//
// # Modes
//
// Besides the closed-loop request mixes (set, get, mix:R, del, vdel), the
// keynotify mode measures notification fan-out (one writer, many
// watchers of one key, or of one pattern with keynotify:pattern), watch
// the notification of many watched keys (each watcher registered for a
// key, or a pattern, of its own; closed-loop writers whose values carry
// the time of their write), fill stores every key once (to load a data
// set) and idle opens connections and holds them (to measure the
// server's memory per connection).
//
// # Caveats
//
// Latency is measured from the write of a batch of requests to the read
// that returned the response, with one clock reading per write and per
// read. On a loaded machine that includes the generator's own scheduling
// delay; pin the generator and the server to different CPUs.
package bench
