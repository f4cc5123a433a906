package server_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// TestAClientThatDoesNotReadStallsNobody has one client send requests
// whose answers wait for the journal and never read them, until its
// connection cannot take any more: the goroutine that answers every
// journaled request writes to the requester itself when it can, and must
// leave the rest to that client's write loop rather than wait for room.
// Another client's requests are answered meanwhile.
func TestAClientThatDoesNotReadStallsNobody(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{DataDir: t.TempDir()})
	c := dsstest.Dial(t, s.Addr(), "reader")
	big := strings.Repeat("v", 256<<10)
	expect(t, "big", c.Set([]string{"big", big}), "+OK\r\n", "any")

	conn, err := net.DialTimeout("tcp", s.Addr(), dsstest.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(cp *packets.ControlPacket) error {
		_, err := cp.WriteTo(conn)
		return err
	}
	connect := packets.NewControlPacket(packets.CONNECT)
	connect.Content.(*packets.Connect).ClientID = "does-not-read"
	connect.Content.(*packets.Connect).CleanStart = true
	subscribe := packets.NewControlPacket(packets.SUBSCRIBE)
	subscribe.Content.(*packets.Subscribe).PacketID = 1
	subscribe.Content.(*packets.Subscribe).Subscriptions = []packets.SubOptions{{Topic: "slow/response", QoS: 1}}
	if err := send(connect); err != nil {
		t.Fatal(err)
	}
	if err := send(subscribe); err != nil {
		t.Fatal(err)
	}

	// A SET before every GET makes the GET wait for the journal too, so
	// that its 256 KiB answer is written by the goroutine that delivers
	// journaled results. 400 of them are far more than the connection's
	// buffers hold. The requests are written from a goroutine of their
	// own, as the server may stop reading them.
	go func() {
		for i := range 400 {
			for j, cmd := range [][]byte{dsstest.Cmd("SET", "k", "v"), dsstest.Cmd("GET", "big")} {
				pub := packets.NewControlPacket(packets.PUBLISH)
				p := pub.Content.(*packets.Publish)
				p.QoS, p.PacketID, p.Topic, p.Payload = 1, uint16(2*i+j+1), wire.RequestTopic, cmd
				p.Properties.ResponseTopic = "slow/response"
				p.Properties.CorrelationData = []byte(fmt.Sprint(i, j))
				p.Properties.User = []packets.User{{Key: wire.PropTimestamp, Value: dsstest.Now()}}
				if send(pub) != nil {
					return // closed at the end of the test
				}
			}
		}
	}()

	deadline := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		key := fmt.Sprintf("key-%d", i)
		expect(t, key, c.Set([]string{key, "value"}), "+OK\r\n", "any")
	}
}
