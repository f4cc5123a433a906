package attach

import "testing"

func TestMosquittoClient(t *testing.T) {
	cases := map[string]string{
		"1795773702: New client connected from 127.0.0.1:36632 as dss-e15 (p5, c1, k30).":     "dss-e15",
		"1795773702: New client connected from ::1:36632 as a b (p2, c0, k60, u'name').":      "a b",
		"1795773702: New client connected from 127.0.0.1:1 as x (p5, c1, k30) (p5, c1, k30).": "x (p5, c1, k30)",
		"1795773698: Client dss-a32 disconnected.":                                            "dss-a32",
		"1795773698: Client x disconnected. disconnected.":                                    "x disconnected.",
		"Client c1 closed its connection.":                                                    "c1",
		"1795773698: Client c2 has exceeded timeout, disconnecting.":                          "c2",
		"1795773698: Client c3 already connected, closing old connection.":                    "c3",
		"1795773698: Socket error on client c4, disconnecting.":                               "c4",
		"1795773698: Client c5 disconnected due to protocol error.":                           "c5",
		"1795773698: Client c6 disconnected: Connection reset by peer.":                       "c6",
		"1795773698: Bad socket read/write on client c7: Broken pipe":                         "c7",
		"1795773698: Client c8 disconnected, not authorised.":                                 "c8",
		"1795773698: mosquitto version 2.0.11 running":                                        "",
		"1795773698: Opening ipv4 listen socket on port 1883.":                                "",
		"1795773698: Client  disconnected.":                                                   "",
		"1795773698: New connection from 127.0.0.1:5 on port 1883.":                           "",
	}
	for line, want := range cases {
		if got := mosquittoClient(line); got != want {
			t.Errorf("%q: %q, want %q", line, got, want)
		}
	}
}

func TestEMQXClient(t *testing.T) {
	// The payload of EMQX 5's $SYS/brokers/<node>/clients/<id>/disconnected.
	payload := `{"username":"u","ts":1700000000000,"sockport":1883,"reason":"normal","proto_ver":5,"proto_name":"MQTT","ipaddress":"127.0.0.1","disconnected_at":1700000000000,"clientid":"dev/1"}`
	if got := emqxClient("$SYS/brokers/emqx@127.0.0.1/clients/dev/1/disconnected", []byte(payload)); got != "dev/1" {
		t.Fatalf("client %q", got)
	}
	if got := emqxClient("t", []byte("not json")); got != "" {
		t.Fatalf("client %q from a malformed payload", got)
	}
	p := newPresenceSource(PresenceEMQX)
	if !p.matches("$SYS/brokers/n/clients/c/connected") || !p.matches("$SYS/brokers/n/clients/c/disconnected") || p.matches("$SYS/brokers/n/stats") {
		t.Fatal("EMQX topics matched wrongly")
	}
}
