package broker

import "github.com/dssio/dss/internal/service"

// prepareScan fills in what the engine needs of a SCAN that the request
// does not say: under a policy, which keys the client may read (the page
// leaves out the others, and SCAN needs no grant of its own); and how
// large a page the client can receive.
func prepareScan(c *call) {
	if a := accessOf(c.client); a != nil {
		c.op.Readable = a.readable()
	}
	c.op.MaxReplyBytes = service.ScanPageBytes(int(c.client.Properties.Props.MaximumPacketSize), len(c.responseTopic), len(c.correlation))
}
