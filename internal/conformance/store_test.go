package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/wire"
)

// exchange is one request of a script and what its response must be.
type exchange struct {
	args []string
	user []paho.UserProperty
	// payload is the response's payload; version is "none" when the
	// response must carry no __ts, "new" for a version above every
	// earlier one, "same" for the version of the previous exchange.
	payload, version string
}

func withTS(extra ...paho.UserProperty) []paho.UserProperty {
	return append([]paho.UserProperty{{Key: wire.PropTimestamp, Value: dsstest.Now()}}, extra...)
}

func errText(e *wire.Error) string { return "-ERR " + e.Text() + "\r\n" }

// The responses of PROTOCOL.md sections 2 to 7, byte for byte, with
// their envelope: the same through dss serve and through Mosquitto with
// dss attached.
func TestStateStoreResponses(t *testing.T) {
	future := fmt.Sprintf("%015d:00000:x", time.Now().Add(time.Hour).UnixMilli())
	script := []exchange{
		{args: []string{"SET", "k", "v1"}, user: withTS(), payload: "+OK\r\n", version: "new"},
		{args: []string{"GET", "k"}, payload: "$2\r\nv1\r\n", version: "same"},
		{args: []string{"set", "k", "v2", "nx"}, user: withTS(), payload: ":-1\r\n", version: "same"},
		{args: []string{"SET", "k", "v1", "NEX", "PX", "60000"}, user: withTS(), payload: "+OK\r\n", version: "new"},
		{args: []string{"VDEL", "k", "other"}, payload: ":-1\r\n", version: "same"},
		{args: []string{"VDEL", "k", "v1"}, payload: ":1\r\n", version: "same"},
		{args: []string{"GET", "k"}, payload: "$-1\r\n", version: "none"},
		{args: []string{"DEL", "k"}, payload: ":0\r\n", version: "none"},
		{args: []string{"SET", "e", ""}, user: withTS(), payload: "+OK\r\n", version: "new"},
		{args: []string{"GET", "e"}, payload: "$0\r\n\r\n", version: "same"},
		{args: []string{"DEL", "e"}, payload: ":1\r\n", version: "same"},
		{args: []string{"KEYNOTIFY", "k"}, payload: "+OK\r\n", version: "none"},
		{args: []string{"KEYNOTIFY", "k", "STOP"}, payload: "+OK\r\n", version: "none"},
		{args: []string{"KEYNOTIFY", "k", "STOP"}, payload: ":0\r\n", version: "none"},
		{args: []string{"SET", "k", "v"}, payload: errText(wire.ErrMissingTimestamp), version: "none"},
		{args: []string{"SET", "k", "v"}, user: []paho.UserProperty{{Key: wire.PropTimestamp, Value: "nonsense"}}, payload: errText(wire.ErrMalformedTimestamp), version: "none"},
		{args: []string{"SET", "k", "v"}, user: []paho.UserProperty{{Key: wire.PropTimestamp, Value: future}}, payload: errText(wire.ErrTimestampSkew), version: "none"},
		{args: []string{"FROB", "k"}, payload: errText(wire.ErrUnknownCommand), version: "none"},
		{args: []string{"GET"}, payload: errText(wire.ErrWrongArgs), version: "none"},
		{args: []string{"GET", ""}, payload: errText(wire.ErrEmptyKey), version: "none"},
		{args: []string{"SET", "f", "1"}, user: withTS(paho.UserProperty{Key: wire.PropFencingToken, Value: "001700000000000:00000:a"}), payload: "+OK\r\n", version: "new"},
		{args: []string{"DEL", "f"}, payload: errText(wire.ErrFencingRequired), version: "none"},
		{args: []string{"DEL", "f"}, user: []paho.UserProperty{{Key: wire.PropFencingToken, Value: "001600000000000:00000:a"}}, payload: errText(wire.ErrFencingLower), version: "none"},
	}
	forEachTarget(t, func(t *testing.T, addr string) {
		c := dsstest.Dial(t, addr, "script")
		var last hlc.Timestamp
		for i, x := range script {
			what := fmt.Sprintf("%d %q", i, strings.Join(x.args, " "))
			p := c.Request(dsstest.Cmd(x.args...), x.user...)
			if string(p.Payload) != x.payload {
				t.Fatalf("%s: payload %q, want %q", what, p.Payload, x.payload)
			}
			if p.QoS != 1 || p.Properties.ContentType != wire.ContentType {
				t.Fatalf("%s: QoS %d, content type %q", what, p.QoS, p.Properties.ContentType)
			}
			keys := []string{wire.PropStatus, wire.PropProtocolVersion}
			if x.version != "none" {
				keys = append(keys, wire.PropTimestamp)
			}
			if got := propKeys(p); got != strings.Join(keys, ",") {
				t.Fatalf("%s: user properties %s, want %s", what, got, strings.Join(keys, ","))
			}
			st, _ := dsstest.UserProperty(p, wire.PropStatus)
			pv, _ := dsstest.UserProperty(p, wire.PropProtocolVersion)
			if st != "200" || pv != "1.0" {
				t.Fatalf("%s: __stat %q __protVer %q", what, st, pv)
			}
			if x.version == "none" {
				continue
			}
			ts, _ := dsstest.UserProperty(p, wire.PropTimestamp)
			v, err := hlc.Parse(ts)
			if err != nil {
				t.Fatalf("%s: __ts %q: %v", what, ts, err)
			}
			switch {
			case x.version == "new" && !last.Before(v):
				t.Fatalf("%s: version %v not above %v", what, v, last)
			case x.version == "same" && v != last:
				t.Fatalf("%s: version %v, want %v", what, v, last)
			}
			last = v
		}
		// Another major RPC version: 505 and no payload, not executed.
		p := c.Request(dsstest.Cmd("SET", "k", "x"), withTS(paho.UserProperty{Key: wire.PropProtocolVersion, Value: "2.0"})...)
		if st, _ := dsstest.UserProperty(p, wire.PropStatus); st != "505" || len(p.Payload) != 0 {
			t.Fatalf("version 2.0: __stat %q payload %q", st, p.Payload)
		}
		if got := propKeys(p); got != "__stat,__stMsg,__protVer,__supProtMajVer,__requestProtVer" {
			t.Fatalf("version 2.0: user properties %s", got)
		}
		if p := c.Request(dsstest.Cmd("GET", "k")); string(p.Payload) != "$-1\r\n" {
			t.Fatalf("a request of version 2.0 was executed: GET %q", p.Payload)
		}
		// SCAN, the vendor's newer clients' listing: no version.
		if p := c.Request(dsstest.Cmd("SCAN", "f*")); string(p.Payload) != "*1\r\n*1\r\n$1\r\nf\r\n" || propKeys(p) != "__stat,__protVer" {
			t.Fatalf("SCAN: %q %s", p.Payload, propKeys(p))
		}
	})
}

func propKeys(p *paho.Publish) string {
	var keys []string
	for _, u := range p.Properties.User {
		keys = append(keys, u.Key)
	}
	return strings.Join(keys, ",")
}

// KEYNOTIFY's notifications (PROTOCOL.md section 8), on the registering
// client's notification topic, in the order of the changes.
func TestStateStoreNotifications(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string) {
		w := dsstest.Dial(t, addr, "watcher")
		w.Subscribe(wire.NotifyTopicFilter("watcher"))
		if p := w.Request(dsstest.Cmd("KEYNOTIFY", "SOMEKEY")); string(p.Payload) != "+OK\r\n" {
			t.Fatalf("KEYNOTIFY: %q", p.Payload)
		}
		c := dsstest.Dial(t, addr, "writer")
		set := c.Set([]string{"SOMEKEY", "v"})
		del := c.Request(dsstest.Cmd("DEL", "SOMEKEY"))
		topic := "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/77617463686572/command/notify/534F4D454B4559"
		for _, want := range []struct {
			payload string
			resp    *paho.Publish
		}{
			{"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nv\r\n", set},
			{"*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n", del},
		} {
			n := w.Next()
			if n.Topic != topic || string(n.Payload) != want.payload {
				t.Fatalf("notification %q on %s, want %q on %s", n.Payload, n.Topic, want.payload, topic)
			}
			ts, _ := dsstest.UserProperty(n, wire.PropTimestamp)
			if v, err := hlc.Parse(ts); err != nil || v.IsZero() {
				t.Fatalf("notification __ts %q", ts)
			}
			if n.Properties.ContentType != wire.ContentType {
				t.Fatalf("notification content type %q", n.Properties.ContentType)
			}
		}
		if p := w.Request(dsstest.Cmd("KEYNOTIFY", "SOMEKEY", "STOP")); string(p.Payload) != "+OK\r\n" {
			t.Fatalf("KEYNOTIFY STOP: %q", p.Payload)
		}
		c.Set([]string{"SOMEKEY", "again"})
		w.NoMessage(300 * time.Millisecond)
	})
}

// A request without Response Topic or Correlation Data, or with QoS 0,
// is not executed (PROTOCOL.md section 1). One that has a Response Topic
// is told why there: __stat 400, the reason in __stMsg and as the
// payload, its Correlation Data if it has any.
func TestStateStoreRefusesIncompleteRequests(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string) {
		c := dsstest.Dial(t, addr, "incomplete")
		for _, p := range []*paho.Publish{
			{QoS: 1, Topic: wire.RequestTopic, Payload: dsstest.Cmd("SET", "a", "1"),
				Properties: &paho.PublishProperties{CorrelationData: []byte("x"), User: withTS()}},
			{QoS: 1, Topic: wire.RequestTopic, Payload: dsstest.Cmd("SET", "b", "1"),
				Properties: &paho.PublishProperties{ResponseTopic: c.ResponseTopic, User: withTS()}},
			{QoS: 0, Topic: wire.RequestTopic, Payload: dsstest.Cmd("SET", "c", "1"),
				Properties: &paho.PublishProperties{ResponseTopic: c.ResponseTopic, CorrelationData: []byte("y"), User: withTS()}},
			{QoS: 0, Topic: wire.RequestTopic, Payload: dsstest.Cmd("SET", "d", "1"),
				Properties: &paho.PublishProperties{ResponseTopic: c.ResponseTopic, User: withTS()}},
		} {
			// dss serve acknowledges with 0x83 (an error here); a broker
			// dss is attached to acknowledges what it takes.
			_, _ = c.Publish(p)
		}
		// Answers to b, c and d (a has no Response Topic), by correlation
		// data and reason; those without correlation data in either order.
		want := []string{
			"|state store request without Correlation Data",
			"y|state store requests must be sent with QoS 1",
			"|state store requests must be sent with QoS 1 and carry Correlation Data",
		}
		var got []string
		for range len(want) {
			p := c.Next()
			msg, _ := dsstest.UserProperty(p, wire.PropStatusMessage)
			st, _ := dsstest.UserProperty(p, wire.PropStatus)
			if p.Topic != c.ResponseTopic || string(p.Payload) != "-ERR "+msg+"\r\n" || st != "400" ||
				propKeys(p) != "__stat,__stMsg,__protVer" || p.QoS != 1 || p.Properties.ContentType != wire.ContentType {
				t.Fatalf("refusal: %q on %s, __stat %q __stMsg %q, properties %s, QoS %d, content type %q",
					p.Payload, p.Topic, st, msg, propKeys(p), p.QoS, p.Properties.ContentType)
			}
			got = append(got, string(p.Properties.CorrelationData)+"|"+msg)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("refusals %q, want %q", got, want)
		}
		for _, k := range []string{"a", "b", "c", "d"} {
			if p := c.Request(dsstest.Cmd("GET", k)); string(p.Payload) != "$-1\r\n" {
				t.Fatalf("GET %s: %q: an incomplete request was executed", k, p.Payload)
			}
		}
		c.NoMessage(100 * time.Millisecond)
	})
}
