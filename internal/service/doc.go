// Package service is the state store's request and response handling that
// does not depend on how requests arrive: it reads a request's RPC
// envelope (its user properties), decodes its RESP3 payload into an engine
// op, and encodes the payload and properties of its response (SCAN's
// pages and KEYINFO's array included), of the answer to a refused request
// and of notifications. It holds the table of KEYNOTIFY registrations of
// keys and patterns (Watches), generic over who registers, and the
// request latency histogram.
//
// Both front ends use it: package broker, which binds the store to dss's
// own MQTT broker core (dss serve), and package attach, which serves the
// store from outside another MQTT broker as one of its clients (dss
// attach). So the two answer every request with the same bytes. It
// imports nothing about MQTT: each front end copies the properties into
// its own packets.
package service
