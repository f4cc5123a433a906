package auth

import (
	"errors"
	"strings"
	"testing"
)

// vendorPolicy is the example policy with a few more rules.
const vendorPolicy = `
rules:
  - principals:
      usernames: [alice]
      clientIds: ["line-1-*"]
      attributes: [{organization: plant-1}]   # from the client certificate
    brokerResources:
      - method: Connect
      - method: Publish
        topics: ["telemetry/{principal.clientId}/#"]
      - method: Subscribe
        topics: ["commands/{principal.username}/#"]
    stateStoreResources:
      - method: ReadWrite
        keyType: Pattern
        keys: ["app/{principal.username}/*", "shared-lock"]
      - method: Read
        keyType: Binary
        keys: ["AAEC/w=="]
  - principals:
      attributes: [{organization: plant-2, organizationalUnit: "line-*"}]
    brokerResources:
      - method: Connect
      - method: Subscribe
        topics: ["plants/{principal.attributes.organization}/+/status"]
    stateStoreResources:
      - method: Read
        keyType: String
        keys: ["config/{principal.attributes.commonName}"]
      - method: Write
        keyType: Pattern
        keys: ["devices/{principal.clientId}/*", "counter[0-9]"]
  - principals:
      usernames: [monitor]
    brokerResources:
      - method: Connect
      - method: Subscribe
        topics: ["#"]
`

func mustPolicy(t *testing.T, text string) *Policy {
	t.Helper()
	p, err := ParsePolicy([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPolicyGrants(t *testing.T) {
	pol := mustPolicy(t, vendorPolicy)
	alice := &Principal{ClientID: "alice-app", Username: "alice"}
	line1 := &Principal{ClientID: "line-1-7"}
	cert1 := &Principal{ClientID: "dev-9", Attributes: map[string][]string{"organization": {"plant-1"}}}
	cert2 := &Principal{ClientID: "dev-3", Attributes: map[string][]string{
		"organization": {"plant-2"}, "organizationalUnit": {"line-4"}, "commonName": {"dev-3.plant-2"},
	}}
	cert2OtherUnit := &Principal{ClientID: "dev-4", Attributes: map[string][]string{"organization": {"plant-2"}, "organizationalUnit": {"office"}}}
	stranger := &Principal{ClientID: "x", Username: "mallory"}
	wildcardID := &Principal{ClientID: "line-1-+", Username: ""}
	monitor := &Principal{ClientID: "m", Username: "monitor"}

	type check struct {
		p    *Principal
		what string // connect, pub, sub, read, write
		arg  string
		want bool
	}
	for _, c := range []check{
		{alice, "connect", "", true},
		{line1, "connect", "", true},
		{cert1, "connect", "", true},
		{cert2, "connect", "", true},
		{cert2OtherUnit, "connect", "", false},
		{stranger, "connect", "", false},

		// Publish with {principal.clientId}.
		{alice, "pub", "telemetry/alice-app/temp", true},
		{alice, "pub", "telemetry/alice-app", true},
		{alice, "pub", "telemetry/line-1-7/temp", false},
		{line1, "pub", "telemetry/line-1-7/a/b", true},
		{alice, "pub", "commands/alice/x", false}, // granted for subscribe only
		// A client id with a wildcard grants nothing through a topic.
		{wildcardID, "pub", "telemetry/line-1-+/x", false},
		{wildcardID, "pub", "telemetry/anyone/x", false},

		// Subscribe with {principal.username}: filters cannot widen it.
		{alice, "sub", "commands/alice/#", true},
		{alice, "sub", "commands/alice/+/x", true},
		{alice, "sub", "commands/alice", true},
		{alice, "sub", "commands/+/#", false},
		{alice, "sub", "commands/#", false},
		{alice, "sub", "#", false},
		{alice, "sub", "$share/g/commands/alice/x", true},
		{alice, "sub", "$share/g/commands/bob/x", false},
		{line1, "sub", "commands//#", false}, // no user name: no grant
		{cert2, "sub", "plants/plant-2/a/status", true},
		{cert2, "sub", "plants/plant-2/+/status", true},
		{cert2, "sub", "plants/plant-2/#", false},
		{cert2, "sub", "plants/plant-1/a/status", false},
		{monitor, "sub", "#", true},
		{monitor, "sub", "$SYS/#", false},

		// Pattern keys with {principal.username}, a literal pattern.
		{alice, "read", "app/alice/x", true},
		{alice, "write", "app/alice/x/y", true},
		{alice, "write", "app/bob/x", false},
		{alice, "read", "shared-lock", true},
		{alice, "write", "shared-lock", true},
		{alice, "write", "shared-lock2", false},
		{line1, "read", "app//x", false}, // no user name: no grant
		{line1, "write", "shared-lock", true},
		// Binary keys are exact bytes, read only here.
		{alice, "read", "\x00\x01\x02\xff", true},
		{alice, "write", "\x00\x01\x02\xff", false},
		{alice, "read", "\x00\x01\x02", false},
		// String keys with an attribute: exact.
		{cert2, "read", "config/dev-3.plant-2", true},
		{cert2, "read", "config/dev-3.plant-2x", false},
		{cert2, "write", "config/dev-3.plant-2", false},
		// Pattern keys with {principal.clientId}, quoted, and a class.
		{cert2, "write", "devices/dev-3/a", true},
		{cert2, "write", "devices/dev-4/a", false},
		{cert2, "write", "counter7", true},
		{cert2, "write", "counterx", false},
		{stranger, "read", "shared-lock", false},
	} {
		g := pol.Grants(c.p)
		var got bool
		switch c.what {
		case "connect":
			got = g.Connect()
		case "pub":
			got = g.Publish(c.arg)
		case "sub":
			got = g.Subscribe(c.arg)
		case "read":
			got = g.Read([]byte(c.arg))
		case "write":
			got = g.Write([]byte(c.arg))
		}
		if got != c.want {
			t.Errorf("%s (%s) %s %q = %v, want %v", c.p.ClientID, c.p.Username, c.what, c.arg, got, c.want)
		}
	}
}

func TestAKeyPatternValueMatchesOnlyItself(t *testing.T) {
	pol := mustPolicy(t, `
rules:
  - principals: {clientIds: ["*"]}
    stateStoreResources:
      - {method: ReadWrite, keyType: Pattern, keys: ["devices/{principal.clientId}/*"]}
`)
	g := pol.Grants(&Principal{ClientID: "*"})
	if !g.Write([]byte("devices/*/x")) || g.Write([]byte("devices/other/x")) {
		t.Fatal("a client id '*' substituted into a pattern widened it")
	}
}

func TestPolicyCheckDoesNotAllocate(t *testing.T) {
	g := mustPolicy(t, vendorPolicy).Grants(&Principal{ClientID: "alice-app", Username: "alice"})
	key, other := []byte("app/alice/x"), []byte("shared-lock")
	n := testing.AllocsPerRun(100, func() {
		g.Read(key)
		g.Write(other)
		g.Publish("telemetry/alice-app/t")
		g.Subscribe("commands/alice/+")
	})
	if n != 0 {
		t.Fatalf("%v allocations per check, want 0", n)
	}
}

func TestParsePolicyNamesTheLineAndTheReason(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"rules: [", "line 1:"},
		{"rulez: []", `line 1: unknown field "rulez"`},
		{"rules:\n  - principals: {usernames: [a]}\n    brokerResources:\n      - method: Publishh\n        topics: [a]\n", `line 4: method "Publishh": want Connect, Publish or Subscribe`},
		{"rules:\n  - principals: {usernames: [a]}\n    brokerResources:\n      - method: Publish\n", "line 4: Publish needs topics"},
		{"rules:\n  - principals: {usernames: [a]}\n    brokerResources:\n      - method: Subscribe\n        topics: [\"a/#/b\"]\n", `line 5: topic "a/#/b" is not a valid MQTT topic filter`},
		{"rules:\n  - principals: {usernames: [a]}\n    brokerResources:\n      - method: Publish\n        topics: [\"t/{principal.name}\"]\n", "line 5: unknown substitution {principal.name}"},
		{"rules:\n  - principals: {}\n", "line 2: principals lists no usernames"},
		{"rules:\n  - brokerResources: []\n", "line 2: a rule without principals"},
		{"rules:\n  - principals: {usernames: [a]}\n    stateStoreResources:\n      - method: Read\n        keyType: Regex\n        keys: [a]\n", `line 5: keyType "Regex": want Pattern, String or Binary`},
		{"rules:\n  - principals: {usernames: [a]}\n    stateStoreResources:\n      - method: Read\n        keyType: Binary\n        keys: [\"not base64!\"]\n", `line 6: Binary key "not base64!" is not base64`},
		{"rules:\n  - principals: {usernames: [a]}\n    stateStoreResources:\n      - method: Delete\n        keyType: String\n        keys: [a]\n", `line 4: method "Delete": want Read, Write or ReadWrite`},
		{"rules:\n  - principals: {usernames: [a]}\n    stateStoreResources:\n      - method: Read\n        keyType: String\n", "line 4: a state store resource needs keys"},
		{"rules:\n  - principals: {usernames: [a]}\n    brokerResources:\n      - method: Connect\n        topics: [x]\n", "line 5: Connect takes no topics"},
		{"", "line 1: the policy is empty"},
	} {
		_, err := ParsePolicy([]byte(c.text))
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want one containing %q", c.text, err, c.want)
		}
	}
	// An empty list of rules is a policy that denies everything.
	p := mustPolicy(t, "rules: []\n")
	if p.Grants(&Principal{ClientID: "a", Username: "a"}).Connect() {
		t.Fatal("an empty policy grants Connect")
	}
}
