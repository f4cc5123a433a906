// Package packets encodes and decodes the MQTT control packets of MQTT 5
// and 3.1.1 (Packet, with its FixedHeader and Properties), and holds the
// reason codes (Code) with which the broker core answers and refuses them.
// The decoders are fuzzed (fuzz_test.go; the seed corpora are in
// testdata/fuzz).
//
// The table of encoded packets and their decoded form that the tests of
// this package and of the core share is package packettest, which only
// tests import.
package packets
