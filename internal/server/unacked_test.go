package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// TestAClientThatNeverAcknowledgesIsCountedNotLoggedPerMessage has a
// client take its answers at QoS 1 and never acknowledge one, past the
// broker's maximum of unacknowledged messages (8,192): the answers past
// it are held in its session, up to --max-queued-bytes-per-session (1
// MiB here, which the 8,192 sent alone pass), and past that dropped,
// counted in dss_mqtt_queued_messages_dropped_total{limit="session"},
// and the log gets a line or two, not one per answer, whose counts add
// up to every drop. Another client is served meanwhile.
func TestAClientThatNeverAcknowledgesIsCountedNotLoggedPerMessage(t *testing.T) {
	logs := new(dsstest.Buffer)
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0", MaxSessionQueueBytes: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	conn, err := net.DialTimeout("tcp", s.Addr(), dsstest.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() { _, _ = io.Copy(io.Discard, conn) }() // reads all, acknowledges nothing
	send := func(cp *packets.ControlPacket) error {
		_, err := cp.WriteTo(conn)
		return err
	}
	connect := packets.NewControlPacket(packets.CONNECT)
	connect.Content.(*packets.Connect).ClientID = "never-acks"
	connect.Content.(*packets.Connect).CleanStart = true
	subscribe := packets.NewControlPacket(packets.SUBSCRIBE)
	subscribe.Content.(*packets.Subscribe).PacketID = 1
	subscribe.Content.(*packets.Subscribe).Subscriptions = []packets.SubOptions{{Topic: "never/acks", QoS: 1}}
	if err := send(connect); err != nil {
		t.Fatal(err)
	}
	if err := send(subscribe); err != nil {
		t.Fatal(err)
	}
	const requests = 8192 + 500
	for i := range requests {
		pub := packets.NewControlPacket(packets.PUBLISH)
		p := pub.Content.(*packets.Publish)
		p.QoS, p.PacketID, p.Topic, p.Payload = 1, uint16(i%65535+1), wire.RequestTopic, dsstest.Cmd("GET", "k")
		p.Properties.ResponseTopic = "never/acks"
		p.Properties.CorrelationData = []byte(fmt.Sprint(i))
		if err := send(pub); err != nil {
			t.Fatal(err)
		}
	}
	const dropped = `dss_mqtt_queued_messages_dropped_total{limit="session"}`
	awaitMetric(t, s, dropped, 500)
	c := dsstest.Dial(t, s.Addr(), "other")
	expect(t, "other", c.Set([]string{"k", "v"}), "+OK\r\n", "any")
	dsstest.Eventually(t, "every drop is in a log line", func() bool {
		return loggedDrops(logs.String(), "queued messages dropped") == 500
	})
	if n := strings.Count(logs.String(), "queued messages dropped"); n > 3 {
		t.Fatalf("%d log lines for %v dropped answers:\n%s", n, metricValue(t, s, dropped), logs)
	}
	if v := metricValue(t, s, `dss_mqtt_messages_dropped_total{reason="unacknowledged"}`); v != 0 {
		t.Fatalf("%v answers dropped for a connected client", v)
	}
}

// loggedDrops adds up the dropped= counts of the log lines of msg.
func loggedDrops(log, msg string) int {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, msg) {
			continue
		}
		if i := strings.Index(line, " dropped="); i >= 0 {
			var d int
			_, _ = fmt.Sscanf(line[i+len(" dropped="):], "%d", &d)
			n += d
		}
	}
	return n
}
