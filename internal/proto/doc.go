// Package proto holds the fixed vocabulary of the state store protocol: the
// system topics, the MQTT user property names of the RPC envelope, the
// error texts, and the decoding of a RESP3 request into a typed Request.
//
// It is shared by the server and the client library, so that both speak
// from one table.
package proto
