package pubsub

import (
	"slices"
	"strings"
)

// SharePrefix starts a shared subscription's filter: $share/{group}/{filter}.
// MQTT compares it without regard to case, as the broker core does.
const SharePrefix = "$share/"

// SplitShared returns the group and the filter of a shared subscription's
// filter, and ok false for a filter that is not one.
func SplitShared(filter string) (group, topicFilter string, ok bool) {
	if len(filter) <= len(SharePrefix) || !strings.EqualFold(filter[:len(SharePrefix)], SharePrefix) {
		return "", "", false
	}
	rest := filter[len(SharePrefix):]
	i := strings.IndexByte(rest, '/')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// Matches is what Match found for one topic. Its slices are reused by the
// next Match with the same Matches; the node lists they hold are shared
// with the index and must not be changed.
type Matches struct {
	// Nodes have a plain (not shared) route whose filter matches, each
	// once.
	Nodes []string
	// Groups are the shared subscriptions whose filter matches, each with
	// the nodes that have members, in order.
	Groups []Group
}

// Group is one shared subscription ($share/{group}/{filter}) and the nodes
// with members of it.
type Group struct {
	Key   string // the whole filter, as the route names it
	Nodes []string
}

func (m *Matches) reset() {
	clear(m.Nodes)
	m.Nodes = m.Nodes[:0]
	clear(m.Groups)
	m.Groups = m.Groups[:0]
}

func (m *Matches) addNodes(nodes []string) {
	for _, n := range nodes {
		if !slices.Contains(m.Nodes, n) {
			m.Nodes = append(m.Nodes, n)
		}
	}
}

// trie indexes route filters by their levels, for Match. A level's
// node lists are replaced, never changed in place, so that a Matches
// holding one stays valid.
type trie struct {
	root trieNode
}

type trieNode struct {
	children map[string]*trieNode
	plain    []string            // the nodes with a plain route ending here, sorted
	shared   map[string][]string // shared key → the nodes with members, sorted
}

func (n *trieNode) empty() bool {
	return len(n.children) == 0 && len(n.plain) == 0 && len(n.shared) == 0
}

// add records that node has a route for filter.
func (t *trie) add(node, filter string) {
	key := filter
	shared := false
	if _, f, ok := SplitShared(filter); ok {
		filter, shared = f, true
	}
	n := &t.root
	for level := range strings.SplitSeq(filter, "/") {
		c := n.children[level]
		if c == nil {
			if n.children == nil {
				n.children = map[string]*trieNode{}
			}
			c = &trieNode{}
			n.children[level] = c
		}
		n = c
	}
	if shared {
		if n.shared == nil {
			n.shared = map[string][]string{}
		}
		n.shared[key] = insertSorted(n.shared[key], node)
		return
	}
	n.plain = insertSorted(n.plain, node)
}

// remove forgets node's route for filter.
func (t *trie) remove(node, filter string) {
	key := filter
	shared := false
	if _, f, ok := SplitShared(filter); ok {
		filter, shared = f, true
	}
	path := []*trieNode{&t.root}
	levels := strings.Split(filter, "/")
	n := &t.root
	for _, level := range levels {
		n = n.children[level]
		if n == nil {
			return
		}
		path = append(path, n)
	}
	if shared {
		if nodes := deleteSorted(n.shared[key], node); len(nodes) > 0 {
			n.shared[key] = nodes
		} else {
			delete(n.shared, key)
		}
	} else {
		n.plain = deleteSorted(n.plain, node)
	}
	// Remove the levels left empty, from the end.
	for i := len(levels) - 1; i >= 0 && path[i+1].empty(); i-- {
		delete(path[i].children, levels[i])
	}
}

// insertSorted returns a new slice: nodes with node added.
func insertSorted(nodes []string, node string) []string {
	i, found := slices.BinarySearch(nodes, node)
	if found {
		return nodes
	}
	out := make([]string, 0, len(nodes)+1)
	out = append(out, nodes[:i]...)
	out = append(out, node)
	return append(out, nodes[i:]...)
}

// deleteSorted returns a new slice: nodes without node.
func deleteSorted(nodes []string, node string) []string {
	i, found := slices.BinarySearch(nodes, node)
	if !found {
		return nodes
	}
	if len(nodes) == 1 {
		return nil
	}
	out := make([]string, 0, len(nodes)-1)
	out = append(out, nodes[:i]...)
	return append(out, nodes[i+1:]...)
}

// match adds to m the routes whose filter matches topic. A topic that
// starts with '$' is not matched by a filter that starts with a wildcard
// [MQTT-4.7.2-1].
func (t *trie) match(topic string, m *Matches) {
	t.root.match(topic, 0, topic != "" && topic[0] == '$', m)
}

func (n *trieNode) match(rest string, depth int, dollar bool, m *Matches) {
	if len(n.children) == 0 {
		return
	}
	level, next, last := rest, "", true
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		level, next, last = rest[:i], rest[i+1:], false
	}
	wild := !(depth == 0 && dollar)
	if c := n.children[level]; c != nil {
		c.visit(next, last, depth+1, dollar, m)
	}
	if wild {
		if c := n.children["+"]; c != nil {
			c.visit(next, last, depth+1, dollar, m)
		}
		if c := n.children["#"]; c != nil {
			c.collect(m)
		}
	}
}

// visit goes on with the levels after the one n matched: the end of the
// topic collects n's routes and those of n's "#" child (a/# matches a).
func (n *trieNode) visit(next string, last bool, depth int, dollar bool, m *Matches) {
	if last {
		n.collect(m)
		if c := n.children["#"]; c != nil {
			c.collect(m)
		}
		return
	}
	n.match(next, depth, dollar, m)
}

func (n *trieNode) collect(m *Matches) {
	m.addNodes(n.plain)
	for key, nodes := range n.shared {
		m.Groups = append(m.Groups, Group{Key: key, Nodes: nodes})
	}
}
