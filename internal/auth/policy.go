package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Policy is an authorization policy: rules that grant principals the
// right to connect, publish, subscribe and read or write state store
// keys. Anything no rule grants is denied. The file's shape follows the
// vendor's BrokerAuthorization rules:
//
//	rules:
//	  - principals:
//	      usernames: [alice]
//	      clientIds: ["line-1-*"]
//	      attributes: [{organization: plant-1}]
//	    brokerResources:
//	      - method: Connect
//	      - method: Publish
//	        topics: ["telemetry/{principal.clientId}/#"]
//	      - method: Subscribe
//	        topics: ["commands/{principal.username}/#"]
//	    stateStoreResources:
//	      - method: ReadWrite
//	        keyType: Pattern
//	        keys: ["app/{principal.username}/*", "shared-lock"]
//	      - method: Read
//	        keyType: Binary
//	        keys: ["AAEC/w=="]
//
// A Policy is immutable once parsed.
type Policy struct {
	rules []rule
}

type rule struct {
	usernames  []string            // star patterns
	clientIDs  []string            // star patterns
	attributes []map[string]string // each all of name: star pattern
	connect    bool
	publish    []template // topic filters
	subscribe  []template
	keys       []keyGrant
}

// keyGrant is one state store resource's keys.
type keyGrant struct {
	read, write bool
	kind        keyKind
	keys        []template // Binary: the decoded bytes, no substitutions
}

type keyKind int

const (
	keyPattern keyKind = iota
	keyString
	keyBinary
)

// template is a text with {principal.…} substitutions, split into
// literal parts and the names of the values between them.
type template struct {
	parts []string // literal, name, literal, name, ..., literal
}

var placeholder = regexp.MustCompile(`\{principal\.(clientId|username|attributes\.[^{}]+)\}|\{[^{}]*\}`)

func parseTemplate(s string) (template, error) {
	var t template
	last := 0
	for _, m := range placeholder.FindAllStringSubmatchIndex(s, -1) {
		if m[2] < 0 {
			return t, fmt.Errorf("unknown substitution %s: want {principal.clientId}, {principal.username} or {principal.attributes.NAME}", s[m[0]:m[1]])
		}
		t.parts = append(t.parts, s[last:m[0]], s[m[2]:m[3]])
		last = m[1]
	}
	t.parts = append(t.parts, s[last:])
	return t, nil
}

// expand fills in p's values, each passed through quote. It reports false
// when a value is missing, empty, or refused by quote: the template then
// grants nothing to p.
func (t template) expand(p *Principal, quote func(string) (string, bool)) (string, bool) {
	if len(t.parts) == 1 {
		return t.parts[0], true
	}
	var b strings.Builder
	for i, part := range t.parts {
		if i%2 == 0 {
			b.WriteString(part)
			continue
		}
		var v string
		switch {
		case part == "clientId":
			v = p.ClientID
		case part == "username":
			v = p.Username
		default:
			v, _ = p.Attribute(strings.TrimPrefix(part, "attributes."))
		}
		if v == "" {
			return "", false
		}
		q, ok := quote(v)
		if !ok {
			return "", false
		}
		b.WriteString(q)
	}
	return b.String(), true
}

// shape is the template with every value as "x": the shape a filter has
// for any principal (values that would change it grant nothing).
func (t template) shape() string {
	var b strings.Builder
	for i, part := range t.parts {
		if i%2 == 0 {
			b.WriteString(part)
		} else {
			b.WriteByte('x')
		}
	}
	return b.String()
}

// topicValue admits a value into a topic filter only if it stays one
// literal level: a client id such as "+" or "a/#" would otherwise widen
// the grant to other clients' topics.
func topicValue(v string) (string, bool) {
	return v, !strings.ContainsAny(v, "+#/\x00") && v[0] != '$'
}

func literalValue(v string) (string, bool) { return v, true }

func globValue(v string) (string, bool) { return globQuote(v), true }

// ParsePolicy reads a policy. An error is a *FileError with the line and
// the reason.
func ParsePolicy(data []byte) (*Policy, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(err)
	}
	if len(doc.Content) == 0 {
		return nil, &FileError{Line: 1, Reason: "the policy is empty: it needs rules (an empty list denies everything)"}
	}
	root := doc.Content[0]
	if err := keysOf(root, "rules"); err != nil {
		return nil, err
	}
	rules := field(root, "rules")
	if rules == nil {
		return nil, &FileError{Line: root.Line, Reason: "no rules: the policy needs a list of rules (an empty list denies everything)"}
	}
	if rules.Kind != yaml.SequenceNode {
		return nil, &FileError{Line: rules.Line, Reason: "rules must be a list"}
	}
	p := &Policy{}
	for _, rn := range rules.Content {
		r, err := parseRule(rn)
		if err != nil {
			return nil, err
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

// LoadPolicy reads the policy file at path.
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	p, err := ParsePolicy(data)
	var fe *FileError
	if errors.As(err, &fe) {
		fe.File = path
	}
	return p, err
}

func parseRule(n *yaml.Node) (rule, error) {
	var r rule
	if n.Kind != yaml.MappingNode {
		return r, &FileError{Line: n.Line, Reason: "a rule must be a mapping with principals, brokerResources and stateStoreResources"}
	}
	if err := keysOf(n, "principals", "brokerResources", "stateStoreResources"); err != nil {
		return r, err
	}
	pn := field(n, "principals")
	if pn == nil {
		return r, &FileError{Line: n.Line, Reason: "a rule without principals applies to nobody"}
	}
	if err := keysOf(pn, "usernames", "clientIds", "attributes"); err != nil {
		return r, err
	}
	var err error
	if r.usernames, err = stringList(field(pn, "usernames")); err != nil {
		return r, err
	}
	if r.clientIDs, err = stringList(field(pn, "clientIds")); err != nil {
		return r, err
	}
	if an := field(pn, "attributes"); an != nil {
		if an.Kind != yaml.SequenceNode {
			return r, &FileError{Line: an.Line, Reason: "attributes must be a list of mappings of attribute names to values"}
		}
		for _, set := range an.Content {
			m := map[string]string{}
			if set.Kind != yaml.MappingNode || len(set.Content) == 0 {
				return r, &FileError{Line: set.Line, Reason: "an attribute set must be a mapping of attribute names to values, such as {organization: plant-1}"}
			}
			if err := set.Decode(&m); err != nil {
				return r, yamlError(err)
			}
			r.attributes = append(r.attributes, m)
		}
	}
	if len(r.usernames)+len(r.clientIDs)+len(r.attributes) == 0 {
		return r, &FileError{Line: pn.Line, Reason: "principals lists no usernames, clientIds or attributes: the rule applies to nobody"}
	}
	if bn := field(n, "brokerResources"); bn != nil {
		if err := r.parseBrokerResources(bn); err != nil {
			return r, err
		}
	}
	if sn := field(n, "stateStoreResources"); sn != nil {
		if err := r.parseStateStoreResources(sn); err != nil {
			return r, err
		}
	}
	return r, nil
}

func (r *rule) parseBrokerResources(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return &FileError{Line: n.Line, Reason: "brokerResources must be a list"}
	}
	for _, res := range n.Content {
		if err := keysOf(res, "method", "topics"); err != nil {
			return err
		}
		method, line, err := scalar(res, "method")
		if err != nil {
			return err
		}
		topics := field(res, "topics")
		switch strings.ToLower(method) {
		case "connect":
			if topics != nil {
				return &FileError{Line: topics.Line, Reason: "Connect takes no topics"}
			}
			r.connect = true
			continue
		case "publish", "subscribe":
		default:
			return &FileError{Line: line, Reason: fmt.Sprintf("method %q: want Connect, Publish or Subscribe", method)}
		}
		if topics == nil {
			return &FileError{Line: res.Line, Reason: method + " needs topics"}
		}
		list, err := stringList(topics)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return &FileError{Line: topics.Line, Reason: method + " needs topics"}
		}
		for i, s := range list {
			t, err := parseTemplate(s)
			if err != nil {
				return &FileError{Line: topics.Content[i].Line, Reason: err.Error()}
			}
			if !validFilter(t.shape()) {
				return &FileError{Line: topics.Content[i].Line, Reason: fmt.Sprintf("topic %q is not a valid MQTT topic filter ('+' and '#' fill a level, '#' only last)", s)}
			}
			if strings.EqualFold(method, "publish") {
				r.publish = append(r.publish, t)
			} else {
				r.subscribe = append(r.subscribe, t)
			}
		}
	}
	return nil
}

func (r *rule) parseStateStoreResources(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return &FileError{Line: n.Line, Reason: "stateStoreResources must be a list"}
	}
	for _, res := range n.Content {
		if err := keysOf(res, "method", "keyType", "keys"); err != nil {
			return err
		}
		var g keyGrant
		method, line, err := scalar(res, "method")
		if err != nil {
			return err
		}
		switch strings.ToLower(method) {
		case "read":
			g.read = true
		case "write":
			g.write = true
		case "readwrite":
			g.read, g.write = true, true
		default:
			return &FileError{Line: line, Reason: fmt.Sprintf("method %q: want Read, Write or ReadWrite", method)}
		}
		kind, line, err := scalar(res, "keyType")
		if err != nil {
			return err
		}
		switch strings.ToLower(kind) {
		case "pattern":
			g.kind = keyPattern
		case "string":
			g.kind = keyString
		case "binary":
			g.kind = keyBinary
		default:
			return &FileError{Line: line, Reason: fmt.Sprintf("keyType %q: want Pattern, String or Binary", kind)}
		}
		kn := field(res, "keys")
		if kn == nil {
			return &FileError{Line: res.Line, Reason: "a state store resource needs keys"}
		}
		keys, err := stringList(kn)
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			return &FileError{Line: kn.Line, Reason: "a state store resource needs keys"}
		}
		for i, k := range keys {
			kline := kn.Content[i].Line
			if g.kind == keyBinary {
				b, err := base64.StdEncoding.DecodeString(k)
				if err != nil {
					if b, err = base64.RawStdEncoding.DecodeString(k); err != nil {
						return &FileError{Line: kline, Reason: fmt.Sprintf("Binary key %q is not base64", k)}
					}
				}
				if len(b) == 0 {
					return &FileError{Line: kline, Reason: "a Binary key is empty"}
				}
				g.keys = append(g.keys, template{parts: []string{string(b)}})
				continue
			}
			if k == "" {
				return &FileError{Line: kline, Reason: "a key is empty"}
			}
			t, err := parseTemplate(k)
			if err != nil {
				return &FileError{Line: kline, Reason: err.Error()}
			}
			g.keys = append(g.keys, t)
		}
		r.keys = append(r.keys, g)
	}
	return nil
}

// keysOf refuses a mapping key that is not one of allowed.
func keysOf(n *yaml.Node, allowed ...string) error {
	if n.Kind != yaml.MappingNode {
		return &FileError{Line: n.Line, Reason: fmt.Sprintf("want a mapping with %s", strings.Join(allowed, ", "))}
	}
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		found := false
		for _, a := range allowed {
			found = found || k.Value == a
		}
		if !found {
			return &FileError{Line: k.Line, Reason: fmt.Sprintf("unknown field %q: want %s", k.Value, strings.Join(allowed, ", "))}
		}
	}
	return nil
}

// field returns the value of key in mapping n, or nil.
func field(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// scalar returns the text of key in mapping n, which it requires.
func scalar(n *yaml.Node, key string) (string, int, error) {
	v := field(n, key)
	if v == nil {
		return "", n.Line, &FileError{Line: n.Line, Reason: key + " is missing"}
	}
	if v.Kind != yaml.ScalarNode {
		return "", v.Line, &FileError{Line: v.Line, Reason: key + " must be a single value"}
	}
	return v.Value, v.Line, nil
}

// stringList returns the strings of a list node (nil for none).
func stringList(n *yaml.Node) ([]string, error) {
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, &FileError{Line: n.Line, Reason: "want a list, such as [a, b]"}
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode {
			return nil, &FileError{Line: c.Line, Reason: "want a text value"}
		}
		out = append(out, c.Value)
	}
	return out, nil
}

var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// yamlError turns the YAML library's error into a FileError.
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &FileError{Line: n, Reason: m[2]}
	}
	return &FileError{Line: 1, Reason: msg}
}

// Grants compiles what the policy grants p. Compile once per connection
// (and again when the policy changes): the Grants answer without
// allocating.
func (pol *Policy) Grants(p *Principal) *Grants {
	g := &Grants{
		read:  keySet{exact: map[string]struct{}{}},
		write: keySet{exact: map[string]struct{}{}},
	}
	for i := range pol.rules {
		r := &pol.rules[i]
		if !r.applies(p) {
			continue
		}
		g.connect = g.connect || r.connect
		for _, t := range r.publish {
			if f, ok := t.expand(p, topicValue); ok {
				g.publish = append(g.publish, f)
			}
		}
		for _, t := range r.subscribe {
			if f, ok := t.expand(p, topicValue); ok {
				g.subscribe = append(g.subscribe, f)
			}
		}
		for _, kg := range r.keys {
			for _, t := range kg.keys {
				if kg.read {
					g.read.add(t, kg.kind, p)
				}
				if kg.write {
					g.write.add(t, kg.kind, p)
				}
			}
		}
	}
	return g
}

// applies reports whether any of r's usernames, client ids or attribute
// sets matches p.
func (r *rule) applies(p *Principal) bool {
	if p.Username != "" {
		for _, u := range r.usernames {
			if starMatches(u, p.Username) {
				return true
			}
		}
	}
	for _, c := range r.clientIDs {
		if starMatches(c, p.ClientID) {
			return true
		}
	}
	for _, set := range r.attributes {
		if p.hasAll(set) {
			return true
		}
	}
	return false
}

// hasAll reports whether p has, for each name of set, a value that
// matches its pattern.
func (p *Principal) hasAll(set map[string]string) bool {
	for name, pattern := range set {
		found := false
		for _, v := range p.Attributes[name] {
			if starMatches(pattern, v) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Grants is what a policy grants one principal.
type Grants struct {
	connect            bool
	publish, subscribe []string // topic filters
	read, write        keySet
}

// keySet is a set of keys: exact keys in a map, patterns "PREFIX*" as
// prefixes, other patterns in a list.
type keySet struct {
	exact    map[string]struct{}
	prefixes []string
	globs    []string
	all      bool // a pattern "*"
}

func (s *keySet) add(t template, kind keyKind, p *Principal) {
	switch kind {
	case keyBinary:
		s.exact[t.parts[0]] = struct{}{}
	case keyString:
		if k, ok := t.expand(p, literalValue); ok {
			s.exact[k] = struct{}{}
		}
	case keyPattern:
		k, ok := t.expand(p, globValue)
		switch {
		case !ok:
		case k == "*":
			s.all = true
		case globLiteral(k):
			s.exact[k] = struct{}{}
		case k[len(k)-1] == '*' && globLiteral(k[:len(k)-1]):
			s.prefixes = append(s.prefixes, k[:len(k)-1])
		default:
			s.globs = append(s.globs, k)
		}
	}
}

func (s *keySet) has(key []byte) bool {
	if s.all {
		return true
	}
	if _, ok := s.exact[string(key)]; ok {
		return true
	}
	for _, p := range s.prefixes {
		if len(key) >= len(p) && string(key[:len(p)]) == p {
			return true
		}
	}
	for _, g := range s.globs {
		if globMatches(g, key) {
			return true
		}
	}
	return false
}

// Connect reports whether the principal may connect.
func (g *Grants) Connect() bool { return g.connect }

// Publish reports whether the principal may publish on topic.
func (g *Grants) Publish(topic string) bool {
	for _, f := range g.publish {
		if topicMatches(f, topic) {
			return true
		}
	}
	return false
}

// Subscribe reports whether the principal may subscribe to filter (a
// topic is a filter too): some granted filter must cover every topic it
// matches. A shared subscription ($share/GROUP/FILTER) is judged by its
// FILTER.
func (g *Grants) Subscribe(filter string) bool {
	filter = SharedFilter(filter)
	for _, f := range g.subscribe {
		if filterCovers(f, filter) {
			return true
		}
	}
	return false
}

// Read reports whether the principal may read key: GET and KEYNOTIFY.
func (g *Grants) Read(key []byte) bool { return g.read.has(key) }

// Write reports whether the principal may write key: SET, DEL and VDEL.
func (g *Grants) Write(key []byte) bool { return g.write.has(key) }

// SharedFilter returns the filter of a shared subscription
// ($share/GROUP/FILTER), or filter itself.
func SharedFilter(filter string) string {
	if rest, ok := strings.CutPrefix(filter, "$share/"); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return rest[i+1:]
		}
	}
	return filter
}
