// Package conformance holds tests that walk the normative statements of
// MQTT 5.0 (OASIS Standard, 7 March 2019) that dss's broker keeps, each
// named after its statement id ([MQTT-x.y.z-n] is TestMQTT_x_y_z_n...).
// They run the real server on a loopback port and talk to it over TCP,
// with raw packets (encoded and decoded by the broker's packets package,
// written and read by the test) where a client library would hide a
// fault, and with paho.golang elsewhere. docs/protocol.md lists the
// statements kept and those not tested, with the reason.
package conformance
