// Package broker runs the embedded MQTT 5 broker (mochi-mqtt) and binds the
// state store to it.
//
// The binding is a broker hook. Requests published to the state store's
// system topic never reach the broker's routing: the hook checks the
// transport rules (QoS 1, Response Topic, Correlation Data, allowed
// response topics), answers the PUBACK itself, reads the RPC envelope,
// decodes the RESP3 payload and submits the request to the engine. When
// the engine delivers the result, the response is published through the
// broker's routing to whoever subscribed to the Response Topic.
//
// KEYNOTIFY registrations belong to a connection: they live here, on the
// node the client is connected to, and end with the connection.
package broker
