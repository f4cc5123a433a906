package conformance

import (
	"testing"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// expiry is the properties of a CONNECT with Session Expiry Interval
// seconds.
func expiry(seconds uint32) packets.Properties {
	return packets.Properties{SessionExpiryInterval: seconds, SessionExpiryIntervalFlag: true}
}

// [MQTT-3.1.4-3] a connection with a client id already connected takes
// its session over, and [MQTT-3.1.2-5] "If a CONNECT packet is received
// with Clean Start set to 0 and there is a Session associated with the
// Client Identifier, the Server MUST resume communications with the
// Client based on state from the existing Session"; from then on the
// session's expiry is the new connection's: [MQTT-3.1.2-23] "The Client
// and Server MUST store the Session State after the Network Connection
// is closed if the Session Expiry Interval is greater than 0", and
// [MQTT-4.1.0-1] "The Client and Server MUST NOT discard the Session
// State while the Network Connection is open". A session begun with
// expiry 0 and taken over with 3600 outlives its second connection (the
// end of the first, taken over, does not end it) and holds what was
// published meanwhile; one begun with 3600 and taken over with 0 ends
// with its second connection.
func TestMQTT_3_1_4_3_SessionExpiryAfterTakeover(t *testing.T) {
	addr := start(t, server.Config{})
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})

	a, _ := connectOK(t, addr, "grows", true, expiry(0))
	a.subscribe(1, 0, sub("grows/#", 1))
	b, ack := connectOK(t, addr, "grows", false, expiry(3600))
	if !ack.SessionPresent {
		t.Fatal("the session of an open connection was not present to its takeover")
	}
	a.disconnected(packets.ErrSessionTakenOver.Code)
	b.bye()
	p.publish(msg("grows/x", 1, "kept"))
	c, ack := connectOK(t, addr, "grows", false, expiry(3600))
	if !ack.SessionPresent {
		t.Fatal("the session ended with the expiry of the connection taken over (0), not its own (3600)")
	}
	if got := c.recvType(packets.Publish); string(got.Payload) != "kept" {
		t.Fatalf("got %q", got.Payload)
	}

	a, _ = connectOK(t, addr, "shrinks", true, expiry(3600))
	a.subscribe(1, 0, sub("shrinks/#", 1))
	b, ack = connectOK(t, addr, "shrinks", false, expiry(0))
	if !ack.SessionPresent {
		t.Fatal("the session of an open connection was not present to its takeover")
	}
	a.disconnected(packets.ErrSessionTakenOver.Code)
	b.bye()
	p.publish(msg("shrinks/x", 1, "gone"))
	for i := 0; ; i++ { // the end of b's connection is processed asynchronously
		c, ack = connectOK(t, addr, "shrinks", false, expiry(0))
		if !ack.SessionPresent || i > 100 {
			break
		}
		c.bye()
		time.Sleep(10 * time.Millisecond)
	}
	if ack.SessionPresent {
		t.Fatal("the session outlived its connection of expiry 0: the expiry of the connection taken over (3600) was kept")
	}
	c.nothing()
}
