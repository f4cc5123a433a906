// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2023 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dssio/dss/internal/mqtt/packets"
)

var (
	SharePrefix = "$SHARE" // the prefix indicating a share topic
	SysPrefix   = "$SYS"   // the prefix indicating a system info topic
)

// TopicAliases contains inbound and outbound topic alias registrations.
type TopicAliases struct {
	Inbound  *InboundTopicAliases
	Outbound *OutboundTopicAliases
}

// NewTopicAliases returns an instance of TopicAliases.
func NewTopicAliases(topicAliasMaximum uint16) TopicAliases {
	return TopicAliases{
		Inbound:  NewInboundTopicAliases(topicAliasMaximum),
		Outbound: NewOutboundTopicAliases(topicAliasMaximum),
	}
}

// NewInboundTopicAliases returns a pointer to InboundTopicAliases.
func NewInboundTopicAliases(topicAliasMaximum uint16) *InboundTopicAliases {
	// dss: the map is made at the first alias: most clients set none,
	// and an idle connection paid for two empty maps.
	return &InboundTopicAliases{maximum: topicAliasMaximum}
}

// InboundTopicAliases contains a map of topic aliases received from the client.
type InboundTopicAliases struct {
	internal map[uint16]string
	sync.RWMutex
	maximum uint16
}

// Set resolves the alias id of a PUBLISH with the given topic: a topic
// (re)sets the alias to it; an empty topic takes the topic the alias was
// set to. ok is false for an empty topic and an alias this connection
// never set.
//
// dss: an alias never set resolved to the empty topic, which was then
// published (and acknowledged) where 3.3.4 makes it a Protocol Error.
func (a *InboundTopicAliases) Set(id uint16, topic string) (resolved string, ok bool) {
	a.Lock()
	defer a.Unlock()

	if a.maximum == 0 {
		return topic, topic != "" // ?
	}

	if topic == "" {
		existing, ok := a.internal[id]
		return existing, ok
	}

	if a.internal == nil {
		a.internal = map[uint16]string{}
	}
	a.internal[id] = topic
	return topic, true
}

// OutboundTopicAliases contains a map of topic aliases sent from the broker to the client.
type OutboundTopicAliases struct {
	internal map[string]uint16
	sync.RWMutex
	cursor  uint32
	maximum uint16
}

// NewOutboundTopicAliases returns a pointer to OutboundTopicAliases.
func NewOutboundTopicAliases(topicAliasMaximum uint16) *OutboundTopicAliases {
	return &OutboundTopicAliases{maximum: topicAliasMaximum} // dss: its map made at the first alias
}

// Set sets a new topic alias for a topic and returns the alias value, and a boolean
// indicating if the alias already existed.
func (a *OutboundTopicAliases) Set(topic string) (uint16, bool) {
	a.Lock()
	defer a.Unlock()

	if a.maximum == 0 {
		return 0, false
	}

	if i, ok := a.internal[topic]; ok {
		return i, true
	}

	i := atomic.LoadUint32(&a.cursor)
	if i+1 > uint32(a.maximum) {
		// if i+1 > math.MaxUint16 {
		return 0, false
	}

	// dss: the topic may point into memory its publisher recycles (see
	// Packet.Owner); the table keeps a copy.
	if a.internal == nil {
		a.internal = map[string]uint16{}
	}
	a.internal[strings.Clone(topic)] = uint16(i) + 1
	atomic.StoreUint32(&a.cursor, i+1)
	return uint16(i) + 1, false
}

// SharedSubscriptions contains a map of subscriptions to a shared filter,
// keyed on share group then client id.
type SharedSubscriptions struct {
	internal map[string]map[string]packets.Subscription
	sync.RWMutex
}

// Add creates a new shared subscription for a group and client id pair.
func (s *SharedSubscriptions) Add(group, id string, val packets.Subscription) {
	s.Lock()
	defer s.Unlock()
	if s.internal == nil {
		s.internal = map[string]map[string]packets.Subscription{}
	}
	if _, ok := s.internal[group]; !ok {
		s.internal[group] = map[string]packets.Subscription{}
	}
	s.internal[group][id] = val
}

// Delete deletes a client id from a shared subscription group.
func (s *SharedSubscriptions) Delete(group, id string) {
	s.Lock()
	defer s.Unlock()
	delete(s.internal[group], id)
	if len(s.internal[group]) == 0 {
		delete(s.internal, group)
	}
}

// Get returns the subscription properties for a client id in a share group, if one exists.
func (s *SharedSubscriptions) Get(group, id string) (val packets.Subscription, ok bool) {
	s.RLock()
	defer s.RUnlock()
	if _, ok := s.internal[group]; !ok {
		return val, ok
	}

	val, ok = s.internal[group][id]
	return val, ok
}

// GroupLen returns the number of groups subscribed to the filter.
func (s *SharedSubscriptions) GroupLen() int {
	s.RLock()
	defer s.RUnlock()
	val := len(s.internal)
	return val
}

// Len returns the total number of shared subscriptions to a filter across all groups.
func (s *SharedSubscriptions) Len() int {
	s.RLock()
	defer s.RUnlock()
	n := 0
	for _, group := range s.internal {
		n += len(group)
	}
	return n
}

// GetAll returns all shared subscription groups and their subscriptions.
func (s *SharedSubscriptions) GetAll() map[string]map[string]packets.Subscription {
	s.RLock()
	defer s.RUnlock()
	m := map[string]map[string]packets.Subscription{}
	for group, subs := range s.internal {
		if _, ok := m[group]; !ok {
			m[group] = map[string]packets.Subscription{}
		}

		for id, sub := range subs {
			m[group][id] = sub
		}
	}
	return m
}

// InlineSubFn is the signature for a callback function which will be called
// when an inline client receives a message on a topic it is subscribed to.
// The sub argument contains information about the subscription that was matched for any filters.
type InlineSubFn func(cl *Client, sub packets.Subscription, pk packets.Packet)

// InlineSubscriptions represents a map of internal subscriptions keyed on client.
type InlineSubscriptions struct {
	internal map[int]InlineSubscription
	sync.RWMutex
}

// Add adds a new internal subscription for a client id.
func (s *InlineSubscriptions) Add(val InlineSubscription) {
	s.Lock()
	defer s.Unlock()
	if s.internal == nil {
		s.internal = map[int]InlineSubscription{}
	}
	s.internal[val.Identifier] = val
}

// GetAll returns all internal subscriptions.
func (s *InlineSubscriptions) GetAll() map[int]InlineSubscription {
	s.RLock()
	defer s.RUnlock()
	m := map[int]InlineSubscription{}
	for k, v := range s.internal {
		m[k] = v
	}
	return m
}

// Get returns an internal subscription for a client id.
func (s *InlineSubscriptions) Get(id int) (val InlineSubscription, ok bool) {
	s.RLock()
	defer s.RUnlock()
	val, ok = s.internal[id]
	return val, ok
}

// Len returns the number of internal subscriptions.
func (s *InlineSubscriptions) Len() int {
	s.RLock()
	defer s.RUnlock()
	val := len(s.internal)
	return val
}

// Delete removes an internal subscription by the client id.
func (s *InlineSubscriptions) Delete(id int) {
	s.Lock()
	defer s.Unlock()
	delete(s.internal, id)
}

// Subscriptions is a map of subscriptions keyed on client.
//
// dss: a set of one subscription, the usual one (a filter's only
// subscriber, a device's one filter), is held in one small entry (one)
// rather than a map, whose first group holds eight subscriptions: an
// idle connection with one subscription paid about 1.5 KiB for the two
// maps, its own and its filter's. The map is made for a second entry,
// and holds them all from then on.
type Subscriptions struct {
	internal map[string]packets.Subscription
	one      *subscriptionEntry // the only subscription, while internal is nil
	sync.RWMutex
}

// subscriptionEntry is a set's only subscription, and its key.
type subscriptionEntry struct {
	id  string
	sub packets.Subscription
}

// NewSubscriptions returns a new instance of Subscriptions.
func NewSubscriptions() *Subscriptions {
	return new(Subscriptions)
}

// Add adds a new subscription for a client. ID can be a filter in the
// case this map is client state, or a client id if particle state.
func (s *Subscriptions) Add(id string, val packets.Subscription) {
	s.Lock()
	defer s.Unlock()
	switch {
	case s.internal != nil:
		s.internal[id] = val
	case s.one == nil:
		s.one = &subscriptionEntry{id: id, sub: val}
	case s.one.id == id:
		s.one.sub = val // under the lock that Get takes to read it
	default:
		s.internal = map[string]packets.Subscription{s.one.id: s.one.sub, id: val}
		s.one = nil
	}
}

// GetAll returns all subscriptions.
// each calls f with every subscription, under the read lock: f must not
// change s.
func (s *Subscriptions) each(f func(client string, sub packets.Subscription)) {
	s.RLock()
	defer s.RUnlock()
	if s.one != nil {
		f(s.one.id, s.one.sub)
	}
	for k, v := range s.internal {
		f(k, v)
	}
}

func (s *Subscriptions) GetAll() map[string]packets.Subscription {
	s.RLock()
	defer s.RUnlock()
	m := map[string]packets.Subscription{}
	if s.one != nil {
		m[s.one.id] = s.one.sub
	}
	for k, v := range s.internal {
		m[k] = v
	}
	return m
}

// Get returns a subscriptions for a specific client or filter id.
func (s *Subscriptions) Get(id string) (val packets.Subscription, ok bool) {
	s.RLock()
	defer s.RUnlock()
	if s.one != nil {
		if s.one.id == id {
			return s.one.sub, true
		}
		return val, false
	}
	val, ok = s.internal[id]
	return val, ok
}

// Len returns the number of subscriptions.
func (s *Subscriptions) Len() int {
	s.RLock()
	defer s.RUnlock()
	if s.one != nil {
		return 1
	}
	return len(s.internal)
}

// Delete removes a subscription by client or filter id.
func (s *Subscriptions) Delete(id string) {
	s.Lock()
	defer s.Unlock()
	if s.one != nil {
		if s.one.id == id {
			s.one = nil
		}
		return
	}
	delete(s.internal, id)
}

// ClientSubscriptions is a map of aggregated subscriptions for a client.
type ClientSubscriptions map[string]packets.Subscription

type InlineSubscription struct {
	packets.Subscription
	Handler InlineSubFn
}

// Subscribers contains the shared and non-shared subscribers matching a topic.
type Subscribers struct {
	Shared              map[string]map[string]packets.Subscription
	SharedSelected      map[string]packets.Subscription
	Subscriptions       map[string]packets.Subscription
	InlineSubscriptions map[int]InlineSubscription
}

// SelectShared returns one subscriber for each shared subscription group.
func (s *Subscribers) SelectShared() {
	s.SharedSelected = map[string]packets.Subscription{}
	for _, subs := range s.Shared {
		for client, sub := range subs {
			cls, ok := s.SharedSelected[client]
			if !ok {
				cls = sub
			}

			s.SharedSelected[client] = cls.Merge(sub)
			break
		}
	}
}

// MergeSharedSelected merges the selected subscribers for a shared subscription group
// and the non-shared subscribers, to ensure that no subscriber gets multiple messages
// due to have both types of subscription matching the same filter.
func (s *Subscribers) MergeSharedSelected() {
	for client, sub := range s.SharedSelected {
		if s.Subscriptions == nil {
			s.Subscriptions = map[string]packets.Subscription{}
		}
		cls, ok := s.Subscriptions[client]
		if !ok {
			cls = sub
		}

		s.Subscriptions[client] = cls.Merge(sub)
	}
}

// TopicsIndex is a prefix/trie tree containing topic subscribers and retained messages.
type TopicsIndex struct {
	Retained *packets.Packets
	root     *particle // a leaf containing a message and more leaves.
	remote   Remote    // dss: told of the filters with subscriptions here (remote.go); nil: none
	// retained accounts for the retained messages (dss, see
	// retained.go); guarded by root's lock.
	retained retainedAccount
	// routes holds who receives the topics asked for (dss, see
	// routes.go).
	routes routeCache
}

// NewTopicsIndex returns a pointer to a new instance of Index.
func NewTopicsIndex() *TopicsIndex {
	return &TopicsIndex{
		Retained: packets.NewPackets(),
		root:     new(particle),
	}
}

// InlineSubscribe adds a new internal subscription for a topic filter, returning
// true if the subscription was new.
func (x *TopicsIndex) InlineSubscribe(subscription InlineSubscription) bool {
	x.root.Lock()
	defer x.root.Unlock()

	var existed bool
	n := x.set(subscription.Filter, 0)
	_, existed = n.inlineSubscriptions.Get(subscription.Identifier)
	n.inlineSubscriptions.Add(subscription)
	x.subscriptionsChanged()

	return !existed
}

// InlineUnsubscribe removes an internal subscription for a topic filter associated with a specific client,
// returning true if the subscription existed.
func (x *TopicsIndex) InlineUnsubscribe(id int, filter string) bool {
	x.root.Lock()
	defer x.root.Unlock()

	particle := x.seek(filter, 0)
	if particle == nil {
		return false
	}

	particle.inlineSubscriptions.Delete(id)
	x.subscriptionsChanged()

	if particle.inlineSubscriptions.Len() == 0 {
		x.trim(particle)
	}
	return true
}

// Subscribe adds a new subscription for a client to a topic filter, returning
// true if the subscription was new.
func (x *TopicsIndex) Subscribe(client string, subscription packets.Subscription) bool {
	x.root.Lock()
	defer x.root.Unlock()

	var existed bool
	prefix, _ := isolateParticle(subscription.Filter, 0)
	if strings.EqualFold(prefix, SharePrefix) {
		group, _ := isolateParticle(subscription.Filter, 1)
		n := x.set(subscription.Filter, 2)
		_, existed = n.shared.Get(group, client)
		n.shared.Add(group, client, subscription)
		if !existed {
			x.filterChanged(subscription.Filter, n.shared.groupLen(group), true) // dss
		}
	} else {
		n := x.set(subscription.Filter, 0)
		_, existed = n.subscriptions.Get(client)
		n.subscriptions.Add(client, subscription)
		if !existed {
			x.filterChanged(subscription.Filter, n.subscriptions.Len(), true) // dss
		}
	}
	x.subscriptionsChanged() // dss: a subscription renewed may differ too

	return !existed
}

// Unsubscribe removes a subscription filter for a client, returning true if the
// subscription existed.
func (x *TopicsIndex) Unsubscribe(filter, client string) bool {
	x.root.Lock()
	defer x.root.Unlock()

	var d int
	prefix, _ := isolateParticle(filter, 0)
	shareSub := strings.EqualFold(prefix, SharePrefix)
	if shareSub {
		d = 2
	}

	particle := x.seek(filter, d)
	if particle == nil {
		return false
	}

	if shareSub {
		group, _ := isolateParticle(filter, 1)
		_, existed := particle.shared.Get(group, client)
		particle.shared.Delete(group, client)
		if existed {
			x.filterChanged(filter, particle.shared.groupLen(group), false) // dss
		}
	} else {
		_, existed := particle.subscriptions.Get(client)
		particle.subscriptions.Delete(client)
		if existed {
			x.filterChanged(filter, particle.subscriptions.Len(), false) // dss
		}
	}
	x.subscriptionsChanged() // dss

	x.trim(particle)
	return true
}

// set creates a topic address in the index and returns the final particle;
// the first d levels of topic are not part of it (a shared filter's
// $share/GROUP).
//
// dss: set, seek and the scans walk the topic once, level after level;
// they looked each level up by scanning the topic from its start again,
// so that a topic of n levels cost n² (a filter of 30,001 levels took
// seconds, under the index's lock).
func (x *TopicsIndex) set(topic string, d int) *particle {
	rest := skipLevels(topic, d)
	n := x.root
	for more := true; more; {
		var key string
		key, rest, more = nextLevel(rest)
		p := n.particles.get(key)
		if p == nil {
			p = newParticle(key, n)
			n.particles.add(p)
		}
		n = p
	}

	return n
}

// seek finds the particle at a specific index in a topic filter.
func (x *TopicsIndex) seek(filter string, d int) *particle {
	rest := skipLevels(filter, d)
	n := x.root
	for more := true; more; {
		var key string
		key, rest, more = nextLevel(rest)
		if n = n.particles.get(key); n == nil {
			return nil
		}
	}

	return n
}

// trim removes empty filter particles from the index.
func (x *TopicsIndex) trim(n *particle) {
	for n.parent != nil && n.retainPath == "" && n.particles.len()+n.subscriptions.Len()+n.shared.Len()+n.inlineSubscriptions.Len() == 0 {
		key := n.key
		n = n.parent
		n.particles.delete(key)
	}
}

// Messages returns a slice of any retained messages which match a filter.
func (x *TopicsIndex) Messages(filter string) []packets.Packet {
	topics := x.RetainedTopics(filter, nil)
	pks := make([]packets.Packet, 0, len(topics))
	for _, topic := range topics {
		if pk, ok := x.Retained.Get(topic); ok {
			pks = append(pks, pk)
		}
	}
	return pks
}

// RetainedTopics appends to out the topics of the retained messages that
// filter matches, and returns the result.
//
// dss: the topics, not copies of the messages: a subscriber to # of a
// server with a million retained messages got a slice of a million
// packets (800 bytes each) before the first was sent. Retained messages
// are sent one by one, each read when its turn comes (see
// retainedDelivery). A filter whose first level is a wildcard does not
// match topics that start with '$' [MQTT-4.7.2-1], and a filter that
// ends with /# matches its parent level too [MQTT-4.7.1-2].
func (x *TopicsIndex) RetainedTopics(filter string, out []string) []string {
	if len(filter) == 0 || x.Retained.Len() == 0 {
		return out
	}

	if !strings.ContainsAny(filter, "+#") {
		if x.Retained.Has(filter) {
			out = append(out, filter)
		}
		return out
	}

	return x.scanRetained(filter, x.root, out)
}

// scanRetained appends the retained topics under n that rest, what is
// left of the filter, matches.
func (x *TopicsIndex) scanRetained(rest string, n *particle, out []string) []string {
	first := n == x.root
	key, next, more := nextLevel(rest)
	switch key {
	case "#":
		if !first {
			out = appendRetained(out, n) // the parent level [MQTT-4.7.1-2]
		}
		return appendRetainedUnder(out, n, first)
	case "+":
		for _, child := range n.particles.getAll() {
			if first && strings.HasPrefix(child.key, "$") {
				continue // [MQTT-4.7.2-1]
			}
			if more {
				out = x.scanRetained(next, child, out)
			} else {
				out = appendRetained(out, child)
			}
		}
		return out
	}
	child := n.particles.get(key)
	switch {
	case child == nil:
		return out
	case more:
		return x.scanRetained(next, child, out)
	}
	return appendRetained(out, child)
}

// appendRetained appends the topic of n's retained message, if it has
// one.
func appendRetained(out []string, n *particle) []string {
	n.Lock()
	topic := n.retainPath
	n.Unlock()
	if topic != "" {
		out = append(out, topic)
	}
	return out
}

// appendRetainedUnder appends the topics of the retained messages below
// n, not n's own; from the root, not those that start with '$'.
func appendRetainedUnder(out []string, n *particle, root bool) []string {
	var stack []*particle
	for _, child := range n.particles.getAll() {
		if root && strings.HasPrefix(child.key, "$") {
			continue // [MQTT-4.7.2-1]
		}
		stack = append(stack, child)
	}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = appendRetained(out, p)
		stack = p.particles.appendTo(stack)
	}
	return out
}

// Subscribers returns a map of clients who are subscribed to matching filters,
// their subscription ids and highest qos.
//
// dss: its maps are made when they get an entry (nil otherwise), and the
// index's subscriptions are read in place: four empty maps and a copy of
// every matching level's subscriptions were most of a lookup's cost.
func (x *TopicsIndex) Subscribers(topic string) *Subscribers {
	return x.scanSubscribers(topic, topic, nil, &Subscribers{})
}

// scanSubscribers returns a list of client subscriptions matching an
// indexed topic address; rest is what is left of topic below n.
func (x *TopicsIndex) scanSubscribers(topic, rest string, n *particle, subs *Subscribers) *Subscribers {
	if n == nil {
		n = x.root
	}

	if len(topic) == 0 {
		return subs
	}

	key, next, hasNext := nextLevel(rest)
	for _, partKey := range [2]string{key, "+"} {
		if particle := n.particles.get(partKey); particle != nil { // [MQTT-3.3.2-3]
			if hasNext {
				x.scanSubscribers(topic, next, particle, subs)
			} else {
				x.gatherSubscriptions(topic, particle, subs)
				x.gatherSharedSubscriptions(particle, subs)
				x.gatherInlineSubscriptions(topic, particle, subs)

				// dss: +/# matches a as a/# does, and an inline
				// subscription to a/# matches a (upstream matched
				// neither: it left + out here, and gathered the inline
				// subscriptions of a instead of a/#'s).
				if wild := particle.particles.get("#"); wild != nil {
					x.gatherSubscriptions(topic, wild, subs) // also match any subs where filter/# is filter as per 4.7.1.2
					x.gatherSharedSubscriptions(wild, subs)
					x.gatherInlineSubscriptions(topic, wild, subs)
				}
			}
		}
	}

	if particle := n.particles.get("#"); particle != nil {
		x.gatherSubscriptions(topic, particle, subs)
		x.gatherSharedSubscriptions(particle, subs)
		x.gatherInlineSubscriptions(topic, particle, subs)
	}

	return subs
}

// gatherSubscriptions collects any matching subscriptions, and gathers any identifiers or highest qos values.
func (x *TopicsIndex) gatherSubscriptions(topic string, particle *particle, subs *Subscribers) {
	particle.subscriptions.each(func(client string, sub packets.Subscription) {
		if len(sub.Filter) > 0 && topic[0] == '$' && (sub.Filter[0] == '+' || sub.Filter[0] == '#') { // don't match $ topics with top level wildcards [MQTT-4.7.1-1] [MQTT-4.7.1-2]
			return
		}
		if subs.Subscriptions == nil {
			subs.Subscriptions = map[string]packets.Subscription{}
		}

		cls, ok := subs.Subscriptions[client]
		if !ok {
			cls = sub
		}

		subs.Subscriptions[client] = cls.Merge(sub)
	})
}

// gatherSharedSubscriptions gathers all shared subscriptions for a particle.
func (x *TopicsIndex) gatherSharedSubscriptions(particle *particle, subs *Subscribers) {
	if particle.shared.Len() == 0 {
		return
	}
	for _, shares := range particle.shared.GetAll() {
		for client, sub := range shares {
			if subs.Shared == nil {
				subs.Shared = map[string]map[string]packets.Subscription{}
			}
			if _, ok := subs.Shared[sub.Filter]; !ok {
				subs.Shared[sub.Filter] = map[string]packets.Subscription{}
			}

			subs.Shared[sub.Filter][client] = sub
		}
	}
}

// gatherSharedSubscriptions gathers all inline subscriptions for a particle.
//
// dss: topics that start with '$' are not matched by a filter whose
// first level is a wildcard, as for clients' subscriptions [MQTT-4.7.2-1].
func (x *TopicsIndex) gatherInlineSubscriptions(topic string, particle *particle, subs *Subscribers) {
	if particle.inlineSubscriptions.Len() == 0 {
		return
	}
	for id, inline := range particle.inlineSubscriptions.GetAll() {
		if f := inline.Filter; len(f) > 0 && topic[0] == '$' && (f[0] == '+' || f[0] == '#') {
			continue
		}
		if subs.InlineSubscriptions == nil {
			subs.InlineSubscriptions = map[int]InlineSubscription{}
		}
		subs.InlineSubscriptions[id] = inline
	}
}

// isolateParticle extracts a particle between d / and d+1 / without allocations.
func isolateParticle(filter string, d int) (particle string, hasNext bool) {
	var next, end int
	for i := 0; end > -1 && i <= d; i++ {
		end = strings.IndexRune(filter, '/')

		switch {
		case d > -1 && i == d && end > -1:
			hasNext = true
			particle = filter[next:end]
		case end > -1:
			hasNext = false
			filter = filter[end+1:]
		default:
			hasNext = false
			particle = filter[next:]
		}
	}

	return
}

// IsSharedFilter returns true if the filter uses the share prefix.
func IsSharedFilter(filter string) bool {
	prefix, _ := isolateParticle(filter, 0)
	return strings.EqualFold(prefix, SharePrefix)
}

// IsValidFilter returns true if the filter is valid.
func IsValidFilter(filter string, forPublish bool) bool {
	if forPublish {
		return validTopicName(filter)
	}
	if len(filter) == 0 {
		return false // [MQTT-4.7.3-1]
	}

	wildhash := strings.IndexRune(filter, '#')
	if wildhash >= 0 && wildhash != len(filter)-1 { // [MQTT-4.7.1-1]
		return false
	}

	if !wildcardsAlone(filter) {
		return false // [MQTT-4.7.1-1] [MQTT-4.7.1-2]
	}

	prefix, hasNext := isolateParticle(filter, 0)
	if !hasNext && strings.EqualFold(prefix, SharePrefix) {
		return false // [MQTT-4.8.2-1]
	}

	if hasNext && strings.EqualFold(prefix, SharePrefix) {
		group, hasNext := isolateParticle(filter, 1)
		if !hasNext {
			return false // [MQTT-4.8.2-1]
		}

		if group == "" { // dss: "a ShareName that is at least one character long"
			return false // [MQTT-4.8.2-1]
		}

		if strings.ContainsRune(group, '+') || strings.ContainsRune(group, '#') {
			return false // [MQTT-4.8.2-2]
		}
	}

	return true
}

// validTopicName tells whether a client may publish to name: one
// without wildcards [MQTT-3.3.2-2], not a $SYS topic (4.7.2: the server
// SHOULD prevent clients from exchanging messages on them) and not a
// shared subscription's prefix without a share name and a topic after
// it [MQTT-4.8.2-1]. The empty name is valid: a Topic Alias stands for
// the topic then.
//
// dss: every request goes through it, so a name that does not begin
// with '$' costs two byte searches.
func validTopicName(name string) bool {
	if packets.HasWildcard(name) {
		return false
	}
	if len(name) == 0 || name[0] != '$' {
		return true
	}
	if len(name) >= len(SysPrefix) && strings.EqualFold(name[:len(SysPrefix)], SysPrefix) {
		return false
	}
	prefix, hasGroup := isolateParticle(name, 0)
	if !strings.EqualFold(prefix, SharePrefix) {
		return true
	}
	group, hasTopic := isolateParticle(name, 1)
	return hasGroup && hasTopic && group != ""
}

// wildcardsAlone tells whether every wildcard of filter is a level of its
// own: "a/+/b" and "a/#", not "a+/b" or "a/b#". dss: upstream granted
// such filters, which match nothing a client can publish.
func wildcardsAlone(filter string) bool {
	start := 0
	for i := 0; i <= len(filter); i++ {
		if i < len(filter) && filter[i] != '/' {
			continue
		}
		if level := filter[start:i]; len(level) > 1 && strings.ContainsAny(level, "+#") {
			return false
		}
		start = i + 1
	}
	return true
}

// particle is a child node on the tree.
//
// dss: its sets of subscriptions are part of it rather than three
// objects of their own, made for every level (about 100 bytes a level).
type particle struct {
	key                 string              // the key of the particle
	parent              *particle           // a pointer to the parent of the particle
	particles           particles           // a map of child particles
	subscriptions       Subscriptions       // a map of subscriptions made by clients to this ending address
	shared              SharedSubscriptions // a map of shared subscriptions keyed on group name
	inlineSubscriptions InlineSubscriptions // a map of inline subscriptions for this particle
	retainPath          string              // path of a retained message
	sync.Mutex                              // mutex for when making changes to the particle
}

// newParticle returns a pointer to a new instance of particle.
//
// dss: its maps are made when something is first added to them: a level
// that only leads to the next held four empty maps, and the levels of a
// deep filter are mostly such.
func newParticle(key string, parent *particle) *particle {
	return &particle{key: key, parent: parent}
}

// particles is a concurrency safe map of particles.
//
// dss: a level with one child, as most levels of a deep filter are,
// holds it in one rather than in a map (about 250 bytes a level); the
// map is made for a second child.
type particles struct {
	internal map[string]*particle
	one      *particle // the only child, while internal is nil
	sync.RWMutex
}

// add adds a new particle.
func (p *particles) add(val *particle) {
	p.Lock()
	defer p.Unlock()
	switch {
	case p.internal != nil:
		p.internal[val.key] = val
	case p.one == nil || p.one.key == val.key:
		p.one = val
	default:
		p.internal = map[string]*particle{p.one.key: p.one, val.key: val}
		p.one = nil
	}
}

// getAll returns all particles.
func (p *particles) getAll() map[string]*particle {
	p.RLock()
	defer p.RUnlock()
	m := map[string]*particle{}
	if p.one != nil {
		m[p.one.key] = p.one
	}
	for k, v := range p.internal {
		m[k] = v
	}
	return m
}

// appendTo appends every particle to dst and returns the result.
func (p *particles) appendTo(dst []*particle) []*particle {
	p.RLock()
	defer p.RUnlock()
	if p.one != nil {
		dst = append(dst, p.one)
	}
	for _, v := range p.internal {
		dst = append(dst, v)
	}
	return dst
}

// get returns a particle by id (key).
func (p *particles) get(id string) *particle {
	p.RLock()
	defer p.RUnlock()
	if p.one != nil {
		if p.one.key == id {
			return p.one
		}
		return nil
	}
	return p.internal[id]
}

// len returns the number of particles.
func (p *particles) len() int {
	p.RLock()
	defer p.RUnlock()
	if p.one != nil {
		return 1
	}
	return len(p.internal)
}

// delete removes a particle.
func (p *particles) delete(id string) {
	p.Lock()
	defer p.Unlock()
	if p.one != nil {
		if p.one.key == id {
			p.one = nil
		}
		return
	}
	delete(p.internal, id)
}
