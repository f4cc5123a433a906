package bench

import "testing"

func TestValidate(t *testing.T) {
	const ts = "001700000000123:00001:node"
	type resp struct {
		payload string
		stat    string // "" for none
		ts      string // "" for none
	}
	ok := func(payload, ts string) resp { return resp{payload, "200", ts} }
	tests := []struct {
		name string
		verb verb
		resp resp
		out  outcome
		err  errKind
	}{
		{"set ok", opSet, ok("+OK\r\n", ts), outOK, errNone},
		{"set not met", opSet, ok(":-1\r\n", ts), outNotMet, errNone},
		{"set without __ts", opSet, ok("+OK\r\n", ""), 0, errTimestamp},
		{"set malformed __ts", opSet, ok("+OK\r\n", "yesterday"), 0, errTimestamp},
		{"set error", opSet, ok("-ERR missing timestamp\r\n", ""), 0, errReply},
		{"set answered like a get", opSet, ok("$3\r\nabc\r\n", ts), 0, errPayload},
		{"set answered :1", opSet, ok(":1\r\n", ts), 0, errPayload},
		{"no __stat", opSet, resp{"+OK\r\n", "", ts}, 0, errStatus},
		{"__stat 500", opSet, resp{"+OK\r\n", "500", ts}, 0, errStatus},
		{"get hit", opGet, ok("$3\r\nabc\r\n", ts), outOK, errNone},
		{"get hit without __ts", opGet, ok("$3\r\nabc\r\n", ""), 0, errTimestamp},
		{"get wrong size", opGet, ok("$2\r\nab\r\n", ts), 0, errValueSize},
		{"get truncated", opGet, ok("$3\r\nab\r\n", ts), 0, errPayload},
		{"get trailing bytes", opGet, ok("$3\r\nabc\r\nx", ts), 0, errPayload},
		{"get miss", opGet, ok("$-1\r\n", ""), outMissing, errNone},
		{"get miss resp3 null", opGet, ok("_\r\n", ""), outMissing, errNone},
		{"get miss with __ts", opGet, ok("$-1\r\n", ts), 0, errTimestamp},
		{"get answered +OK", opGet, ok("+OK\r\n", ts), 0, errPayload},
		{"get answered :0", opGet, ok(":0\r\n", ""), 0, errPayload},
		{"del hit", opDel, ok(":1\r\n", ts), outOK, errNone},
		{"del hit without __ts", opDel, ok(":1\r\n", ""), 0, errTimestamp},
		{"del miss", opDel, ok(":0\r\n", ""), outMissing, errNone},
		{"del not met", opDel, ok(":-1\r\n", ts), 0, errPayload},
		{"del answered +OK", opDel, ok("+OK\r\n", ts), 0, errPayload},
		{"vdel hit", opVDel, ok(":1\r\n", ts), outOK, errNone},
		{"vdel miss", opVDel, ok(":0\r\n", ""), outMissing, errNone},
		{"vdel mismatch", opVDel, ok(":-1\r\n", ts), outNotMet, errNone},
		{"vdel answered :2", opVDel, ok(":2\r\n", ts), 0, errPayload},
		{"keynotify ok", opKeyNotify, ok("+OK\r\n", ""), outOK, errNone},
		{"keynotify stop unknown", opKeyNotify, ok(":0\r\n", ""), outMissing, errNone},
		{"empty payload", opGet, ok("", ""), 0, errPayload},
		{"garbage", opGet, ok("hello", ""), 0, errPayload},
	}
	for _, tt := range tests {
		p := &publish{payload: []byte(tt.resp.payload)}
		if tt.resp.stat != "" {
			p.stat, p.hasStat = []byte(tt.resp.stat), true
		}
		if tt.resp.ts != "" {
			p.ts, p.hasTS = []byte(tt.resp.ts), true
		}
		out, err := validate(tt.verb, 3, p)
		if err != tt.err || (err == errNone && out != tt.out) {
			t.Errorf("%s: got %v/%v, want %v/%v", tt.name, outcomeNames[out], err, outcomeNames[tt.out], tt.err)
		}
	}
}

func TestWellFormedTimestamp(t *testing.T) {
	for s, want := range map[string]bool{
		"001700000000123:00001:node": true,
		"1:2:":                       true,
		"1:2:a:b":                    true,
		":2:n":                       false,
		"1::n":                       false,
		"1:2":                        false,
		"a:2:n":                      false,
		"":                           false,
	} {
		if wellFormedTimestamp([]byte(s)) != want {
			t.Errorf("wellFormedTimestamp(%q) != %v", s, want)
		}
	}
}

func TestParseWorkload(t *testing.T) {
	for _, s := range []string{"set", "GET", "del", "vdel", "mix:0.8", "mix:1", "keynotify", "keynotify:pattern", "watch", "Watch:Pattern", "fill", "idle"} {
		if _, err := ParseWorkload(s); err != nil {
			t.Errorf("ParseWorkload(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "incr", "mix", "mix:2", "mix:x", "set:1", "keynotify:", "watch:key", "fill:pattern"} {
		if _, err := ParseWorkload(s); err == nil {
			t.Errorf("ParseWorkload(%q) accepted", s)
		}
	}
	w, _ := ParseWorkload("mix:0.25")
	if !w.Mix || w.GetRatio != 0.25 || w.Mode != ModeRequests {
		t.Errorf("mix:0.25 = %+v", w)
	}
	for s, want := range map[string]Workload{
		"keynotify":         {Mode: ModeKeyNotify},
		"keynotify:pattern": {Mode: ModeKeyNotify, Pattern: true},
		"watch":             {Mode: ModeWatch},
		"watch:pattern":     {Mode: ModeWatch, Pattern: true},
	} {
		w, _ := ParseWorkload(s)
		if w.Mode != want.Mode || w.Pattern != want.Pattern || w.String() != s {
			t.Errorf("%s = %+v", s, w)
		}
	}
}
