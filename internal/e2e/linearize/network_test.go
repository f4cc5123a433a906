package linearize

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// network is the links between the nodes of a cluster: node a reaches
// node b through a proxy of its own, links[a][b], so that the traffic
// between any two nodes can be held, one way or both, or delayed.
type network struct {
	ids   []string
	links map[string]map[string]*proxy // by dialling node, then by dialled node
}

// newNetwork makes a proxy from every node to every other one's cluster
// address (by node id).
func newNetwork(cluster map[string]string) (*network, error) {
	n := &network{links: map[string]map[string]*proxy{}}
	for a := range cluster {
		n.ids = append(n.ids, a)
	}
	sort.Strings(n.ids)
	for _, a := range n.ids {
		n.links[a] = map[string]*proxy{}
		for b, addr := range cluster {
			if a == b {
				continue
			}
			p, err := newProxy(addr)
			if err != nil {
				n.close()
				return nil, err
			}
			n.links[a][b] = p
		}
	}
	return n, nil
}

// peers is the --peers list of node self: itself at its own cluster
// address, every other node at the proxy through which self reaches it.
func (n *network) peers(self string, cluster map[string]string) string {
	var list []string
	for _, id := range n.ids {
		addr := cluster[id]
		if id != self {
			addr = n.links[self][id].addr()
		}
		list = append(list, id+"="+addr)
	}
	return strings.Join(list, ",")
}

// holdFrom keeps back (or, with held false, lets through) everything that
// node a sends to node b: the requests on the connections a dials to b,
// and the responses on those b dials to a.
func (n *network) holdFrom(a, b string, held bool) {
	n.links[a][b].hold(forward, held)
	n.links[b][a].hold(back, held)
}

// isolate cuts node a off from every other node, both ways.
func (n *network) isolate(a string) string {
	for _, b := range n.others(a) {
		n.holdFrom(a, b, true)
		n.holdFrom(b, a, true)
	}
	return fmt.Sprintf("partition %s | %s", a, strings.Join(n.others(a), ","))
}

// silence keeps back everything node a sends; it still hears the others.
func (n *network) silence(a string) string {
	for _, b := range n.others(a) {
		n.holdFrom(a, b, true)
	}
	return fmt.Sprintf("one-way partition: %s → %s kept back", a, strings.Join(n.others(a), ","))
}

// slow delays every message to and from node a by d.
func (n *network) slow(a string, d time.Duration) string {
	for _, b := range n.others(a) {
		n.links[a][b].setDelay(d)
		n.links[b][a].setDelay(d)
	}
	return fmt.Sprintf("delay %v to and from %s", d, a)
}

// heal lets everything through; with reset, it also ends every
// connection, as peers that timed out would.
func (n *network) heal(reset bool) {
	for _, m := range n.links {
		for _, p := range m {
			p.heal()
			if reset {
				p.reset()
			}
		}
	}
}

func (n *network) others(a string) []string {
	var out []string
	for _, b := range n.ids {
		if b != a {
			out = append(out, b)
		}
	}
	return out
}

func (n *network) close() {
	for _, m := range n.links {
		for _, p := range m {
			p.close()
		}
	}
}
