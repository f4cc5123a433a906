package console_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// pageMessage is a message that the page's MQTT.js client received,
// its payload and correlation data in upper-case hex.
type pageMessage struct {
	Topic       string            `json:"topic"`
	Payload     string            `json:"payload"`
	Correlation string            `json:"correlation"`
	User        map[string]string `json:"user"`
}

// pageResults is window.results of testdata/mqttjs/page.html.
type pageResults struct {
	Error   string `json:"error"`
	Closed  bool   `json:"closed"`
	Connack struct {
		ReasonCode int `json:"reasonCode"`
	} `json:"connack"`
	Granted       []int         `json:"granted"`
	Set           pageMessage   `json:"set"`
	Get           pageMessage   `json:"get"`
	Keynotify     pageMessage   `json:"keynotify"`
	Registered    bool          `json:"registered"`
	Notifications []pageMessage `json:"notifications"`
}

// A page of a browser application, served from its own origin, uses the
// standard MQTT.js client (testdata/mqttjs) over dss's WebSocket
// listener: it subscribes to its response topic, SETs and GETs a key
// with binary correlation data, registers for the key's notifications,
// and receives the notification of a change made by a client over TCP.
func TestMQTTjsInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	s := dsstest.StartServer(t, server.Config{WSListen: "127.0.0.1:0"})
	// The page comes from another port of the host it connects to, which
	// the listener admits without --ws-origins.
	pages := httptest.NewServer(http.FileServer(http.Dir("testdata/mqttjs")))
	t.Cleanup(pages.Close)

	const id, key, value = "mqttjs-page", "sensors/kitchen/température", "21.5 °C"
	query := url.Values{"broker": {"ws://" + s.WSAddr() + "/mqtt"}, "id": {id}, "key": {key}, "value": {value}}
	ctx := newBrowser(t, 800, 600)
	run(t, ctx, "load the page", chromedp.Navigate(pages.URL+"/page.html?"+query.Encode()))
	waitPage(t, ctx, "the page's SET, GET and KEYNOTIFY", `window.results.registered || window.results.error`)
	r := readResults(t, ctx)

	if r.Connack.ReasonCode != 0 {
		t.Fatalf("CONNACK reason code %#x", r.Connack.ReasonCode)
	}
	if len(r.Granted) != 2 || r.Granted[0] != 1 || r.Granted[1] != 1 {
		t.Fatalf("SUBACK of the response and notification topics granted %v, not QoS 1 twice", r.Granted)
	}
	response(t, "SET", r.Set, "+OK\r\n", 1)
	response(t, "GET", r.Get, fmt.Sprintf("$%d\r\n%s\r\n", len(value), value), 2)
	if set, get := version(t, "SET", r.Set), version(t, "GET", r.Get); get != set {
		t.Fatalf("GET answers version %s, the SET %s", get, set)
	}
	response(t, "KEYNOTIFY", r.Keynotify, "+OK\r\n", 3)

	// A client over TCP changes the key: the page is notified, once.
	writer := dsstest.Dial(t, s.Addr(), "tcp-writer")
	res := writer.Set([]string{key, "22 °C"})
	if string(res.Payload) != "+OK\r\n" {
		t.Fatalf("the TCP client's SET: %q", res.Payload)
	}
	changed, ok := dsstest.UserProperty(res, wire.PropTimestamp)
	if !ok {
		t.Fatal("the TCP client's SET has no __ts")
	}
	waitPage(t, ctx, "the notification", `window.results.notifications.length > 0 || window.results.error`)
	r = readResults(t, ctx)
	if len(r.Notifications) != 1 {
		t.Fatalf("notifications: %+v", r.Notifications)
	}
	n := r.Notifications[0]
	if n.Topic != wire.NotifyTopic(id, []byte(key)) {
		t.Errorf("notification on %q, want %q", n.Topic, wire.NotifyTopic(id, []byte(key)))
	}
	if want := "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$6\r\n22 °C\r\n"; unhex(t, n.Payload) != want {
		t.Errorf("notification %q, want %q", unhex(t, n.Payload), want)
	}
	if n.User[wire.PropTimestamp] != changed {
		t.Errorf("notification's __ts %q, the SET's %q", n.User[wire.PropTimestamp], changed)
	}

	// After KEYNOTIFY STOP, a change is not notified; neither is the
	// first one again. The page's GET is answered after anything the
	// server sent the page for the change before.
	stop := request(t, ctx, `request(null, "KEYNOTIFY", `+jsString(t, key)+`, "STOP")`)
	response(t, "KEYNOTIFY STOP", stop, "+OK\r\n", 4)
	if res := writer.Set([]string{key, "23 °C"}); string(res.Payload) != "+OK\r\n" {
		t.Fatalf("the TCP client's second SET: %q", res.Payload)
	}
	response(t, "GET", request(t, ctx, `request(null, "GET", `+jsString(t, key)+`)`), "$6\r\n23 °C\r\n", 5)
	if r = readResults(t, ctx); len(r.Notifications) != 1 {
		t.Fatalf("after KEYNOTIFY STOP and a change, the page has %d notifications: %+v", len(r.Notifications), r.Notifications)
	}
	if r.Closed || r.Error != "" {
		t.Fatalf("the page's connection: closed %v, error %q", r.Closed, r.Error)
	}
}

// response checks a response that the page received: its payload, and
// the page's correlation data of request number seq, byte for byte.
func response(t *testing.T, what string, m pageMessage, payload string, seq byte) {
	t.Helper()
	if got := unhex(t, m.Payload); got != payload {
		t.Fatalf("%s answered %q, want %q", what, got, payload)
	}
	if want := strings.ToUpper(hex.EncodeToString([]byte{0x00, 0xff, '\r', '\n', seq})); m.Correlation != want {
		t.Fatalf("%s's correlation data %s, want %s", what, m.Correlation, want)
	}
}

// version returns the version in the __ts user property of a response
// that the page received, failing the test when there is none.
func version(t *testing.T, what string, m pageMessage) hlc.Timestamp {
	t.Helper()
	ts, ok := m.User[wire.PropTimestamp]
	if !ok {
		t.Fatalf("%s's response has no __ts: %v", what, m.User)
	}
	v, err := hlc.Parse(ts)
	if err != nil {
		t.Fatalf("%s's __ts %q: %v", what, ts, err)
	}
	return v
}

// waitPage waits until the JavaScript condition holds, and fails the
// test with the page's error or log when the page reports an error or
// the condition does not hold within 40 seconds.
func waitPage(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	err := chromedp.Do(tctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(40*time.Second)))
	if r := readResults(t, ctx); r.Error != "" {
		err = errors.New(r.Error)
	}
	if err != nil {
		page, _ := eval[string](t, ctx, `document.getElementById("log").textContent`)
		t.Fatalf("waiting for %s: %v\nthe page's log:\n%s", what, err, page)
	}
}

// request runs a request of the page and returns its response.
func request(t *testing.T, ctx context.Context, call string) pageMessage {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	m, err := chromedp.Run(tctx, chromedp.Evaluate[pageMessage](call, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the page's %s: %v", call, err)
	}
	return m
}

func readResults(t *testing.T, ctx context.Context) pageResults {
	t.Helper()
	r, err := eval[pageResults](t, ctx, `window.results`)
	if err != nil {
		t.Fatalf("reading window.results: %v", err)
	}
	return r
}

func unhex(t *testing.T, s string) string {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return string(b)
}

// jsString quotes s as a JavaScript string literal.
func jsString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
