package wire

import (
	"testing"

	"github.com/dssio/dss/internal/resp"
)

func req(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return resp.AppendArray(nil, b...)
}

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		want    Request
	}{
		{"set", req("SET", "k", "v"), Request{Verb: VerbSet, Key: []byte("k"), Value: []byte("v")}},
		{"lower case", req("set", "k", "v", "nx"), Request{Verb: VerbSet, Key: []byte("k"), Value: []byte("v"), Cond: IfMissing}},
		{"nex px", req("SET", "k", "v", "NEX", "PX", "10000"), Request{Verb: VerbSet, Key: []byte("k"), Value: []byte("v"), Cond: IfMissingOrEqual, PX: 10000}},
		{"px nx", req("SET", "k", "v", "px", "5", "Nx"), Request{Verb: VerbSet, Key: []byte("k"), Value: []byte("v"), Cond: IfMissing, PX: 5}},
		{"empty value", req("SET", "k", ""), Request{Verb: VerbSet, Key: []byte("k"), Value: []byte{}}},
		{"binary", req("SET", "\x00\r\n\xff", "\r\n"), Request{Verb: VerbSet, Key: []byte("\x00\r\n\xff"), Value: []byte("\r\n")}},
		{"get", req("GET", "k"), Request{Verb: VerbGet, Key: []byte("k")}},
		{"del", req("del", "k"), Request{Verb: VerbDel, Key: []byte("k")}},
		{"vdel", req("VDEL", "k", "v"), Request{Verb: VerbVDel, Key: []byte("k"), Value: []byte("v")}},
		{"keyinfo", req("keyinfo", "k"), Request{Verb: VerbKeyInfo, Key: []byte("k")}},
		{"keynotify", req("KEYNOTIFY", "k"), Request{Verb: VerbKeyNotify, Key: []byte("k")}},
		{"keynotify stop", req("keynotify", "k", "stop"), Request{Verb: VerbKeyNotify, Key: []byte("k"), Stop: true}},
		{"keynotify pattern", req("KEYNOTIFY", "s/*", "PATTERN"), Request{Verb: VerbKeyNotify, Key: []byte("s/*"), Pattern: true}},
		{"keynotify stop pattern", req("KEYNOTIFY", "s/*", "stop", "pattern"), Request{Verb: VerbKeyNotify, Key: []byte("s/*"), Pattern: true, Stop: true}},
		{"keynotify pattern stop", req("KEYNOTIFY", "s/*", "Pattern", "STOP"), Request{Verb: VerbKeyNotify, Key: []byte("s/*"), Pattern: true, Stop: true}},
		{"scan", req("SCAN", "key*"), Request{Verb: VerbScan, Key: []byte("key*")}},
		{"scan lower case", req("scan", "*"), Request{Verb: VerbScan, Key: []byte("*")}},
		{"mixed case", req("kEyInFo", "k"), Request{Verb: VerbKeyInfo, Key: []byte("k")}},
		{"vdel lower case", req("vdel", "k", "v"), Request{Verb: VerbVDel, Key: []byte("k"), Value: []byte("v")}},
		{"keynotify lower case", req("keynotify", "k"), Request{Verb: VerbKeyNotify, Key: []byte("k")}},
		{"scan empty pattern", req("SCAN", ""), Request{Verb: VerbScan, Key: []byte{}}},
		{"scan token", req("SCAN", "key*", "\x00\xffx"), Request{Verb: VerbScan, Key: []byte("key*"), Token: []byte("\x00\xffx"), HasToken: true}},
		{"scan binary token", req("SCAN", "*", "1;2;\x00\r\n\xff"), Request{Verb: VerbScan, Key: []byte("*"), Token: []byte("1;2;\x00\r\n\xff"), HasToken: true}},
	}
	for _, tt := range tests {
		got, _, err := ParseRequest(tt.payload, nil)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got.Verb != tt.want.Verb || string(got.Key) != string(tt.want.Key) || string(got.Value) != string(tt.want.Value) ||
			got.Cond != tt.want.Cond || got.PX != tt.want.PX || got.Stop != tt.want.Stop ||
			got.Pattern != tt.want.Pattern || string(got.Token) != string(tt.want.Token) || got.HasToken != tt.want.HasToken {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestParseRequestErrors(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		want    *Error
	}{
		{"not resp", []byte("SET k v"), ErrSyntax},
		{"empty array", []byte("*0\r\n"), ErrSyntax},
		{"empty payload", nil, ErrSyntax},
		{"trailing bytes", append(req("GET", "k"), 'x'), ErrSyntax},
		{"unknown verb", req("INCR", "k"), ErrUnknownCommand},
		{"set too few", req("SET", "k"), ErrWrongArgs},
		{"get too many", req("GET", "k", "v"), ErrWrongArgs},
		{"get too few", req("GET"), ErrWrongArgs},
		{"del too many", req("DEL", "a", "b"), ErrWrongArgs},
		{"vdel too few", req("VDEL", "k"), ErrWrongArgs},
		{"keynotify stop and another", req("KEYNOTIFY", "k", "STOP", "x"), ErrSyntax},
		{"empty key get", req("GET", ""), ErrEmptyKey},
		{"empty key set", req("SET", "", "v"), ErrEmptyKey},
		{"nx nex", req("SET", "k", "v", "NX", "NEX"), ErrSyntax},
		{"nx twice", req("SET", "k", "v", "NX", "NX"), ErrSyntax},
		{"px twice", req("SET", "k", "v", "PX", "1", "PX", "2"), ErrSyntax},
		{"px missing", req("SET", "k", "v", "PX"), ErrSyntax},
		{"px zero", req("SET", "k", "v", "PX", "0"), ErrSyntax},
		{"px negative", req("SET", "k", "v", "PX", "-5"), ErrSyntax},
		{"px fraction", req("SET", "k", "v", "PX", "1500.5"), ErrSyntax},
		{"px huge", req("SET", "k", "v", "PX", "99999999999999999999"), ErrSyntax},
		{"px empty", req("SET", "k", "v", "PX", ""), ErrSyntax},
		{"unknown option", req("SET", "k", "v", "XX"), ErrSyntax},
		{"nex with argument", req("SET", "k", "v", "NEX", "v"), ErrSyntax},
		{"keynotify bad option", req("KEYNOTIFY", "k", "GO"), ErrSyntax},
		{"keynotify stop twice", req("KEYNOTIFY", "k", "STOP", "STOP"), ErrSyntax},
		{"keynotify pattern twice", req("KEYNOTIFY", "k", "PATTERN", "PATTERN"), ErrSyntax},
		{"keynotify too many", req("KEYNOTIFY", "k", "PATTERN", "STOP", "X"), ErrWrongArgs},
		{"keynotify empty pattern", req("KEYNOTIFY", "", "PATTERN"), ErrEmptyKey},
		{"scan no pattern", req("SCAN"), ErrWrongArgs},
		{"scan too many", req("SCAN", "*", "tok", "COUNT"), ErrWrongArgs},
		{"keys is not a verb", req("KEYS", "*"), ErrUnknownCommand},
		// Names compare as Redis compares them: ASCII letters in any case,
		// and nothing that Unicode alone folds to them (U+017F, U+212A).
		{"verb with a prefix", req("SETX", "k", "v"), ErrUnknownCommand},
		{"verb cut short", req("KEYNOTIF", "k"), ErrUnknownCommand},
		{"name longer than any verb", req("KEYNOTIFYX", "k"), ErrUnknownCommand},
		{"long s", req("\u017fet", "k", "v"), ErrUnknownCommand},
		{"kelvin sign", req("\u212aeyinfo", "k"), ErrUnknownCommand},
		{"empty name", req("", "k"), ErrUnknownCommand},
	}
	for _, tt := range tests {
		_, _, err := ParseRequest(tt.payload, nil)
		if err != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestErrorByText(t *testing.T) {
	for _, e := range Errors {
		if ErrorByText(e.Text()) != e {
			t.Errorf("ErrorByText(%q) does not find it", e.Text())
		}
	}
	if ErrorByText("something else") != nil {
		t.Error("an unknown text must not map to a protocol error")
	}
}

func TestNotifyTopic(t *testing.T) {
	got := NotifyTopic("client-id1", []byte("SOMEKEY"))
	want := "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/636C69656E742D696431/command/notify/534F4D454B4559"
	if got != want {
		t.Fatalf("NotifyTopic = %q, want %q", got, want)
	}
	if got := NotifyTopic("c", []byte{0x00, 0xff, 0x0a}); got != ReservedPrefix+"/63/command/notify/00FF0A" {
		t.Fatalf("binary key: %q", got)
	}
	if f := NotifyTopicFilter("c"); f != ReservedPrefix+"/63/command/notify/+" {
		t.Fatalf("filter: %q", f)
	}
}

func TestForbiddenResponseTopic(t *testing.T) {
	for topic, forbidden := range map[string]bool{
		RequestTopic:                            true,
		ReservedPrefix:                          true,
		ReservedPrefix + "/x/command/notify/41": true,
		"clients/c/services/statestore/_any_/command/invoke/response":                           false,
		"clients/63/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke/response": false,
		RequestTopic + "/response": false,
	} {
		if got := ForbiddenResponseTopic(topic); got != forbidden {
			t.Errorf("ForbiddenResponseTopic(%q) = %v", topic, got)
		}
	}
}

func TestSupportedVersion(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "1.0": true, "1": true, "1.5": true, "2.0": false, "0.9": false, "x": false} {
		if SupportedVersion(v) != ok {
			t.Errorf("SupportedVersion(%q) != %v", v, ok)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add(req("SET", "k", "v", "NX", "PX", "100"))
	f.Add(req("set", "k", "v", "nex"))
	f.Add(req("GET", "k"))
	f.Add(req("KEYINFO", "k"))
	f.Add(req("VDEL", "k", "v"))
	f.Add(req("KEYNOTIFY", "k", "STOP"))
	f.Add(req("KEYNOTIFY", "k*", "PATTERN", "STOP"))
	f.Add(req("SCAN", "k*", "1;1;\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Add([]byte("*2\r\n$3\r\nDEL\r\n$0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		r, _, err := ParseRequest(payload, nil)
		if err != nil {
			if ErrorByText(err.Text()) != err {
				t.Fatalf("error %q is not a protocol error", err.Text())
			}
			return
		}
		if (len(r.Key) == 0 && r.Verb != VerbScan) || r.Verb == 0 || r.PX < 0 {
			t.Fatalf("accepted an invalid request: %+v", r)
		}
	})
}
