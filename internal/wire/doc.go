// Package wire holds the fixed vocabulary of the state store protocol as it
// travels over MQTT: the system topics, the user property names of the RPC
// envelope, the error texts, and the decoding of a RESP3 request payload
// into a typed Request.
//
// It is shared by the server and the client library, so that both speak
// from one table. It imports nothing of dss but the RESP3 package; the
// state machine does not import it.
package wire
