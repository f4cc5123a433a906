// SPDX-License-Identifier: MIT

package mqtt

// dss: a publish to Options.ConsumedTopic (a request to the state store)
// is read into a buffer of its connection's (consumedBody), and handed
// by pointer, as every packet read is (see Client.readPacket), to the
// Options.Consumer that consumes it: no copy of the packet (800 bytes) is
// made on the way.

// consumedBody returns the connection's buffer for the body of a publish
// to Options.ConsumedTopic, of n bytes.
func (cl *Client) consumedBody(n int) []byte {
	if cap(cl.Net.consumedBuf) < n {
		cl.Net.consumedBuf = make([]byte, max(n, 512))
	}
	return cl.Net.consumedBuf[:n]
}
